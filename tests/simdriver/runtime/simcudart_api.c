/* The runtime API calls the simulation offers, each a thin layer over the
 * driver pointers obtained at start-up. */
#define _GNU_SOURCE
#include "simcudart_internal.h"

#include <stdint.h>

SIMCUDART_API cudaError_t cudaGetDeviceCount(int *count)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_driver_load(&d);
    if (e != cudaSuccess)
        return e;
    if (!count)
        return cudaErrorInvalidValue;
    e = simcudart_error_from(d->device_get_count(count));
    return e == cudaSuccess && *count == 0 ? cudaErrorNoDevice : e;
}

SIMCUDART_API cudaError_t cudaSetDevice(int device)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess)
        return e;
    if (device < 0 || device >= count)
        return cudaErrorInvalidDevice;
    simcudart_set_current_device(device);
    const struct simcudart_driver *d;
    return simcudart_bind_context(&d);  /* CUDA 12+: cudaSetDevice initialises the context */
}

SIMCUDART_API cudaError_t cudaGetDevice(int *device)
{
    if (!device)
        return cudaErrorInvalidValue;
    *device = simcudart_current_device();
    return cudaSuccess;
}

SIMCUDART_API cudaError_t cudaMalloc(void **ptr, size_t size)
{
    const struct simcudart_driver *d;
    cudaError_t e = ptr ? simcudart_bind_context(&d) : cudaErrorInvalidValue;
    if (e != cudaSuccess)
        return e;
    if (size == 0) {  /* the runtime answers a zero-byte request itself */
        *ptr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr p = 0;
    e = simcudart_error_from(d->mem_alloc(&p, size));
    *ptr = e == cudaSuccess ? (void *)(uintptr_t)p : NULL;
    return e;
}

SIMCUDART_API cudaError_t cudaFree(void *ptr)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);  /* cudaFree(0) creates the context */
    if (e != cudaSuccess || !ptr)
        return e;
    return simcudart_error_from(d->mem_free((CUdeviceptr)(uintptr_t)ptr));
}

static cudaError_t malloc_async(PFN_cuMemAllocAsync_v11020 fn, void **ptr, size_t size,
                                cudaStream_t stream)
{
    if (!ptr)
        return cudaErrorInvalidValue;
    CUdeviceptr p = 0;
    cudaError_t e = simcudart_error_from(fn(&p, size, (CUstream)stream));
    *ptr = e == cudaSuccess ? (void *)(uintptr_t)p : NULL;
    return e;
}

SIMCUDART_API cudaError_t cudaMallocAsync(void **ptr, size_t size, cudaStream_t stream)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    return e != cudaSuccess ? e : malloc_async(d->mem_alloc_async, ptr, size, stream);
}

SIMCUDART_API cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    return e != cudaSuccess ? e : malloc_async(d->mem_alloc_async_ptsz, ptr, size, stream);
}

SIMCUDART_API cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    if (e != cudaSuccess)
        return e;
    return simcudart_error_from(d->mem_free_async((CUdeviceptr)(uintptr_t)ptr, (CUstream)stream));
}

SIMCUDART_API cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    if (e != cudaSuccess)
        return e;
    return simcudart_error_from(d->mem_free_async_ptsz((CUdeviceptr)(uintptr_t)ptr, (CUstream)stream));
}

SIMCUDART_API cudaError_t cudaHostAlloc(void **ptr, size_t size, unsigned int flags)
{
    const struct simcudart_driver *d;
    cudaError_t e = ptr ? simcudart_bind_context(&d) : cudaErrorInvalidValue;
    if (e != cudaSuccess)
        return e;
    return simcudart_error_from(d->mem_host_alloc(ptr, size, flags));
}

SIMCUDART_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, cudaHostAllocDefault);
}

SIMCUDART_API cudaError_t cudaFreeHost(void *ptr)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    if (e != cudaSuccess)
        return e;
    return simcudart_error_from(d->mem_free_host(ptr));
}

SIMCUDART_API cudaError_t cudaMallocManaged(void **ptr, size_t size, unsigned int flags)
{
    const struct simcudart_driver *d;
    cudaError_t e = ptr ? simcudart_bind_context(&d) : cudaErrorInvalidValue;
    if (e != cudaSuccess)
        return e;
    CUdeviceptr p = 0;
    e = simcudart_error_from(d->mem_alloc_managed(&p, size, flags));
    *ptr = e == cudaSuccess ? (void *)(uintptr_t)p : NULL;
    return e;
}

SIMCUDART_API cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_bind_context(&d);
    if (e != cudaSuccess)
        return e;
    return simcudart_error_from(d->mem_get_info(free_bytes, total_bytes));
}

/* Both answer through the cuGetProcAddress pointer cached at start-up, as the
 * real runtime does (PyTorch gets cuMemCreate & co this way). */
SIMCUDART_API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                                          unsigned int version,
                                                          unsigned long long flags,
                                                          enum cudaDriverEntryPointQueryResult *status)
{
    const struct simcudart_driver *d;
    cudaError_t e = simcudart_driver_load(&d);
    if (e != cudaSuccess)
        return e;
    if (!symbol || !fn)
        return cudaErrorInvalidValue;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = d->get_proc_address(symbol, fn, (int)version, flags, &st);
    if (status)
        *status = st == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess
                : st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaDriverEntryPointVersionNotSufficent
                : cudaDriverEntryPointSymbolNotFound;
    /* Like the real runtime: a symbol that is not there is reported through
     * status, not as an error of the call. */
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND ? cudaSuccess : simcudart_error_from(r);
}

SIMCUDART_API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn,
                                                 unsigned long long flags,
                                                 enum cudaDriverEntryPointQueryResult *status)
{
    return cudaGetDriverEntryPointByVersion(symbol, fn, SIMCUDART_VERSION, flags, status);
}
