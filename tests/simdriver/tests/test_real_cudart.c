/* The real libcudart.so.13 against the simulated driver: it must finish its
 * whole look-up phase (every look-up of tests/data/cudart13-driver-lookups.txt
 * asked and answered), then fail cleanly when cuGetExportTable refuses its
 * private tables - without crashing.  Skipped (77) without the toolkit. */
#include "sim_test.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *ledger_path, *lookup_path;
static const char *cudart_path, *expected_path;

static void test_real_runtime_lookup_phase(void **state)
{
    (void)state;
    void *rt = dlopen(cudart_path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(rt);
    int (*count)(int *) = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
    int (*release)(void *) = (int (*)(void *))dlsym(rt, "cudaFree");
    assert_non_null(count);
    assert_non_null(release);
    int n = -1;
    assert_int_not_equal(count(&n), 0);       /* refused export tables: it cannot start */
    assert_int_not_equal(release(NULL), 0);

    struct vtsim_ledger asked, expected;
    vtsim_ledger_load(lookup_path, &asked);
    vtsim_ledger_load(expected_path, &expected);
    assert_true(expected.count > 400);
    /* Every expected look-up was asked (as a multiset) and resolved, except the probe. */
    char *used = calloc(asked.count, 1);
    for (size_t i = 0; i < expected.count; i++) {
        size_t len = strlen(expected.lines[i]);
        size_t j = 0;
        for (; j < asked.count; j++)
            if (!used[j] && strncmp(asked.lines[j], expected.lines[i], len) == 0 &&
                asked.lines[j][len] == ' ')
                break;
        if (j == asked.count)
            fail_msg("look-up \"%s\" was never asked", expected.lines[i]);
        used[j] = 1;
        int probe = expected.lines[i][0] == ' ';
        if (!probe && !strstr(asked.lines[j], " result=0 "))
            fail_msg("look-up \"%s\" not resolved: %s", expected.lines[i], asked.lines[j]);
    }
    free(used);
    vtsim_ledger_free(&asked);
    vtsim_ledger_free(&expected);

    struct vtsim_ledger l;
    simtest_ledger(ledger_path, &l);
    assert_true(vtsim_ledger_count(&l, "export_table", NULL) >= 1);
    assert_int_equal(vtsim_ledger_count(&l, "init", NULL), 1);
    vtsim_ledger_free(&l);
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    static char path[4096];
    snprintf(path, sizeof path, "%s/libcudart.so.13", argv[1]);
    cudart_path = path;
    expected_path = argv[2];
    if (access(cudart_path, R_OK) != 0) {
        fprintf(stderr, "%s absent: skipped\n", cudart_path);
        return 77;
    }
    simtest_setup_logs(&ledger_path, &lookup_path);
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_real_runtime_lookup_phase) };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    unlink(ledger_path);
    unlink(lookup_path);
    return failed;
}
