/* The runtime's device selection: a per-thread current device, and each
 * device's primary context retained on first use and made current. */
#define _GNU_SOURCE
#include "simcudart_internal.h"

#include <pthread.h>

#define MAX_DEVICES 16

static pthread_mutex_t retain_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MAX_DEVICES];
static __thread int current_device;

int simcudart_current_device(void) { return current_device; }

void simcudart_set_current_device(int dev)
{
    current_device = dev;
}

static cudaError_t retain_primary(const struct simcudart_driver *d, int dev, CUcontext *ctx)
{
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&retain_lock);
    if (!primary[dev]) {
        CUdevice device;
        r = d->device_get(&device, dev);
        if (r == CUDA_SUCCESS)
            r = d->primary_retain(&primary[dev], device);
    }
    *ctx = primary[dev];
    pthread_mutex_unlock(&retain_lock);
    return simcudart_error_from(r);
}

cudaError_t simcudart_bind_context(const struct simcudart_driver **out)
{
    cudaError_t e = simcudart_driver_load(out);
    if (e != cudaSuccess)
        return e;
    int dev = current_device;
    if (dev < 0 || dev >= MAX_DEVICES)
        return cudaErrorInvalidDevice;
    CUcontext ctx;
    e = retain_primary(*out, dev, &ctx);
    /* Asked every time: the program may have changed it through the driver. */
    CUcontext now = NULL;
    if (e == cudaSuccess && ((*out)->ctx_get_current(&now) != CUDA_SUCCESS || now != ctx))
        e = simcudart_error_from((*out)->ctx_set_current(ctx));
    return e;
}
