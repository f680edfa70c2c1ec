/* Way in 3: cuGetProcAddress (v1, 4 arguments) and cuGetProcAddress_v2
 * (5 arguments), flags 0 and 2 (_ptsz), as the CUDA runtime does it. */
#include <cuda.h>
#include <cudaTypedefs.h>

#include "client_util.h"

#define PTSZ CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

static PFN_cuGetProcAddress_v12000 gpa2;
static PFN_cuGetProcAddress_v11030 gpa1;

static void *get2(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK_CU(gpa2(name, &fn, version, flags, &status));
    CHECK(status == CU_GET_PROC_ADDRESS_SUCCESS && fn);
    return fn;
}

static void *get1(const char *name, int version, cuuint64_t flags)
{
    void *fn = NULL;
    CHECK_CU(gpa1(name, &fn, version, flags));
    CHECK(fn);
    return fn;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CHECK(lib);
    gpa2 = (PFN_cuGetProcAddress_v12000)dlsym(lib, "cuGetProcAddress_v2");
    CHECK(gpa2 && lives_in((void *)gpa2, "libvramtrace"));
    /* probe, then cuGetProcAddress itself at both versions */
    void *none = NULL;
    CUdriverProcAddressQueryResult status;
    CHECK(gpa2("", &none, 0, 0, &status) != CUDA_SUCCESS || none == NULL);
    gpa1 = (PFN_cuGetProcAddress_v11030)get2("cuGetProcAddress", 11030, 0);
    void *gpa2_again = get2("cuGetProcAddress", 12000, 0);
    CHECK(lives_in((void *)gpa1, "libvramtrace") && lives_in(gpa2_again, "libvramtrace"));
    CHECK((void *)gpa1 != gpa2_again); /* different argument counts */

    PFN_cuInit_v2000 init = (PFN_cuInit_v2000)get2("cuInit", 2000, 0);
    PFN_cuDevicePrimaryCtxRetain_v7000 retain = get2("cuDevicePrimaryCtxRetain", 7000, 0);
    PFN_cuDevicePrimaryCtxRelease_v11000 release = get1("cuDevicePrimaryCtxRelease", 7000, 0);
    PFN_cuCtxSetCurrent_v4000 set_current = get1("cuCtxSetCurrent", 4000, 0);
    PFN_cuMemAlloc_v3020 alloc = get1("cuMemAlloc", 3020, 0);
    PFN_cuMemFree_v3020 mem_free = get2("cuMemFree", 12000, 0);
    PFN_cuMemAllocAsync_v11020 alloc_async = get2("cuMemAllocAsync", 11020, 0);
    PFN_cuMemAllocAsync_v11020_ptsz alloc_async_ptsz = get2("cuMemAllocAsync", 11020, PTSZ);
    PFN_cuMemFreeAsync_v11020 free_async = get1("cuMemFreeAsync", 11020, 0);
    PFN_cuMemFreeAsync_v11020_ptsz free_async_ptsz = get1("cuMemFreeAsync", 11020, PTSZ);
    PFN_cuMemHostAlloc_v2020 host_alloc = get2("cuMemHostAlloc", 2020, 0);
    PFN_cuMemFreeHost_v2000 free_host = get2("cuMemFreeHost", 2000, 0);
    void *export_table = get2("cuGetExportTable", 3000, 0);
    void *mem_info = get2("cuMemGetInfo", 3020, 0);

    CHECK(lives_in((void *)alloc, "libvramtrace") && lives_in((void *)mem_free, "libvramtrace"));
    CHECK(lives_in((void *)release, "libvramtrace"));
    CHECK(lives_in((void *)alloc_async, "libvramtrace") &&
          lives_in((void *)alloc_async_ptsz, "libvramtrace"));
    CHECK((void *)alloc_async != (void *)alloc_async_ptsz);
    CHECK((void *)free_async != (void *)free_async_ptsz);
    /* not hooked: exactly the driver's */
    CHECK(lives_in(export_table, "libcuda") && lives_in(mem_info, "libcuda"));
    CHECK(lives_in((void *)init, "libcuda"));

    CUcontext ctx;
    CUdeviceptr a = 0, b = 0, c = 0;
    void *host = NULL;
    CHECK_CU(init(0));
    CHECK_CU(retain(&ctx, 0));
    CHECK_CU(set_current(ctx));
    CHECK_CU(alloc(&a, 1 << 20));
    CHECK_CU(alloc_async(&b, 3 << 20, NULL));
    CHECK_CU(alloc_async_ptsz(&c, 5 << 20, NULL));
    CHECK_CU(host_alloc(&host, 1 << 16, 0));
    CHECK_CU(free_host(host));
    CHECK_CU(free_async_ptsz(c, NULL));
    CHECK_CU(free_async(b, NULL));
    CHECK_CU(mem_free(a));
    CHECK_CU(release(0));
    return 0;
}
