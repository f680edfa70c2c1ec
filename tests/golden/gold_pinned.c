/* Scenario 6: pinned host memory (cuMemHostAlloc, cuMemAllocHost,
 * cuMemHostRegister) interleaved with device and managed memory: each
 * category has a peak of its own, at a different moment. */
#include <stdlib.h>

#include "gold_client.h"

int main(void)
{
    gold_start();
    void *staging = NULL, *pinned = NULL, *more = NULL;
    CUdeviceptr d1, d2, m1, m2;
    CHECK_CU(cuMemHostAlloc(&staging, 8 * MIB, CU_MEMHOSTALLOC_PORTABLE));
    CHECK_CU(cuMemAlloc(&d1, 64 * MIB));
    CHECK_CU(cuMemAllocHost(&pinned, 3 * MIB));
    size_t region_size = 2 * MIB;
    void *region = aligned_alloc(4096, region_size);
    CHECK(region);
    CHECK_CU(cuMemHostRegister(region, region_size, 0));   /* host peak: 13 MiB */
    CHECK_CU(cuMemFreeHost(staging));
    CHECK_CU(cuMemAlloc(&d2, 32 * MIB));                   /* device peak: 96 MiB */
    CHECK_CU(cuMemAllocManaged(&m1, 5 * MIB, CU_MEM_ATTACH_GLOBAL));
    CHECK_CU(cuMemAllocHost(&more, 1 * MIB));
    CHECK_CU(cuMemAllocManaged(&m2, 7 * MIB, CU_MEM_ATTACH_GLOBAL)); /* managed peak */
    CHECK_CU(cuMemFree(m1));
    CHECK_CU(cuMemFree(d1));
    CHECK_CU(cuMemHostUnregister(region));
    CHECK_CU(cuMemFreeHost(pinned));
    CHECK_CU(cuMemFreeHost(more));
    CHECK_CU(cuMemFree(d2));
    CHECK_CU(cuMemFree(m2));
    free(region);
    gold_stop();
    return 0;
}
