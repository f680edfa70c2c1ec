/* The simulated runtime (the real runtime's start-up sequence): cudaMalloc &
 * co are labels, the driver-level hooks count; VMM functions come from
 * cudaGetDriverEntryPointByVersion(name, 12000) as PyTorch gets them. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "client_util.h"

static void *entry(const char *name)
{
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult status;
    CHECK(cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &status) == cudaSuccess);
    CHECK(fn && status == cudaDriverEntryPointSuccess);
    CHECK(lives_in(fn, "libvramtrace"));
    return fn;
}

int main(void)
{
    void *a = NULL, *b = NULL, *m = NULL, *h = NULL, *big = NULL;
    CHECK(cudaSetDevice(0) == cudaSuccess);
    CHECK(cudaMalloc(&a, 1 << 20) == cudaSuccess);
    CHECK(cudaMalloc(&big, (size_t)1 << 50) != cudaSuccess);
    CHECK(cudaMallocAsync(&b, 2 << 20, NULL) == cudaSuccess);
    CHECK(cudaMallocManaged(&m, 1 << 20, cudaMemAttachGlobal) == cudaSuccess);
    CHECK(cudaMallocHost(&h, 4096) == cudaSuccess);
    CHECK(cudaFreeHost(h) == cudaSuccess);
    CHECK(cudaFree(m) == cudaSuccess);
    CHECK(cudaFreeAsync(b, NULL) == cudaSuccess);
    CHECK(cudaFree(a) == cudaSuccess);

    PFN_cuMemAddressReserve_v10020 reserve = entry("cuMemAddressReserve");
    PFN_cuMemCreate_v10020 create = entry("cuMemCreate");
    PFN_cuMemMap_v10020 map = entry("cuMemMap");
    PFN_cuMemUnmap_v10020 unmap = entry("cuMemUnmap");
    PFN_cuMemRelease_v10020 release = entry("cuMemRelease");
    PFN_cuMemAddressFree_v10020 address_free = entry("cuMemAddressFree");
    CUmemAllocationProp prop = { 0 };
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    const size_t gran = 2u << 20;
    CUdeviceptr va = 0;
    CUmemGenericAllocationHandle handle;
    CHECK_CU(reserve(&va, 8 * gran, 0, 0, 0));
    CHECK_CU(create(&handle, 4 * gran, &prop, 0));
    CHECK_CU(map(va, 4 * gran, 0, handle, 0));
    CHECK_CU(unmap(va, 4 * gran));
    CHECK_CU(release(handle));
    CHECK_CU(address_free(va, 8 * gran));
    return 0;
}
