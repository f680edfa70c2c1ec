/*
 * The event clock (preload/record/buffers/event_clock.h): the writer's conversion
 * of ticks to monotonic ns, against an exact reference line and against
 * the real clocks; the choice of clock.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "event_clock.h"
#include "recorder.h"
#include "trace_check.h"

/* A reference clock: ns = NS0 + (ticks - T0) * 5 / 12 (a 2.4 GHz TSC),
 * computed without the code under test's arithmetic (no 128-bit product:
 * whole periods of 12 ticks, then the rest). */
#define T0 123456789ull
#define NS0 1000000000000ull

static uint64_t ref_ns(uint64_t ticks)
{
    uint64_t d = ticks - T0;
    return NS0 + d / 12 * 5 + d % 12 * 5 / 12;
}

static struct vt_clock_point ref_point(uint64_t ticks)
{
    struct vt_clock_point p = {ticks, ref_ns(ticks)};
    return p;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static void test_exact_at_points(void **state)
{
    (void)state;
    struct vt_clock_point lo = ref_point(T0 + 12 * 1000), hi = ref_point(T0 + 12 * 7777777);
    assert_true(vt_clock_interpolate(lo, hi, lo.ticks) == lo.ns);
    assert_true(vt_clock_interpolate(lo, hi, hi.ticks) == hi.ns);
}

/* Between points on the reference line, every tick converts to the line's
 * ns rounded down - also over spans whose ticks * ns overflow 64 bits (a
 * minute at 2.4 GHz: 1.4e11 ticks * 6e10 ns). */
static void test_follows_a_line(void **state)
{
    (void)state;
    const uint64_t spans[] = {12, 1000, 2400000000ull / 10, 2400000000ull * 60,
                              2400000000ull * 3600 * 24};
    uint64_t seed = 42;
    for (size_t s = 0; s < sizeof spans / sizeof spans[0]; s++) {
        struct vt_clock_point lo = ref_point(T0 + 12 * 5), hi = ref_point(T0 + 12 * 5 + spans[s]);
        for (int i = 0; i < 20000; i++) {
            uint64_t t = lo.ticks + lcg(&seed) % (spans[s] + 1);
            uint64_t got = vt_clock_interpolate(lo, hi, t), want = ref_ns(t);
            /* both round down, from different origins: at most 1 ns apart */
            if (got + 1 < want || got > want + 1)
                fail_msg("span %llu ticks, tick %llu: %llu ns, line says %llu",
                         (unsigned long long)spans[s], (unsigned long long)t,
                         (unsigned long long)got, (unsigned long long)want);
        }
    }
}

#if defined(__SIZEOF_INT128__)
/* The line's slope, divided out once, converts every tick as the division
 * itself does: floor(dt * span_ns / span_ticks), computed here with the
 * 128-bit division - ticks faster and slower than ns, spans up to a day,
 * slopes that are not short binary fractions, the last tick before hi. */
static void test_line_is_the_division(void **state)
{
    (void)state;
    uint64_t seed = 7;
    for (int k = 0; k < 2000; k++) {
        uint64_t span_ticks = 1 + lcg(&seed) % (k % 3 == 0 ? 1000 : 2400000000ull * 86400);
        uint64_t span_ns = 1 + lcg(&seed) % (k % 2 ? span_ticks : 3 * span_ticks);
        struct vt_clock_point lo = {1000 + lcg(&seed), lcg(&seed)};
        struct vt_clock_point hi = {lo.ticks + span_ticks, lo.ns + span_ns};
        struct vt_clock_line line;
        vt_clock_line_init(&line, lo, hi);
        for (int i = 0; i < 100; i++) {
            uint64_t dt = i == 0 ? span_ticks - 1 : lcg(&seed) % span_ticks;
            uint64_t want =
                lo.ns + (uint64_t)((unsigned __int128)dt * span_ns / span_ticks);
            uint64_t got = vt_clock_line_ns(&line, lo.ticks + dt);
            if (got != want)
                fail_msg("span %llu ticks %llu ns, dt %llu: %llu, the division says %llu",
                         (unsigned long long)span_ticks, (unsigned long long)span_ns,
                         (unsigned long long)dt, (unsigned long long)got,
                         (unsigned long long)want);
        }
    }
}

/* A span between two stamps (a free's duration) at the line's rate, also
 * past the bracket's end where an instant would clamp: the division too. */
static void test_span_is_the_division(void **state)
{
    (void)state;
    int was = atomic_exchange(&vt_clock_tsc, 1);
    uint64_t seed = 11;
    for (int k = 0; k < 2000; k++) {
        uint64_t span_ticks = 1 + lcg(&seed) % (k % 3 == 0 ? 1000 : 2400000000ull * 86400);
        uint64_t span_ns = 1 + lcg(&seed) % (k % 2 ? span_ticks : 3 * span_ticks);
        struct vt_clock_point lo = {1000 + lcg(&seed), lcg(&seed)};
        struct vt_clock_point hi = {lo.ticks + span_ticks, lo.ns + span_ns};
        struct vt_clock_line line;
        vt_clock_line_init(&line, lo, hi);
        for (int i = 0; i < 100; i++) {
            uint64_t dt = lcg(&seed) % (10 * span_ticks), from = lo.ticks + lcg(&seed) % 1000;
            uint64_t want = (uint64_t)((unsigned __int128)dt * span_ns / span_ticks);
            assert_true(vt_clock_line_span_ns(&line, from, from + dt) == want);
        }
    }
    struct vt_clock_line flat;
    vt_clock_line_init(&flat, (struct vt_clock_point){10, 5}, (struct vt_clock_point){10, 5});
    assert_true(vt_clock_line_span_ns(&flat, 10, 99) == 0);
    atomic_store(&vt_clock_tsc, 0);
    assert_true(vt_clock_line_span_ns(&flat, 10, 99) == 89); /* the stamps are ns */
    atomic_store(&vt_clock_tsc, was);
}
#endif

/* Consecutive rounds share a point; the slope may change there (the kernel
 * slews CLOCK_MONOTONIC). Converting each tick with its own bracket never
 * goes back, and ticks outside a bracket stay at its ends. */
static void test_monotone_across_points(void **state)
{
    (void)state;
    struct vt_clock_point p[4] = {{1000, 50000}, {241000, 150000}, {241001, 150000},
                                  {481001, 150100}};
    uint64_t last = 0;
    for (uint64_t t = 0; t < 500000; t += 7) {
        size_t seg = t <= p[1].ticks ? 0 : t <= p[2].ticks ? 1 : 2;
        uint64_t ns = vt_clock_interpolate(p[seg], p[seg + 1], t);
        assert_true(ns >= last);
        assert_true(ns >= p[seg].ns && ns <= p[seg + 1].ns);
        last = ns;
    }
    assert_true(vt_clock_interpolate(p[0], p[1], 0) == p[0].ns);
    assert_true(vt_clock_interpolate(p[0], p[1], UINT64_MAX) == p[1].ns);
}

/* Two points with the same ticks (two calibrations in the same tick, or a
 * broken counter) or the same ns: no division by zero, no underflow. */
static void test_degenerate_points(void **state)
{
    (void)state;
    struct vt_clock_point a = {5000, 70000}, b = {5000, 90000};
    uint64_t ticks[] = {0, 4999, 5000, 5001, UINT64_MAX};
    for (size_t i = 0; i < 5; i++) {
        uint64_t ns = vt_clock_interpolate(a, b, ticks[i]);
        assert_true(ns >= a.ns && ns <= b.ns);
    }
    struct vt_clock_point c = {5000, 70000}, d = {9000, 70000};
    for (size_t i = 0; i < 5; i++)
        assert_true(vt_clock_interpolate(c, d, ticks[i]) == 70000);
    /* a later point with fewer ns cannot happen; still nothing below lo */
    struct vt_clock_point e = {5000, 70000}, f = {9000, 60000};
    for (size_t i = 0; i < 5; i++)
        assert_true(vt_clock_interpolate(e, f, ticks[i]) == 70000);
}

/* The real clocks: ticks read around a CLOCK_MONOTONIC read convert to
 * times around it. The slack covers the calibration points' own
 * uncertainty (half the gap between their tick reads, ~50 ns) with room
 * for a preempted test; a wrong rate would be off by 20 us per 0.1%. */
#define REAL_SLACK_NS 10000
#define REAL_SAMPLES 200

static void test_real_clock(void **state)
{
    (void)state;
    vt_clock_setup("tsc", false);
    if (!atomic_load(&vt_clock_tsc))
        skip(); /* not x86-64, or rdtsc forbidden to this process */
    struct { uint64_t before, ns, after; } s[REAL_SAMPLES];
    struct vt_clock_point lo = vt_clock_calibrate();
    for (int i = 0; i < REAL_SAMPLES; i++) {
        struct timespec pause = {0, 100 * 1000};
        nanosleep(&pause, NULL);
        s[i].before = vt_clock_ticks_ordered();
        s[i].ns = vt_clock_monotonic_ns();
        s[i].after = vt_clock_ticks_ordered();
    }
    struct vt_clock_point hi = vt_clock_calibrate();
    assert_true(hi.ticks > lo.ticks && hi.ns > lo.ns);
    assert_true(hi.ns - lo.ns >= REAL_SAMPLES * 100 * 1000ull);
    struct vt_clock_line line;
    vt_clock_line_init(&line, lo, hi);
    for (int i = 0; i < REAL_SAMPLES; i++) {
        uint64_t b = vt_clock_to_ns(&line, s[i].before), a = vt_clock_to_ns(&line, s[i].after);
        if (b > s[i].ns + REAL_SLACK_NS || a + REAL_SLACK_NS < s[i].ns)
            fail_msg("sample %d: monotonic %llu ns, ticks around it convert to %llu..%llu", i,
                     (unsigned long long)s[i].ns, (unsigned long long)b, (unsigned long long)a);
    }
    vt_clock_setup("auto", false);
}

static void test_monotonic_is_identity(void **state)
{
    (void)state;
    vt_clock_setup("monotonic", false);
    assert_string_equal(vt_clock_name(), "monotonic");
    uint64_t before = vt_clock_monotonic_ns();
    uint64_t t = vt_clock_ticks();
    struct vt_clock_point p = vt_clock_calibrate();
    uint64_t after = vt_clock_monotonic_ns();
    assert_true(before <= t && t <= p.ticks && p.ticks <= after);
    assert_true(p.ticks == p.ns);
    struct vt_clock_point lo = {0, 0};
    struct vt_clock_line line;
    vt_clock_line_init(&line, lo, p);
    assert_true(vt_clock_to_ns(&line, t) == t);
    assert_true(vt_clock_to_ns(&line, p.ticks + 12345) == p.ticks + 12345);
    vt_clock_setup("auto", false);
}

static void kernel_clocksource(char *out, size_t len)
{
    out[0] = '\0';
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f) {
        if (!fgets(out, (int)len, f))
            out[0] = '\0';
        fclose(f);
    }
    out[strcspn(out, "\n")] = '\0';
}

