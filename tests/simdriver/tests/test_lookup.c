/* cuGetProcAddress routing: (name, version, flags) -> the right variant, as
 * the real driver answers; distinct functions for distinct variants. */
#include "sim_test.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *driver;
static PFN_cuGetProcAddress_v12000 gpa;
static char *ledger_path, *lookup_path;
static const char *data_file;

/* name asked, version, flags, exported symbol expected */
#define ROUTING_CASES(X)                                             \
    X("cuMemAlloc", 2000, 0, "cuMemAlloc")                           \
    X("cuMemAlloc", 3020, 0, "cuMemAlloc_v2")                        \
    X("cuMemAlloc", 13000, 0, "cuMemAlloc_v2")                       \
    X("cuMemAlloc", 13000, 2, "cuMemAlloc_v2")                       \
    X("cuCtxCreate", 3020, 0, "cuCtxCreate_v2")                      \
    X("cuCtxCreate", 11040, 0, "cuCtxCreate_v3")                     \
    X("cuCtxCreate", 12050, 0, "cuCtxCreate_v4")                     \
    X("cuCtxCreate", 12000, 0, "cuCtxCreate_v3")                     \
    X("cuGetProcAddress", 11030, 0, "cuGetProcAddress")              \
    X("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2")           \
    X("cuMemAllocAsync", 11020, 0, "cuMemAllocAsync")                \
    X("cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz")           \
    X("cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz") \
    X("cuMemFreeAsync", 12000, 2, "cuMemFreeAsync_ptsz")             \
    X("cuMemFreeAsync", 12000, 1, "cuMemFreeAsync")                  \
    X("cuMemcpyHtoD", 7000, 2, "cuMemcpyHtoD_v2_ptds")               \
    X("cuMemcpyHtoD", 3020, 2, "cuMemcpyHtoD_v2")                    \
    X("cuDevicePrimaryCtxRelease", 7000, 0, "cuDevicePrimaryCtxRelease") \
    X("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2") \
    X("cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2")                    \
    X("cuStreamBeginCapture", 10010, 2, "cuStreamBeginCapture_v2_ptsz")

static void test_routing_by_version_and_flags(void **state)
{
    (void)state;
#define CHECK_CASE(name, version, flags, symbol)                                      \
    {                                                                                 \
        void *fn = NULL;                                                              \
        CUdriverProcAddressQueryResult st = 99;                                       \
        assert_int_equal(gpa(name, &fn, version, flags, &st), CUDA_SUCCESS);          \
        assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);                            \
        void *want = dlsym(driver, symbol);                                           \
        assert_non_null(want);                                                        \
        if (fn != want)                                                               \
            fail_msg("%s %d %d: expected %s", name, version, flags, symbol);          \
    }
    ROUTING_CASES(CHECK_CASE)
#undef CHECK_CASE
}

