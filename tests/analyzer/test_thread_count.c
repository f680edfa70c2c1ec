/* The analysis's thread count (analyzer/run/thread_count.h): the CPUs
 * free of other work, one for small work or a busy machine, and
 * VRAMTRACE_ANALYZER_THREADS over both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "thread_count.h"

#define BIG (64ull << 20)

static void test_quiet_machine_uses_its_cpus(void **state)
{
    (void)state;
    assert_int_equal(vt_threads_for(NULL, 2, 0.0, BIG), 2);
    assert_int_equal(vt_threads_for(NULL, 2, 0.4, BIG), 2);
    assert_int_equal(vt_threads_for(NULL, 16, 0.2, BIG), 16);
    assert_int_equal(vt_threads_for(NULL, 16, 3.7, BIG), 12);
}

static void test_loaded_machine_takes_one(void **state)
{
    (void)state;
    /* a core mostly busy with another program: a second thread only shares it */
    assert_int_equal(vt_threads_for(NULL, 2, 0.6, BIG), 1);
    assert_int_equal(vt_threads_for(NULL, 2, 1.0, BIG), 1);
    assert_int_equal(vt_threads_for(NULL, 2, 9.5, BIG), 1);
    assert_int_equal(vt_threads_for(NULL, 16, 40.0, BIG), 1);
    assert_int_equal(vt_threads_for(NULL, 1, 0.0, BIG), 1);
}

static void test_busy_is_what_both_counts_see(void **state)
{
    (void)state;
    /* the average still counts the last run's CPU; nothing else runs now */
    assert_true(vt_busy_cpus(1.15, 0) == 0);
    assert_int_equal(vt_threads_for(NULL, 2, vt_busy_cpus(1.15, 0), BIG), 2);
    /* busy by both counts: busy */
    assert_true(vt_busy_cpus(9.5, 3) == 3);
    assert_int_equal(vt_threads_for(NULL, 2, vt_busy_cpus(9.5, 3), BIG), 1);
    assert_int_equal(vt_threads_for(NULL, 2, vt_busy_cpus(9.5, 1), BIG), 1);
    /* a load just begun: the average does not see it yet, and a machine is
     * busy only by both counts */
    assert_true(vt_busy_cpus(0.2, 2) == 0.2);
    /* samples unreadable: the average alone */
    assert_true(vt_busy_cpus(3.7, -1) == 3.7);
}

static void test_small_work_takes_one(void **state)
{
    (void)state;
    assert_int_equal(vt_threads_for(NULL, 16, 0.0, VT_THREADS_MIN_BYTES - 1), 1);
    assert_int_equal(vt_threads_for(NULL, 16, 0.0, VT_THREADS_MIN_BYTES), 16);
}

static void test_variable_decides(void **state)
{
    (void)state;
    assert_int_equal(vt_threads_for("5", 2, 9.5, 1), 5);
    assert_int_equal(vt_threads_for("1", 16, 0.0, BIG), 1);
    /* not a count: as if unset */
    assert_int_equal(vt_threads_for("0", 2, 0.0, BIG), 2);
    assert_int_equal(vt_threads_for("two", 2, 9.5, BIG), 1);
    assert_int_equal(vt_threads_for("", 2, 0.0, BIG), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_machine_uses_its_cpus),
        cmocka_unit_test(test_loaded_machine_takes_one),
        cmocka_unit_test(test_busy_is_what_both_counts_see),
        cmocka_unit_test(test_small_work_takes_one),
        cmocka_unit_test(test_variable_decides),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
