/* Internals of the simulated CUDA runtime (libsimcudart.so, and the private
 * copy linked into libprivrt_user.so).  Like the real runtime it links no
 * driver symbol: every driver function comes through cuGetProcAddress. */
#ifndef SIMCUDART_INTERNAL_H
#define SIMCUDART_INTERNAL_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

/* The private build (SIMCUDART_PRIVATE) exports nothing: it stands in for the
 * runtime copies NCCL and cuBLAS carry inside themselves. */
#ifdef SIMCUDART_PRIVATE
#define SIMCUDART_API
#else
#define SIMCUDART_API __attribute__((visibility("default")))
#endif

#define SIMCUDART_VERSION 13000

/* The driver functions this runtime uses: field, name asked, version, flags,
 * PFN type.  Looked up in this order after the cuGetProcAddress self look-ups,
 * exactly as the real runtime asks (name + minimum version, flags 2 for the
 * per-thread-default-stream variants). */
#define SIMCUDART_DRIVER_FUNCTIONS(X)                                                  \
    X(init, "cuInit", 2000, 0, PFN_cuInit_v2000)                                      \
    X(device_get, "cuDeviceGet", 2000, 0, PFN_cuDeviceGet_v2000)                      \
    X(device_get_count, "cuDeviceGetCount", 2000, 0, PFN_cuDeviceGetCount_v2000)      \
    X(primary_retain, "cuDevicePrimaryCtxRetain", 7000, 0, PFN_cuDevicePrimaryCtxRetain_v7000) \
    X(primary_release, "cuDevicePrimaryCtxRelease", 11000, 0, PFN_cuDevicePrimaryCtxRelease_v11000) \
    X(ctx_set_current, "cuCtxSetCurrent", 4000, 0, PFN_cuCtxSetCurrent_v4000)         \
    X(ctx_get_current, "cuCtxGetCurrent", 4000, 0, PFN_cuCtxGetCurrent_v4000)         \
    X(mem_get_info, "cuMemGetInfo", 3020, 0, PFN_cuMemGetInfo_v3020)                  \
    X(mem_alloc_managed, "cuMemAllocManaged", 6000, 0, PFN_cuMemAllocManaged_v6000)   \
    X(mem_alloc, "cuMemAlloc", 3020, 0, PFN_cuMemAlloc_v3020)                         \
    X(mem_free, "cuMemFree", 3020, 0, PFN_cuMemFree_v3020)                            \
    X(mem_free_host, "cuMemFreeHost", 2000, 0, PFN_cuMemFreeHost_v2000)               \
    X(mem_host_alloc, "cuMemHostAlloc", 2020, 0, PFN_cuMemHostAlloc_v2020)            \
    X(mem_alloc_async, "cuMemAllocAsync", 11020, 0, PFN_cuMemAllocAsync_v11020)       \
    X(mem_alloc_async_ptsz, "cuMemAllocAsync", 11020, 2, PFN_cuMemAllocAsync_v11020_ptsz) \
    X(mem_free_async, "cuMemFreeAsync", 11020, 0, PFN_cuMemFreeAsync_v11020)          \
    X(mem_free_async_ptsz, "cuMemFreeAsync", 11020, 2, PFN_cuMemFreeAsync_v11020_ptsz)

struct simcudart_driver {
    PFN_cuGetProcAddress_v12000 get_proc_address;   /* from the self look-up */
#define SIMCUDART_FIELD(field, name, version, flags, type) type field;
    SIMCUDART_DRIVER_FUNCTIONS(SIMCUDART_FIELD)
#undef SIMCUDART_FIELD
};

/* Loads the driver once; cudaSuccess or why the runtime cannot start. */
cudaError_t simcudart_driver_load(const struct simcudart_driver **out);
/* Makes the calling thread's device's primary context current (retained
 * lazily, once per device, as the real runtime does). */
cudaError_t simcudart_bind_context(const struct simcudart_driver **out);
int simcudart_current_device(void);
void simcudart_set_current_device(int dev);
cudaError_t simcudart_error_from(CUresult r);

#endif
