/* Stream-ordered memory: cuMemFreeAsync counts when issued. The default
 * pool keeps up to a release threshold cached, so the driver's own
 * per-call deltas differ from the sizes; the report follows the sizes. */
#include <stdint.h>

#include "gold_client.h"

int main(void)
{
    gold_start();
    CUmemoryPool pool;
    CHECK_CU(cuDeviceGetDefaultMemPool(&pool, 0));
    cuuint64_t threshold = 64 * MIB;
    CHECK_CU(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CUstream stream = NULL;
    CUdeviceptr a, b, c, d;
    CHECK_CU(cuMemAllocAsync(&a, 48 * MIB, stream));
    CHECK_CU(cuMemAllocAsync(&b, 16 * MIB, stream));
    CHECK_CU(cuMemFreeAsync(a, stream));            /* counted here */
    CHECK_CU(cuMemAllocAsync(&c, 40 * MIB, stream)); /* from the pool's cache */
    CHECK_CU(cuMemAllocAsync(&d, 20 * MIB, stream)); /* peak by sizes: 76 MiB */
    CHECK_CU(cuMemFreeAsync(c, stream));
    CHECK_CU(cuMemFreeAsync(b, stream));
    CHECK_CU(cuMemFreeAsync(d, stream));
    CHECK_CU(cuMemPoolTrimTo(pool, 0));
    gold_stop();
    return 0;
}
