/* A second interposer, as other tools write them: it defines cuMemAlloc_v2
 * and forwards with dlsym(RTLD_NEXT, ...). Loaded before or after
 * libvramtrace.so, its RTLD_NEXT must answer relative to ITSELF. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

__attribute__((visibility("default"))) int stacked_calls;
__attribute__((visibility("default"))) void *stacked_next;

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    PFN_cuMemAlloc_v3020 next = (PFN_cuMemAlloc_v3020)dlsym(RTLD_NEXT, "cuMemAlloc_v2");
    stacked_next = (void *)next;
    stacked_calls++;
    return next ? next(dptr, bytesize) : CUDA_ERROR_NOT_INITIALIZED;
}

/* the "NULL on a repeated call" failure of other interposers */
__attribute__((visibility("default"))) int stacked_next_malloc_twice(void)
{
    return dlsym(RTLD_NEXT, "malloc") != NULL && dlsym(RTLD_NEXT, "malloc") != NULL;
}
