/* Stream-ordered allocation and pools: default and created pools, the
 * release threshold keeping freed bytes reserved, cuMemPoolTrimTo, the
 * _ptsz variants, and the ledger's pool_release lines. */
#include "sim_test.h"
#include "sim_test_context.h"

#include <cuda.h>
#include <stdlib.h>

static char *ledger_path;

/* The per-thread-stream exports, declared by cuda.h only for
 * CUDA_API_PER_THREAD_DEFAULT_STREAM builds: -lcuda callers link them by name. */
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream stream);

static size_t free_now(void)
{
    size_t f = 0;
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);
    return f;
}

static void test_default_pool_releases_at_once(void **state)
{
    (void)state;
    size_t f0 = free_now();
    CUdeviceptr p = 0;
    assert_int_equal(cuMemAllocAsync(&p, 10 * MiB, NULL), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 10 * MiB);
    CUmemoryPool def = NULL, cur = NULL, owner = NULL;
    assert_int_equal(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
    assert_ptr_equal(def, cur);
    assert_int_equal(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p), CUDA_SUCCESS);
    assert_ptr_equal(owner, def);
    assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);  /* threshold 0 */
    assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr big;
    assert_int_equal(cuMemAllocAsync_ptsz(&big, 2 * GiB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(free_now(), f0);
}

static void test_threshold_keeps_memory_until_trim(void **state)
{
    (void)state;
    CUmemoryPool pool;
    CUmemPoolProps props = { 0 };
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    assert_int_equal(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
    cuuint64_t threshold = 64 * MiB;
    assert_int_equal(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold), CUDA_SUCCESS);
    size_t f0 = free_now();
    CUdeviceptr a, b;
    assert_int_equal(cuMemAllocFromPoolAsync(&a, 32 * MiB, pool, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync_ptsz(a, NULL), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 32 * MiB);  /* cached under the threshold */
    cuuint64_t reserved = 0, used = 1;
    assert_int_equal(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved), CUDA_SUCCESS);
    assert_int_equal(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used), CUDA_SUCCESS);
    assert_int_equal(reserved, 32 * MiB);
    assert_int_equal(used, 0);
    /* Served from the cache: no new device memory. */
    assert_int_equal(cuMemAllocFromPoolAsync_ptsz(&b, 16 * MiB, pool, NULL), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 32 * MiB);
    /* cuDeviceSetMemPool routes cuMemAllocAsync to this pool. */
    assert_int_equal(cuDeviceSetMemPool(0, pool), CUDA_SUCCESS);
    CUdeviceptr c;
    assert_int_equal(cuMemAllocAsync(&c, 16 * MiB, NULL), CUDA_SUCCESS);
    CUmemoryPool owner = NULL;
    assert_int_equal(cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, c), CUDA_SUCCESS);
    assert_ptr_equal(owner, pool);
    assert_int_equal(free_now(), f0 - 32 * MiB);
    assert_int_equal(cuMemFreeAsync(b, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync(c, NULL), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0 - 32 * MiB);
    assert_int_equal(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    const char *last = NULL;
    for (size_t i = 0; i < l.count; i++)
        if (vtsim_ledger_is(l.lines[i], "pool_release", NULL))
            last = l.lines[i];
    assert_non_null(last);
    assert_int_equal(vtsim_ledger_num(last, "delta", 0), -(long long)(32 * MiB));
    assert_int_equal(vtsim_ledger_sum_delta(&l, 0), 256 * MiB);  /* the context only */
    vtsim_ledger_free(&l);

    CUmemoryPool def;
    assert_int_equal(cuDeviceGetDefaultMemPool(&def, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemPoolDestroy(def), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemPoolDestroy(pool), CUDA_SUCCESS);
    CUmemoryPool cur;
    assert_int_equal(cuDeviceGetMemPool(&cur, 0), CUDA_SUCCESS);
    assert_ptr_equal(cur, def);
}

int main(void)
{
    setenv("VTSIM_MEMORY", "1GiB", 1);
    setenv("VTSIM_CONTEXT_BYTES", "256MiB", 1);
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_pool_releases_at_once),
        cmocka_unit_test(test_threshold_keeps_memory_until_trim),
    };
    int failed = cmocka_run_group_tests(tests, simtest_primary_context, NULL);
    unlink(ledger_path);
    return failed;
}
