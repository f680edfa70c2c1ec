/* The ground-truth ledger: every served call appears once, with the right
 * fields, also when 16 threads allocate at once. */
#include "sim_test.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path;
static CUcontext primary;

/* The lines of the ledger with op (and fn) whose addr= is addr. */
static size_t count_at(const struct vtsim_ledger *l, const char *op, const char *fn, unsigned long long addr)
{
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        if (vtsim_ledger_is(l->lines[i], op, fn) &&
            (unsigned long long)vtsim_ledger_num(l->lines[i], "addr", 0) == addr)
            n++;
    return n;
}

static const char *find_line(const struct vtsim_ledger *l, const char *op, const char *fn,
                             unsigned long long addr)
{
    for (size_t i = 0; i < l->count; i++)
        if (vtsim_ledger_is(l->lines[i], op, fn) &&
            (unsigned long long)vtsim_ledger_num(l->lines[i], "addr", 0) == addr)
            return l->lines[i];
    return NULL;
}

static void test_every_operation_once_with_fields(void **state)
{
    (void)state;
    CUdeviceptr d = 0, m = 0;
    void *h = NULL;
    size_t f, t;
    assert_int_equal(cuMemAlloc(&d, 3000), CUDA_SUCCESS);
    assert_int_equal(cuMemAllocManaged(&m, 5000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cuMemHostAlloc(&h, 7000, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo(&f, &t), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(d), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(m), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeHost(h), CUDA_SUCCESS);
    assert_int_equal(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_int_equal(vtsim_ledger_count(&l, "init", NULL), 1);
    assert_int_equal(vtsim_ledger_count(&l, "ctx_retain", NULL), 1);
    assert_int_equal(count_at(&l, "alloc", "cuMemAlloc_v2", d), 1);
    assert_int_equal(count_at(&l, "alloc", "cuMemAllocManaged", m), 1);
    assert_int_equal(count_at(&l, "host_alloc", "cuMemHostAlloc", (uintptr_t)h), 1);
    assert_int_equal(count_at(&l, "free", "cuMemFree_v2", d), 2);  /* the success and the failure */
    assert_int_equal(count_at(&l, "free", "cuMemFree_v2", m), 1);
    assert_int_equal(count_at(&l, "host_free", "cuMemFreeHost", (uintptr_t)h), 1);
    assert_int_equal(vtsim_ledger_count(&l, "getinfo", NULL), 1);

    const char *a = find_line(&l, "alloc", "cuMemAlloc_v2", d);
    char v[64];
    assert_int_equal(vtsim_ledger_num(a, "result", -1), 0);
    assert_int_equal(vtsim_ledger_num(a, "dev", -1), 0);
    assert_int_equal(vtsim_ledger_num(a, "size", 0), 3000);
    assert_int_equal(vtsim_ledger_num(a, "charged", 0), 3072);
    assert_int_equal(vtsim_ledger_num(a, "delta", 0), 3072);
    assert_int_equal(vtsim_ledger_num(a, "pid", 0), getpid());
    assert_int_equal(vtsim_ledger_num(a, "tid", 0), gettid());
    assert_true(vtsim_ledger_num(a, "ns", 0) > 0);
    assert_true(vtsim_ledger_field(a, "kind", v, sizeof v));
    assert_string_equal(v, "device");
    const char *mm = find_line(&l, "alloc", "cuMemAllocManaged", m);
    assert_true(vtsim_ledger_field(mm, "kind", v, sizeof v));
    assert_string_equal(v, "managed");
    const char *hh = find_line(&l, "host_alloc", NULL, (uintptr_t)h);
    assert_true(vtsim_ledger_field(hh, "kind", v, sizeof v));
    assert_string_equal(v, "host");
    assert_int_equal(vtsim_ledger_num(hh, "size", 0), 7000);
    for (size_t i = 0; i < l.count; i++)
        if (vtsim_ledger_is(l.lines[i], "getinfo", NULL)) {
            assert_int_equal(vtsim_ledger_num(l.lines[i], "free", 0), f);
            assert_int_equal(vtsim_ledger_num(l.lines[i], "total", 0), t);
        }
    /* Failed free: recorded with its error and no change. */
    size_t failed = 0;
    for (size_t i = 0; i < l.count; i++)
        if (vtsim_ledger_is(l.lines[i], "free", "cuMemFree_v2") &&
            vtsim_ledger_num(l.lines[i], "result", 0) == CUDA_ERROR_INVALID_VALUE) {
            failed++;
            assert_int_equal(vtsim_ledger_num(l.lines[i], "delta", -1), 0);
        }
    assert_int_equal(failed, 1);
    vtsim_ledger_free(&l);
}

#define THREADS 16
#define ROUNDS 64

static void *allocating_thread(void *arg)
{
    uintptr_t ok = 1;
    (void)arg;
    if (cuCtxSetCurrent(primary) != CUDA_SUCCESS)
        return NULL;
    CUdeviceptr p[ROUNDS];
    for (int i = 0; i < ROUNDS; i++)
        ok &= cuMemAlloc(&p[i], 4096 + (size_t)i * 512) == CUDA_SUCCESS;
    for (int i = 0; i < ROUNDS; i++)
        ok &= cuMemFree(p[i]) == CUDA_SUCCESS;
    return (void *)ok;
}

static void test_sixteen_threads(void **state)
{
    (void)state;
    struct vtsim_ledger before;
    simtest_ledger(ledger_path, &before);
    size_t f0;
    assert_int_equal(cuMemGetInfo(&f0, NULL), CUDA_SUCCESS);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, allocating_thread, NULL), 0);
    for (int i = 0; i < THREADS; i++) {
        void *ok = NULL;
        pthread_join(th[i], &ok);
        assert_ptr_equal(ok, (void *)1);
    }
    size_t f1;
    assert_int_equal(cuMemGetInfo(&f1, NULL), CUDA_SUCCESS);
    assert_int_equal(f0, f1);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    size_t allocs = 0, frees = 0;
    long long delta = 0;
    int tids[THREADS + 1], n_tids = 0;
    for (size_t i = before.count; i < l.count; i++) {
        const char *s = l.lines[i];
        assert_true(vtsim_ledger_num(s, "ns", 0) > 0);  /* whole lines: the last field is there */
        if (vtsim_ledger_is(s, "alloc", "cuMemAlloc_v2"))
            allocs++;
        else if (vtsim_ledger_is(s, "free", "cuMemFree_v2"))
            frees++;
        else
            continue;
        delta += vtsim_ledger_num(s, "delta", 0);
        int tid = (int)vtsim_ledger_num(s, "tid", 0);
        int known = 0;
        for (int k = 0; k < n_tids; k++)
            known |= tids[k] == tid;
        if (!known && n_tids <= THREADS)
            tids[n_tids++] = tid;
    }
    assert_int_equal(allocs, THREADS * ROUNDS);
    assert_int_equal(frees, THREADS * ROUNDS);
    assert_int_equal(delta, 0);
    assert_int_equal(n_tids, THREADS);
    vtsim_ledger_free(&l);
    vtsim_ledger_free(&before);
}

static int setup(void **state)
{
    (void)state;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&primary, 0) != CUDA_SUCCESS)
        return -1;
    return cuCtxSetCurrent(primary) == CUDA_SUCCESS ? 0 : -1;
}

int main(void)
{
    simtest_setup_logs(&ledger_path, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_operation_once_with_fields),
        cmocka_unit_test(test_sixteen_threads),
    };
    int failed = cmocka_run_group_tests(tests, setup, NULL);
    unlink(ledger_path);
    return failed;
}
