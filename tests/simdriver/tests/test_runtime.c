/* The simulated runtime starts like the real CUDA 13 runtime: one dlsym of
 * cuGetProcAddress_v2, the ("",0,0) probe, the self look-ups at 11030 and
 * 12000, then base-name look-ups; its calls land in the driver's ledger. */
#include "sim_test.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path, *lookup_path;

/* The per-thread-default-stream entry points, declared by the toolkit only
 * when compiling with --default-stream per-thread. */
cudaError_t cudaMallocAsync_ptsz(void **ptr, size_t size, cudaStream_t stream);
cudaError_t cudaFreeAsync_ptsz(void *ptr, cudaStream_t stream);

/* This executable exports dlsym (export_dynamic), so the runtime's dlsym
 * calls come here first: it records the names asked and forwards. */
static char dlsym_names[64][64];
static int dlsym_count;

/* Not instrumented: sanitizer runtimes call it before their shadow memory exists.
 * no_sanitize("...") is the spelling gcc and clang both accept (clang has no
 * no_sanitize_undefined and rejects it under -Werror). */
__attribute__((visibility("default"), no_sanitize("address", "undefined")))
void *dlsym(void *handle, const char *name)
{
    static void *(*real)(void *, const char *);
    if (!real)
        real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real)
        real = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    /* Sanitizer runtimes call dlsym before their own interceptors work: copy
     * by hand, no libc call. */
    if (dlsym_count < 64 && name[0] == 'c' && name[1] == 'u') {
        size_t i = 0;
        for (; name[i] && i < sizeof dlsym_names[0] - 1; i++)
            dlsym_names[dlsym_count][i] = name[i];
        dlsym_names[dlsym_count++][i] = 0;
    }
    return real(handle, name);
}

static void test_startup_sequence(void **state)
{
    (void)state;
    int n = 0;
    assert_int_equal(cudaGetDeviceCount(&n), cudaSuccess);
    assert_int_equal(n, 2);
    int cu_dlsyms = 0;
    for (int i = 0; i < dlsym_count; i++)
        if (strncmp(dlsym_names[i], "cu", 2) == 0) {
            cu_dlsyms++;
            assert_string_equal(dlsym_names[i], "cuGetProcAddress_v2");
        }
    assert_int_equal(cu_dlsyms, 1);

    struct vtsim_ledger l;
    vtsim_ledger_load(lookup_path, &l);
    assert_true(l.count > 10);
    assert_true(strncmp(l.lines[0], " 0 0 result=500 status=1", 24) == 0);
    assert_true(strncmp(l.lines[1], "cuGetProcAddress 11030 0 result=0", 33) == 0);
    assert_true(strncmp(l.lines[2], "cuGetProcAddress 12000 0 result=0", 33) == 0);
    int saw_alloc = 0, saw_ptsz = 0;
    for (size_t i = 3; i < l.count; i++) {
        assert_non_null(strstr(l.lines[i], "result=0"));
        saw_alloc |= strncmp(l.lines[i], "cuMemAlloc 3020 0 ", 18) == 0;
        saw_ptsz |= strstr(l.lines[i], "cuMemAllocAsync 11020 2 result=0 status=0 symbol=cuMemAllocAsync_ptsz") != NULL;
    }
    assert_true(saw_alloc);
    assert_true(saw_ptsz);
    vtsim_ledger_free(&l);
}

