/* A library with a private copy of the runtime (like NCCL/cuBLAS): it
 * exports no cuda* symbol, finds the driver by itself (its own probe), and
 * its allocations land in the driver's ledger next to the public runtime's. */
#include "sim_test.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path, *lookup_path;

static void test_private_runtime(void **state)
{
    (void)state;
    void *lib = dlopen("libprivrt_user.so", RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    assert_null(dlsym(lib, "cudaMalloc"));
    assert_null(dlsym(lib, "cudaFree"));
    int (*alloc)(size_t, void **) = (int (*)(size_t, void **))dlsym(lib, "privrt_user_alloc");
    int (*release)(void *) = (int (*)(void *))dlsym(lib, "privrt_user_free");
    assert_non_null(alloc);
    assert_non_null(release);

    void *pub = NULL, *priv = NULL;
    assert_int_equal(cudaMalloc(&pub, 1000), cudaSuccess);
    assert_int_equal(alloc(2000, &priv), 0);
    assert_non_null(priv);
    assert_true(pub != priv);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    int seen = 0;
    for (size_t i = 0; i < l.count; i++)
        seen += vtsim_ledger_is(l.lines[i], "alloc", "cuMemAlloc_v2") &&
                (uintptr_t)vtsim_ledger_num(l.lines[i], "addr", 0) == (uintptr_t)priv &&
                vtsim_ledger_num(l.lines[i], "size", 0) == 2000;
    assert_int_equal(seen, 1);
    /* Both runtimes retained the one primary context: retain count 2. */
    assert_int_equal(vtsim_ledger_count(&l, "ctx_retain", NULL), 2);
    vtsim_ledger_free(&l);

    /* Two start-ups, each with its own probe and self look-ups. */
    vtsim_ledger_load(lookup_path, &l);
    size_t probes = 0, selfs = 0;
    for (size_t i = 0; i < l.count; i++) {
        probes += strncmp(l.lines[i], " 0 0 ", 5) == 0;
        selfs += strncmp(l.lines[i], "cuGetProcAddress 12000 0 ", 25) == 0;
    }
    assert_int_equal(probes, 2);
    assert_int_equal(selfs, 2);
    vtsim_ledger_free(&l);

    assert_int_equal(release(priv), 0);
    assert_int_equal(cudaFree(pub), cudaSuccess);
    dlclose(lib);
}

int main(void)
{
    simtest_setup_logs(&ledger_path, &lookup_path);
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_private_runtime) };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(ledger_path);
    unlink(lookup_path);
    return failed;
}