static void test_not_found_and_version_not_sufficient(void **state)
{
    (void)state;
    void *fn = (void *)1;
    CUdriverProcAddressQueryResult st = 99;
    assert_int_equal(gpa("", &fn, 0, 0, &st), CUDA_ERROR_NOT_FOUND);  /* the runtime's probe */
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    assert_null(fn);
    st = 99;
    assert_int_equal(gpa("cuNoSuchFunction", &fn, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    st = 99;
    assert_int_equal(gpa("cuMemAllocAsync", &fn, 11000, 0, &st), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    assert_null(fn);
    /* v1 has no status argument but routes the same way. */
    PFN_cuGetProcAddress_v11030 v1 = (PFN_cuGetProcAddress_v11030)dlsym(driver, "cuGetProcAddress");
    assert_non_null(v1);
    assert_int_equal(v1("cuMemAlloc", &fn, 3020, 0), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(driver, "cuMemAlloc_v2"));
    assert_int_equal(v1("cuNoSuchFunction", &fn, 3020, 0), CUDA_ERROR_NOT_FOUND);
}

static void test_self_lookup_gives_matching_arity(void **state)
{
    (void)state;
    void *v1 = NULL, *v2 = NULL;
    CUdriverProcAddressQueryResult st;
    assert_int_equal(gpa("cuGetProcAddress", &v1, 11030, 0, &st), CUDA_SUCCESS);
    assert_int_equal(gpa("cuGetProcAddress", &v2, 12000, 0, &st), CUDA_SUCCESS);
    assert_true(v1 != v2);
    /* The 5-argument one fills the status; the 4-argument one works without it. */
    void *fn = NULL;
    st = 99;
    assert_int_equal(((PFN_cuGetProcAddress_v12000)v2)("cuInit", &fn, 2000, 0, &st), CUDA_SUCCESS);
    assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_ptr_equal(fn, dlsym(driver, "cuInit"));
    fn = NULL;
    assert_int_equal(((PFN_cuGetProcAddress_v11030)v1)("cuInit", &fn, 2000, 0), CUDA_SUCCESS);
    assert_ptr_equal(fn, dlsym(driver, "cuInit"));
}

/* Every look-up the real CUDA 13 runtime makes resolves, each to a function
 * exported under a name of that base, and different variants never share a
 * pointer (a tracer routes by pointer identity). */
static void test_every_runtime_lookup_resolves_to_distinct_variants(void **state)
{
    (void)state;
    FILE *f = fopen(data_file, "r");
    assert_non_null(f);
    char line[256];
    struct { void *fn; char symbol[96]; } seen[1024];
    size_t n_seen = 0, asked = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128] = "";
        int version = 0;
        unsigned long long flags = 0;
        if (line[0] == ' ' || sscanf(line, "%127s %d %llu", name, &version, &flags) != 3)
            continue;  /* the probe */
        void *fn = NULL;
        CUdriverProcAddressQueryResult st;
        asked++;
        if (gpa(name, &fn, version, flags, &st) != CUDA_SUCCESS || !fn)
            fail_msg("%s %d %llu not resolved", name, version, flags);
        Dl_info info;
        assert_true(dladdr(fn, &info) != 0);
        assert_non_null(info.dli_sname);
        assert_int_equal(strncmp(info.dli_sname, name, strlen(name)), 0);
        assert_ptr_equal(dlsym(driver, info.dli_sname), fn);
        for (size_t i = 0; i < n_seen; i++)
            if ((seen[i].fn == fn) != (strcmp(seen[i].symbol, info.dli_sname) == 0))
                fail_msg("%s and %s share a pointer", seen[i].symbol, info.dli_sname);
        if (n_seen < 1024) {
            seen[n_seen].fn = fn;
            snprintf(seen[n_seen].symbol, sizeof seen[n_seen].symbol, "%s", info.dli_sname);
            n_seen++;
        }
    }
    fclose(f);
    assert_true(asked > 400);
}

static void test_lookup_log_records_queries(void **state)
{
    (void)state;
    void *fn;
    CUdriverProcAddressQueryResult st;
    gpa("cuMemAllocAsync", &fn, 11020, 2, &st);
    struct vtsim_ledger l;
    vtsim_ledger_load(lookup_path, &l);
    assert_true(l.count > 0);
    const char *last = l.lines[l.count - 1];
    assert_non_null(strstr(last, "cuMemAllocAsync 11020 2 result=0 status=0 symbol=cuMemAllocAsync_ptsz"));
    vtsim_ledger_free(&l);
}

int main(int argc, char **argv)
{
    data_file = argc > 1 ? argv[1] : "cudart13-driver-lookups.txt";
    simtest_setup_logs(&ledger_path, &lookup_path);
    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver || !(gpa = (PFN_cuGetProcAddress_v12000)dlsym(driver, "cuGetProcAddress_v2"))) {
        fprintf(stderr, "cannot load the simulated libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routing_by_version_and_flags),
        cmocka_unit_test(test_not_found_and_version_not_sufficient),
        cmocka_unit_test(test_self_lookup_gives_matching_arity),
        cmocka_unit_test(test_every_runtime_lookup_resolves_to_distinct_variants),
        cmocka_unit_test(test_lookup_log_records_queries),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(ledger_path);
    unlink(lookup_path);
    return failed;
}