static void setup_with_bad_value(void *arg)
{
    (void)arg;
    vt_clock_setup("rdtsc", true);
    vt_say_held(); /* held until the process traces (say.c) */
}

/* auto follows the kernel's clocksource; a bad value is said once and
 * taken as auto; verbose names the clock in effect. */
static void test_choice(void **state)
{
    (void)state;
    char source[64];
    kernel_clocksource(source, sizeof source);
#if defined(__x86_64__)
    bool want_tsc = !strcmp(source, "tsc");
#else
    bool want_tsc = false;
#endif
    vt_clock_setup("auto", false);
    assert_int_equal(atomic_load(&vt_clock_tsc), want_tsc);
    assert_string_equal(vt_clock_name(), want_tsc ? "tsc" : "monotonic");
    vt_clock_setup("monotonic", false);
    assert_int_equal(atomic_load(&vt_clock_tsc), 0);

    char err[1024];
    int status = tc_run_child(setup_with_bad_value, NULL, err, sizeof err);
    assert_int_equal(status, 0);
    assert_int_equal(tc_count_lines_with(err, "VRAMTRACE_CLOCK=rdtsc is not auto, tsc or monotonic"), 1);
    char said[128];
    snprintf(said, sizeof said, "vramtrace: clock %s (VRAMTRACE_CLOCK=auto",
             want_tsc ? "tsc" : "monotonic");
    assert_int_equal(tc_count_lines_with(err, said), 1);
    vt_clock_setup("auto", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_at_points),
        cmocka_unit_test(test_follows_a_line),
        cmocka_unit_test(test_monotone_across_points),
#if defined(__SIZEOF_INT128__)
        cmocka_unit_test(test_line_is_the_division),
        cmocka_unit_test(test_span_is_the_division),
#endif
        cmocka_unit_test(test_degenerate_points),
        cmocka_unit_test(test_real_clock),
        cmocka_unit_test(test_monotonic_is_identity),
        cmocka_unit_test(test_choice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
