/* Option values as every command reads them (analyzer/cli/cli_options.c):
 * sizes in binary and decimal units, any case; numbers in range. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "cli_options.h"

#define GIB (1ull << 30)

static void test_sizes(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        uint64_t bytes;
    } good[] = {
        {"24GiB", 24 * GIB}, {"24gib", 24 * GIB}, {"24G", 24 * GIB},  {"24g", 24 * GIB},
        {"24GB", 24000000000ull}, {"24gb", 24000000000ull}, {"1.5GiB", 3 * GIB / 2},
        {"512MiB", 512ull << 20}, {"80GB", 80000000000ull},  {"4096", 4096},
        {"4096B", 4096},          {"1TiB", 1ull << 40},     {"2K", 2048},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint64_t v = 0;
        if (!vt_cli_size("test", "capacity", good[i].text, &v) || v != good[i].bytes)
            fail_msg("%s: got %llu, want %llu", good[i].text, (unsigned long long)v,
                     (unsigned long long)good[i].bytes);
    }
    static const char *const bad[] = {"", "GiB", "24X", "-1G", "0", "24 GiB", "24GiBs", "0.1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v = 0;
        if (vt_cli_size("test", "capacity", bad[i], &v))
            fail_msg("'%s' was taken as %llu", bad[i], (unsigned long long)v);
    }
}

static void test_numbers(void **state)
{
    (void)state;
    uint64_t v;
    assert_true(vt_cli_uint("test", "top", NULL, "1", 1, 1000, &v) && v == 1);
    assert_true(vt_cli_uint("test", "top", NULL, "1000", 1, 1000, &v) && v == 1000);
    assert_false(vt_cli_uint("test", "top", NULL, "0", 1, 1000, &v));
    assert_false(vt_cli_uint("test", "top", NULL, "1001", 1, 1000, &v));
    assert_false(vt_cli_uint("test", "top", NULL, "-1", 0, 1000, &v));
    assert_false(vt_cli_uint("test", "top", NULL, "3x", 0, 1000, &v));
    assert_false(vt_cli_uint("test", "top", NULL, "", 0, 1000, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