static void test_allocations_reach_the_driver(void **state)
{
    (void)state;
    void *p = NULL, *q = NULL, *r = NULL, *h = NULL;
    assert_int_equal(cudaFree(NULL), cudaSuccess);
    assert_int_equal(cudaMalloc(&p, 1 << 20), cudaSuccess);
    assert_int_equal(cudaMallocAsync(&q, 4096, 0), cudaSuccess);
    assert_int_equal(cudaMallocAsync_ptsz(&r, 4096, 0), cudaSuccess);
    assert_int_equal(cudaMallocHost(&h, 100), cudaSuccess);
    memset(h, 1, 100);
    size_t f = 0, t = 0;
    assert_int_equal(cudaMemGetInfo(&f, &t), cudaSuccess);
    assert_int_equal(t, 3 * GiB);
    assert_int_equal(t - f, 256 * MiB + (1 << 20) + 8192);
    void *huge = NULL;
    assert_int_equal(cudaMalloc(&huge, 4 * GiB), cudaErrorMemoryAllocation);
    assert_string_equal(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(cudaFreeAsync(q, 0), cudaSuccess);
    assert_int_equal(cudaFreeAsync_ptsz(r, 0), cudaSuccess);
    assert_int_equal(cudaFreeHost(h), cudaSuccess);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_int_equal(vtsim_ledger_count(&l, "ctx_retain", NULL), 1);  /* lazily, once */
    int found_p = 0, found_q = 0, found_r = 0;
    for (size_t i = 0; i < l.count; i++) {
        unsigned long long a = (unsigned long long)vtsim_ledger_num(l.lines[i], "addr", 0);
        found_p += vtsim_ledger_is(l.lines[i], "alloc", "cuMemAlloc_v2") && a == (uintptr_t)p;
        found_q += vtsim_ledger_is(l.lines[i], "alloc", "cuMemAllocAsync") && a == (uintptr_t)q;
        found_r += vtsim_ledger_is(l.lines[i], "alloc", "cuMemAllocAsync_ptsz") && a == (uintptr_t)r;
    }
    assert_int_equal(found_p, 1);
    assert_int_equal(found_q, 1);
    assert_int_equal(found_r, 1);
    assert_int_equal(vtsim_ledger_count(&l, "free", "cuMemFreeAsync_ptsz"), 1);
    assert_int_equal(vtsim_ledger_count(&l, "host_alloc", "cuMemHostAlloc"), 1);
    assert_int_equal(vtsim_ledger_sum_delta(&l, 0), 256 * MiB);
    vtsim_ledger_free(&l);
}

static void test_set_device_and_entry_points(void **state)
{
    (void)state;
    assert_int_equal(cudaSetDevice(1), cudaSuccess);
    int dev = -1;
    assert_int_equal(cudaGetDevice(&dev), cudaSuccess);
    assert_int_equal(dev, 1);
    void *p = NULL;
    assert_int_equal(cudaMalloc(&p, 512), cudaSuccess);
    assert_true((uintptr_t)p >= 0x200000000000ull + (1ull << 40));  /* device 1's addresses */
    assert_int_equal(cudaFree(p), cudaSuccess);
    assert_int_equal(cudaSetDevice(2), cudaErrorInvalidDevice);

    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(driver);
    void *fn = NULL;
    enum cudaDriverEntryPointQueryResult st = 99;
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuMemCreate", &fn, 12000, cudaEnableDefault, &st),
                     cudaSuccess);
    assert_int_equal(st, cudaDriverEntryPointSuccess);
    assert_ptr_equal(fn, dlsym(driver, "cuMemCreate"));
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  /* still used by older PyTorch */
    assert_int_equal(cudaGetDriverEntryPoint("cuMemAllocAsync", &fn, cudaEnablePerThreadDefaultStream, &st),
                     cudaSuccess);
#pragma GCC diagnostic pop
    assert_ptr_equal(fn, dlsym(driver, "cuMemAllocAsync_ptsz"));
    assert_int_equal(cudaGetDriverEntryPointByVersion("cuNoSuchThing", &fn, 12000, 0, &st), cudaSuccess);
    assert_int_equal(st, cudaDriverEntryPointSymbolNotFound);
    assert_null(fn);
    dlclose(driver);
}

int main(void)
{
    setenv("VTSIM_DEVICES", "2", 1);
    setenv("VTSIM_MEMORY", "3GiB", 1);
    setenv("VTSIM_CONTEXT_BYTES", "256MiB", 1);
    simtest_setup_logs(&ledger_path, &lookup_path);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_startup_sequence),
        cmocka_unit_test(test_allocations_reach_the_driver),
        cmocka_unit_test(test_set_device_and_entry_points),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(ledger_path);
    unlink(lookup_path);
    return failed;
}
