/*
 * The HTML report's downsampled timeline (analyzer/run/timeline.c)
 * against brute force: a pseudo-random trace of allocations and frees on
 * three stacks, with phases, read once with its changes noted and the
 * timeline fed from the notes (timeline_notes.h); each
 * column's maximum (value, first time, tracked sites' bytes then) and last
 * value must be exactly what a replay of the event list in the test says,
 * the peak must be kept exactly, and the points and phase spans must stay
 * within the column budget.
 */
#define _GNU_SOURCE /* asprintf */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis.h"
#include "timeline_notes.h"
#include "trace_builder.h"

#define MiB (1ull << 20)
#define EVENTS 20000
#define BUCKETS 37
#define SLOTS 64

struct truth {
    uint64_t t[EVENTS], total[EVENTS], site[EVENTS][3]; /* after each event */
    size_t n;
};

static struct truth truth;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static char *write_trace(void)
{
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4242, 7, 64ull << 30);
    vt_encode_string(&b.enc, "step", 4); /* string 1 */
    uint64_t seed = 88172645463325252ull;
    uint64_t live_size[SLOTS] = {0};
    int live_stack[SLOTS];
    uint64_t site[3] = {0}, total = 0;
    uint64_t t = 1000;
    bool open = false;
    for (size_t i = 0; i < EVENTS; i++) {
        t += 1 + rnd(&seed) % 50; /* several events may share a column */
        size_t slot = rnd(&seed) % SLOTS;
        if (live_size[slot]) {
            tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, t, 0, 0x1000000ull * (slot + 1));
            total -= live_size[slot];
            site[live_stack[slot]] -= live_size[slot];
            live_size[slot] = 0;
        } else {
            int stack = (int)(rnd(&seed) % 3);
            uint64_t size = (1 + rnd(&seed) % 64) * MiB;
            tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, t, 0, 0x1000000ull * (slot + 1), size,
                     (uint64_t)(TB_STACK_A + stack));
            live_size[slot] = size;
            live_stack[slot] = stack;
            total += size;
            site[stack] += size;
        }
        truth.t[i] = t;
        truth.total[i] = total;
        memcpy(truth.site[i], site, sizeof site);
        if (i % 1000 == 500) { /* a phase now and then */
            if (open)
                vt_encode_range_pop(&b.enc, TB_MAIN, t, 0);
            else
                vt_encode_range_push(&b.enc, TB_MAIN, t, 0, 1);
            open = !open;
        }
        if (i % 2000 == 1999)
            tb_flush(&b);
    }
    truth.n = EVENTS;
    tb_trailer(&b, t);
    char *path;
    assert_true(asprintf(&path, "%s/timeline.vtrace", tb_tmpdir) > 0);
    assert_int_equal(tb_write(&b, path), 0);
    tb_free(&b);
    return path;
}

static void test_columns_against_brute_force(void **state)
{
    (void)state;
    char *path = write_trace();
    FILE *devnull = fopen("/dev/null", "w");

    /* the one read, noting the changes: the span and the peak */
    struct vt_analysis a;
    struct vt_timeline_notes tn;
    assert_true(vt_timeline_notes_init(&tn, 1));
    assert_int_equal(vt_analysis_run_with(&a, &path, 1, devnull, vt_timeline_notes_prepare, &tn),
                     0);
    struct vt_replay *rp = &a.inputs[0].replay;
    struct vt_ledger *l = vt_replay_ledger(rp, 0, VT_CAT_DEVICE);
    assert_non_null(l);
    uint64_t peak = l->peak.peak_bytes, peak_time = l->peak.peak_time_ns;

    struct vt_timeline tl;
    vt_timeline_init(&tl, rp->first_time_ns, rp->last_time_ns, BUCKETS);
    /* follow stacks C and A (in that order), not B */
    struct vt_timeline_site sites[2] = {{TB_STACK_C, TB_MAIN}, {TB_STACK_A, TB_MAIN}};
    assert_true(vt_timeline_add_series(&tl, 0, VT_CAT_DEVICE, sites, 2));
    /* ... then the timeline fed from the notes */
    bool chosen = true;
    assert_true(vt_timelines_play(&tn, &a, &chosen, &tl));
    vt_timeline_notes_free(&tn);
    vt_analysis_free(&a);
    fclose(devnull);
    assert_false(tl.out_of_memory);

    const struct vt_column_series *s = &tl.series[0].cols;
    assert_true(s->npoints <= 2 * BUCKETS + 2);
    assert_true(s->npoints > BUCKETS); /* nearly every column ends below its maximum */
    assert_int_equal(s->t[0], tl.grid.t0);
    assert_int_equal(s->total[0], 0);

    /* brute force: each column's first maximum and its last value */
    size_t p_at = 1;
    uint64_t best = 0;
    size_t best_at = 0;
    for (size_t i = 0; i < truth.n;) {
        uint64_t col = (truth.t[i] - tl.grid.t0) / tl.grid.width;
        size_t max_i = i, last_i = i;
        for (; i < truth.n && (truth.t[i] - tl.grid.t0) / tl.grid.width == col; i++) {
            if (truth.total[i] > truth.total[max_i])
                max_i = i;
            last_i = i;
        }
        assert_true(p_at < s->npoints);
        assert_int_equal(s->t[p_at], truth.t[max_i]);
        assert_int_equal(s->total[p_at], truth.total[max_i]);
        assert_int_equal(s->parts[p_at * 2 + 0], truth.site[max_i][2]); /* C */
        assert_int_equal(s->parts[p_at * 2 + 1], truth.site[max_i][0]); /* A */
        if (s->total[p_at] > best) {
            best = s->total[p_at];
            best_at = p_at;
        }
        p_at++;
        if (truth.total[last_i] != truth.total[max_i] || truth.t[last_i] != truth.t[max_i]) {
            assert_int_equal(s->t[p_at], truth.t[last_i]);
            assert_int_equal(s->total[p_at], truth.total[last_i]);
            assert_int_equal(s->parts[p_at * 2 + 0], truth.site[last_i][2]);
            p_at++;
        }
    }
    assert_int_equal(p_at, s->npoints); /* the last event is at t1: no end point */
    /* the peak, exactly */
    assert_int_equal(best, peak);
    assert_int_equal(s->t[best_at], peak_time);

    /* the phase: opened 10 times, closed 10 times, spans within budget */
    assert_int_equal(tl.nphases, 1);
    assert_true(tl.phases[0].nspans >= 1 && tl.phases[0].nspans <= 10);
    for (size_t k = 0; k < tl.phases[0].nspans; k++)
        assert_true(tl.phases[0].spans[2 * k] <= tl.phases[0].spans[2 * k + 1]);
    vt_timeline_free(&tl);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_columns_against_brute_force),
    };
    return cmocka_run_group_tests(tests, tb_tmpdir_setup, tb_tmpdir_teardown);
}
