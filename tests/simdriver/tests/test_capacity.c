/* Capacity, out-of-memory and cuMemGetInfo of the simulated driver, through
 * -lcuda: a failed allocation changes nothing, contexts cost their fixed
 * charge, a 80 GiB device works without touching host memory. */
#include "sim_test.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path;

static void expect_free(size_t expected_free, size_t expected_total)
{
    size_t f = 0, t = 0;
    assert_int_equal(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
    assert_int_equal(t, expected_total);
    assert_int_equal(f, expected_free);
}

static void test_not_initialised_and_no_context(void **state)
{
    (void)state;
    CUdeviceptr p = 0;
    size_t f, t;
    assert_int_equal(cuMemAlloc(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuMemGetInfo(&f, &t), CUDA_ERROR_INVALID_CONTEXT);
    int n = 0;
    assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
    assert_int_equal(n, 2);
    size_t total = 0;
    assert_int_equal(cuDeviceTotalMem(&total, 1), CUDA_SUCCESS);
    assert_int_equal(total, 80 * GiB);
    char name[64];
    assert_int_equal(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    assert_non_null(strstr(name, "Simulated GPU"));
    CUuuid u0, u1, again;
    assert_int_equal(cuDeviceGetUuid(&u0, 0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetUuid(&u1, 1), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetUuid(&again, 0), CUDA_SUCCESS);
    assert_memory_not_equal(u0.bytes, u1.bytes, 16);
    assert_memory_equal(u0.bytes, again.bytes, 16);
}

static void test_context_charge_and_oom(void **state)
{
    (void)state;
    CUcontext ctx;
    assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    expect_free(2 * GiB - 256 * MiB, 2 * GiB);

    CUdeviceptr a = 0, b = 0, c = 0;
    assert_int_equal(cuMemAlloc(&a, 1 * GiB), CUDA_SUCCESS);
    expect_free(1 * GiB - 256 * MiB, 2 * GiB);
    /* Does not fit: fails and changes nothing. */
    assert_int_equal(cuMemAlloc(&b, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(b, 0);
    expect_free(1 * GiB - 256 * MiB, 2 * GiB);
    /* Exactly what is left fits. */
    assert_int_equal(cuMemAlloc(&c, 768 * MiB), CUDA_SUCCESS);
    expect_free(0, 2 * GiB);
    assert_int_equal(cuMemFree(c), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(a), CUDA_SUCCESS);
    expect_free(2 * GiB - 256 * MiB, 2 * GiB);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    size_t ooms = 0;
    for (size_t i = 0; i < l.count; i++)
        if (vtsim_ledger_is(l.lines[i], "alloc", "cuMemAlloc_v2") &&
            vtsim_ledger_num(l.lines[i], "result", -1) == CUDA_ERROR_OUT_OF_MEMORY) {
            ooms++;
            assert_int_equal(vtsim_ledger_num(l.lines[i], "size", 0), 1 * GiB);
            assert_int_equal(vtsim_ledger_num(l.lines[i], "delta", -1), 0);
        }
    assert_int_equal(ooms, 1);
    /* What the ledger says this process holds is what getinfo says. */
    assert_int_equal(vtsim_ledger_sum_delta(&l, 0), 256 * MiB);
    vtsim_ledger_free(&l);
}

static void test_rounding_alignment_and_bad_free(void **state)
{
    (void)state;
    size_t before_free, total;
    assert_int_equal(cuMemGetInfo(&before_free, &total), CUDA_SUCCESS);
    CUdeviceptr p[8];
    for (int i = 0; i < 8; i++) {
        assert_int_equal(cuMemAlloc(&p[i], 1 + (size_t)i * 700), CUDA_SUCCESS);
        assert_int_equal(p[i] % 512, 0);
        for (int j = 0; j < i; j++)
            assert_true(p[i] != p[j]);
    }
    size_t f;
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);  /* NULL-tolerant */
    size_t charged = 0;
    for (int i = 0; i < 8; i++)
        charged += ((1 + (size_t)i * 700) + 511) / 512 * 512;
    assert_int_equal(before_free - f, charged);
    assert_int_equal(cuMemFree(p[3] + 512), CUDA_ERROR_INVALID_VALUE);  /* not a base */
    assert_int_equal(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemGetInfo(NULL, NULL), CUDA_SUCCESS);
    for (int i = 0; i < 8; i++)
        assert_int_equal(cuMemFree(p[i]), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(p[0]), CUDA_ERROR_INVALID_VALUE);  /* double free */
    expect_free(before_free, total);
    CUdeviceptr z;
    assert_int_equal(cuMemAlloc(&z, 0), CUDA_ERROR_INVALID_VALUE);

    size_t pitch = 0;
    CUdeviceptr pp;
    assert_int_equal(cuMemAllocPitch(&pp, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    assert_int_equal(pitch, 1024);
    assert_int_equal(cuMemGetInfo(&f, NULL), CUDA_SUCCESS);
    assert_int_equal(before_free - f, 10240);
    assert_int_equal(cuMemFree(pp), CUDA_SUCCESS);
}

static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, resident = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return resident * 4;
}

/* Device 1 has 80 GiB; this machine has far less RAM: nothing is backed. */
static void test_big_device_and_second_context(void **state)
{
    (void)state;
    CUcontext ctx;
    assert_int_equal(cuCtxCreate(&ctx, NULL, 0, 1), CUDA_SUCCESS);
    CUdevice dev = -1;
    assert_int_equal(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    assert_int_equal(dev, 1);
    expect_free(80 * GiB - 256 * MiB, 80 * GiB);
    long rss_before = resident_kib();
    CUdeviceptr p[79];
    for (int i = 0; i < 79; i++)
        assert_int_equal(cuMemAlloc(&p[i], 1 * GiB), CUDA_SUCCESS);
    assert_true(resident_kib() - rss_before < 64 * 1024);
    int ordinal = -1;
    assert_int_equal(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p[5] + 100),
                     CUDA_SUCCESS);
    assert_int_equal(ordinal, 1);
    CUdeviceptr more;
    assert_int_equal(cuMemAlloc(&more, 1 * GiB), CUDA_ERROR_OUT_OF_MEMORY);
    for (int i = 0; i < 79; i++)
        assert_int_equal(cuMemFree(p[i]), CUDA_SUCCESS);
    assert_int_equal(cuCtxDestroy(ctx), CUDA_SUCCESS);
    /* Back on the primary context of device 0 (still on this thread's stack). */
    assert_int_equal(cuCtxGetDevice(&dev), CUDA_SUCCESS);
    assert_int_equal(dev, 0);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_int_equal(vtsim_ledger_count(&l, "ctx_create", NULL), 1);
    assert_int_equal(vtsim_ledger_count(&l, "ctx_destroy", NULL), 1);
    assert_int_equal(vtsim_ledger_sum_delta(&l, 1), 0);
    vtsim_ledger_free(&l);
}

int main(void)
{
    setenv("VTSIM_DEVICES", "2", 1);
    setenv("VTSIM_MEMORY", "2GiB,80GiB", 1);
    setenv("VTSIM_CONTEXT_BYTES", "256MiB", 1);
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_initialised_and_no_context),
        cmocka_unit_test(test_context_charge_and_oom),
        cmocka_unit_test(test_rounding_alignment_and_bad_free),
        cmocka_unit_test(test_big_device_and_second_context),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(ledger_path);
    free(ledger_path);
    return failed;
}
