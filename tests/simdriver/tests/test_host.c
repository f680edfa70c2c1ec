/* Pinned host memory and managed memory: real, touchable host memory,
 * recorded with its kind; pinned memory costs no device memory. */
#include "sim_test.h"
#include "sim_test_context.h"

#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path;

static size_t free_now(void)
{
    size_t f = 0;
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);
    return f;
}

static void test_pinned_host(void **state)
{
    (void)state;
    size_t f0 = free_now();
    void *a = NULL, *b = NULL;
    assert_int_equal(cuMemHostAlloc(&a, 1 << 20, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
    assert_int_equal(cuMemAllocHost(&b, 4096), CUDA_SUCCESS);
    memset(a, 0xab, 1 << 20);  /* programs touch it */
    memset(b, 0xcd, 4096);
    assert_int_equal(free_now(), f0);
    CUmemorytype type = 0;
    assert_int_equal(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)a + 10),
                     CUDA_SUCCESS);
    assert_int_equal(type, CU_MEMORYTYPE_HOST);

    char *buf = malloc(8192);
    assert_int_equal(cuMemHostRegister(buf, 8192, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemHostRegister(buf, 8192, 0), CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    CUdeviceptr dp = 0;
    assert_int_equal(cuMemHostGetDevicePointer(&dp, buf, 0), CUDA_SUCCESS);
    assert_int_equal(dp, (uintptr_t)buf);
    assert_int_equal(cuMemHostUnregister(buf), CUDA_SUCCESS);
    assert_int_equal(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    free(buf);

    assert_int_equal(cuMemFreeHost(a), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeHost(b), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeHost(b), CUDA_ERROR_INVALID_VALUE);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_int_equal(vtsim_ledger_count(&l, "host_alloc", "cuMemHostAlloc"), 1);
    assert_int_equal(vtsim_ledger_count(&l, "host_alloc", "cuMemAllocHost_v2"), 1);
    assert_int_equal(vtsim_ledger_count(&l, "host_free", NULL), 3);
    assert_int_equal(vtsim_ledger_count(&l, "host_register", NULL), 2);
    assert_int_equal(vtsim_ledger_count(&l, "host_unregister", NULL), 2);
    vtsim_ledger_free(&l);
}

static void test_managed_is_charged_and_touchable(void **state)
{
    (void)state;
    size_t f0 = free_now();
    CUdeviceptr m = 0;
    assert_int_equal(cuMemAllocManaged(&m, 3 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    memset((void *)(uintptr_t)m, 1, 3 * MiB);
    assert_int_equal(free_now(), f0 - 3 * MiB);
    unsigned int managed = 0;
    assert_int_equal(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m), CUDA_SUCCESS);
    assert_int_equal(managed, 1);
    assert_int_equal(cuMemFree(m), CUDA_SUCCESS);
    assert_int_equal(free_now(), f0);
}

int main(void)
{
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pinned_host),
        cmocka_unit_test(test_managed_is_charged_and_touchable),
    };
    int failed = cmocka_run_group_tests(tests, simtest_primary_context, NULL);
    unlink(ledger_path);
    return failed;
}
