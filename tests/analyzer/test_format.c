/* How numbers are written for people (common/format.c): bytes to two
 * decimals and seconds to three, a half rounded away from zero on the exact
 * value, as the page's JavaScript does (Number.toFixed): 12482248704 bytes,
 * exactly 11.625 GiB, is "11.63 GiB" in every view, where printf's "%.2f"
 * says "11.62". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "format.h"

static void bytes_is(uint64_t v, const char *want)
{
    char buf[32];
    assert_string_equal(vt_format_bytes(v, buf, sizeof buf), want);
}

static void seconds_is(int64_t ns, const char *want)
{
    char buf[32];
    assert_string_equal(vt_format_seconds(ns, buf, sizeof buf), want);
}

static void test_bytes_edges(void **state)
{
    (void)state;
    bytes_is(0, "0 B");
    bytes_is(1023, "1023 B");
    bytes_is(1024, "1.00 KiB");
    bytes_is(1152, "1.13 KiB");               /* 1.125: a tie, away from zero */
    bytes_is(12482248704ull, "11.63 GiB");    /* 11.625 GiB: example 1's peak */
    bytes_is(12482248703ull, "11.62 GiB");    /* one byte below the tie */
    bytes_is(2490368, "2.38 MiB");            /* 2.375 */
    bytes_is(1048575, "1024.00 KiB");         /* rounds up within its unit, as toFixed */
    bytes_is(1048576, "1.00 MiB");
    bytes_is(7440695296ull, "6.93 GiB");
    bytes_is(UINT64_MAX, "16384.00 PiB");
}

/* Against the definition, in 128-bit integers: floor(v * 100 / unit + 1/2)
 * hundredths of the largest unit not above v. */
static void test_bytes_against_definition(void **state)
{
    (void)state;
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (x & 63); /* every magnitude */
        if (i % 4 == 0) /* near ties: k/8 of a unit, and a byte either side */
            v = ((x & 0xffff) << (10 * (1 + x % 4))) / 8 + (uint64_t)((int)(x >> 60) % 3 - 1);
        if (v < 1024)
            continue;
        unsigned u = 0;
        unsigned __int128 unit = 1024;
        while (u < 4 && v >= unit * 1024) {
            unit *= 1024;
            u++;
        }
        unsigned __int128 h = ((unsigned __int128)v * 200 + unit) / (unit * 2);
        char want[48];
        snprintf(want, sizeof want, "%llu.%02u %s", (unsigned long long)(h / 100),
                 (unsigned)(h % 100), units[u]);
        bytes_is(v, want);
    }
}

static void test_seconds(void **state)
{
    (void)state;
    seconds_is(0, "+0.000s");
    seconds_is(2000000, "+0.002s");
    seconds_is(62500000, "+0.063s");          /* 0.0625 s: a tie, away from zero */
    seconds_is(62499999, "+0.062s");
    seconds_is(1000500000, "+1.001s");        /* a double's 1.0005 is below the tie */
    seconds_is(-1250000000, "-1.250s");
    seconds_is(-1500000, "-0.002s");
    seconds_is(-1, "-0.000s");
    seconds_is(INT64_MIN, "-9223372036.855s");
    seconds_is(INT64_MAX, "+9223372036.855s");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bytes_edges),
        cmocka_unit_test(test_bytes_against_definition),
        cmocka_unit_test(test_seconds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
