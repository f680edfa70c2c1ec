/* VMM: physical memory (cuMemCreate) is returned only when its handle is
 * released AND unmapped. Here a handle released while still mapped keeps
 * its memory until the unmap, and a second handle is created meanwhile:
 * the physical peak holds both. */
#include <stdint.h>

#include "gold_client.h"

static CUmemGenericAllocationHandle create(size_t bytes)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h;
    CHECK_CU(cuMemCreate(&h, bytes, &prop, 0));
    return h;
}

int main(void)
{
    gold_start();
    const size_t gran = 2 * MIB;
    CUdeviceptr va;
    CHECK_CU(cuMemAddressReserve(&va, 64 * gran, 0, 0, 0));
    CUmemGenericAllocationHandle h1 = create(16 * gran);
    CHECK_CU(cuMemMap(va, 16 * gran, 0, h1, 0));
    CHECK_CU(cuMemRelease(h1));                  /* still mapped: still held */
    CUmemGenericAllocationHandle h2 = create(8 * gran);
    CHECK_CU(cuMemMap(va + 16 * gran, 8 * gran, 0, h2, 0));   /* physical peak: 48 MiB */
    CHECK_CU(cuMemUnmap(va, 16 * gran));          /* h1's memory returns here */
    CUmemGenericAllocationHandle h3 = create(4 * gran);
    CHECK_CU(cuMemRelease(h3));                   /* never mapped: returns at once */
    CHECK_CU(cuMemUnmap(va + 16 * gran, 8 * gran));
    CHECK_CU(cuMemRelease(h2));
    CHECK_CU(cuMemAddressFree(va, 64 * gran));
    gold_stop();
    return 0;
}
