/* Way in 1: a program linked with -lcuda calls the exported versioned names.
 * Covers the classic, pitch, managed, failed, pinned host, registered host,
 * VMM, pool and context entry points. */
#include <cuda.h>
#include <stdint.h>

#include "client_util.h"

/* Not declared by cuda.h without per-thread default stream. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);

int main(void)
{
    CUcontext primary, created;
    CUdeviceptr a = 0, b = 0, m = 0, big = 0, pa = 0, pb = 0, pc = 0;
    size_t pitch = 0;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&primary, 0));
    CHECK_CU(cuCtxSetCurrent(primary));

    CHECK_CU(cuMemAlloc(&a, 3 << 20));
    CHECK_CU(cuMemAllocPitch(&b, &pitch, 1000, 33, 4));
    CHECK_CU(cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL));
    CHECK(cuMemAlloc(&big, (size_t)1 << 50) == CUDA_ERROR_OUT_OF_MEMORY);
    CHECK(cuMemFree(0x1234) != CUDA_SUCCESS);   /* unknown pointer: passed through */
    CHECK_CU(cuMemFree(m));
    CHECK_CU(cuMemFree(b));

    void *host = NULL, *host2 = NULL;
    CHECK_CU(cuMemHostAlloc(&host, 4096, 0));
    CHECK_CU(cuMemAllocHost(&host2, 8192));
    static char buffer[1 << 16];
    CHECK_CU(cuMemHostRegister(buffer, sizeof buffer, 0));
    CHECK_CU(cuMemHostUnregister(buffer));
    CHECK_CU(cuMemFreeHost(host2));
    CHECK_CU(cuMemFreeHost(host));

    /* VMM: reserve, create, map, unmap, release, free */
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    CHECK_CU(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    CHECK_CU(cuMemCreate(&h, 2 * gran, &prop, 0));
    CHECK_CU(cuMemMap(va, 2 * gran, 0, h, 0));
    CUmemGenericAllocationHandle again;
    CHECK_CU(cuMemRetainAllocationHandle(&again, (void *)(uintptr_t)va));
    CHECK_CU(cuMemRelease(again));
    CHECK_CU(cuMemUnmap(va, 2 * gran));
    CHECK_CU(cuMemRelease(h));
    CHECK_CU(cuMemAddressFree(va, 4 * gran));

    /* stream-ordered, both default-stream flavours, and a pool */
    CUmemoryPool pool;
    CUmemPoolProps pprops = { 0 };
    pprops.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pprops.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pprops.location.id = 0;
    CHECK_CU(cuMemPoolCreate(&pool, &pprops));
    CHECK_CU(cuMemAllocAsync(&pa, 1 << 20, NULL));
    CHECK_CU(cuMemAllocAsync_ptsz(&pb, 2 << 20, NULL));
    CHECK_CU(cuMemAllocFromPoolAsync(&pc, 5 << 20, pool, NULL));
    CHECK_CU(cuMemFreeAsync(pc, NULL));
    CHECK_CU(cuMemFreeAsync_ptsz(pb, NULL));
    CHECK_CU(cuMemFreeAsync(pa, NULL));
    CHECK_CU(cuMemPoolDestroy(pool));

    CHECK_CU(cuCtxCreate(&created, NULL, 0, 0));
    CHECK_CU(cuCtxDestroy(created));
    CHECK_CU(cuCtxSetCurrent(primary));
    CHECK_CU(cuMemFree(a));
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    /* the exported wrappers are what this program called */
    CHECK(lives_in((void *)&cuMemAlloc_v2, "libvramtrace"));
    return 0;
}
