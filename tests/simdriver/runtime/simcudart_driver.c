/* Start-up: finds the driver exactly as the real CUDA 13 runtime does -
 * dlopen("libcuda.so.1"), ONE dlsym of cuGetProcAddress_v2, the ("", 0, 0)
 * probe, cuGetProcAddress itself at 11030 and 12000, then every other driver
 * function by base name and minimum version through the pointer it got back. */
#define _GNU_SOURCE
#include "simcudart_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

static struct simcudart_driver driver;
static cudaError_t load_error = cudaErrorInitializationError;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static cudaError_t resolve_all(PFN_cuGetProcAddress_v12000 gpa)
{
    CUdriverProcAddressQueryResult status;
    void *fn = NULL;
    /* Probe: a driver that knows cuGetProcAddress_v2 answers NOT_FOUND. */
    gpa("", &fn, 0, 0, &status);
    void *v1 = NULL, *v2 = NULL;
    if (gpa("cuGetProcAddress", &v1, 11030, 0, &status) != CUDA_SUCCESS ||
        gpa("cuGetProcAddress", &v2, 12000, 0, &status) != CUDA_SUCCESS || !v2)
        return cudaErrorInsufficientDriver;
    driver.get_proc_address = (PFN_cuGetProcAddress_v12000)v2;
#define SIMCUDART_RESOLVE(field, name, version, flags, type)                             \
    fn = NULL;                                                                           \
    if (driver.get_proc_address(name, &fn, version, flags, &status) != CUDA_SUCCESS || !fn) \
        return cudaErrorSymbolNotFound;                                                  \
    driver.field = (type)fn;
    SIMCUDART_DRIVER_FUNCTIONS(SIMCUDART_RESOLVE)
#undef SIMCUDART_RESOLVE
    return cudaSuccess;
}

static void load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    if (!gpa) {
        load_error = cudaErrorInsufficientDriver;
        return;
    }
    load_error = resolve_all(gpa);
    if (load_error == cudaSuccess)
        load_error = simcudart_error_from(driver.init(0));
}

cudaError_t simcudart_driver_load(const struct simcudart_driver **out)
{
    pthread_once(&load_once, load);
    *out = &driver;
    return load_error;
}
