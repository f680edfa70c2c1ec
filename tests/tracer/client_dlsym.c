/* Way in 2: dlopen("libcuda.so.1", RTLD_LOCAL) + dlsym of exact versioned
 * names. Hooked names must come back as our wrappers, others untouched. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "client_util.h"

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib);
    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)dlsym(lib, "cuInit");
    PFN_cuDevicePrimaryCtxRetain_v7000 retain =
        (PFN_cuDevicePrimaryCtxRetain_v7000)dlsym(lib, "cuDevicePrimaryCtxRetain");
    PFN_cuCtxSetCurrent_v4000 set_current = (PFN_cuCtxSetCurrent_v4000)dlsym(lib, "cuCtxSetCurrent");
    PFN_cuMemAlloc_v3020 alloc = (PFN_cuMemAlloc_v3020)dlsym(lib, "cuMemAlloc_v2");
    PFN_cuMemFree_v3020 mem_free = (PFN_cuMemFree_v3020)dlsym(lib, "cuMemFree_v2");
    PFN_cuMemAllocAsync_v11020_ptsz alloc_ptsz =
        (PFN_cuMemAllocAsync_v11020_ptsz)dlsym(lib, "cuMemAllocAsync_ptsz");
    PFN_cuMemFreeAsync_v11020_ptsz free_ptsz =
        (PFN_cuMemFreeAsync_v11020_ptsz)dlsym(lib, "cuMemFreeAsync_ptsz");
    PFN_cuMemGetInfo_v3020 info = (PFN_cuMemGetInfo_v3020)dlsym(lib, "cuMemGetInfo_v2");
    CHECK(init && retain && set_current && alloc && mem_free && alloc_ptsz && free_ptsz && info);

    /* hooked variants: our wrappers; the rest: the driver's own */
    CHECK(lives_in((void *)alloc, "libvramtrace"));
    CHECK(lives_in((void *)mem_free, "libvramtrace"));
    CHECK(lives_in((void *)alloc_ptsz, "libvramtrace"));
    CHECK(lives_in((void *)retain, "libvramtrace"));
    CHECK(lives_in((void *)init, "libcuda"));
    CHECK(lives_in((void *)info, "libcuda"));
    /* the same name twice: the same answer */
    CHECK(dlsym(lib, "cuMemAlloc_v2") == (void *)alloc);
    /* RTLD_NEXT still works from the program, repeatedly */
    CHECK(dlsym(RTLD_NEXT, "malloc") != NULL);
    CHECK(dlsym(RTLD_NEXT, "malloc") != NULL);
    CHECK(dlsym(lib, "no_such_function") == NULL);

    CUcontext ctx;
    CUdeviceptr a = 0, b = 0;
    CHECK_CU(init(0));
    CHECK_CU(retain(&ctx, 0));
    CHECK_CU(set_current(ctx));
    CHECK_CU(alloc(&a, 7 << 20));
    CHECK_CU(alloc_ptsz(&b, 1 << 20, NULL));
    CHECK_CU(free_ptsz(b, NULL));
    CHECK_CU(mem_free(a));
    return 0;
}
