/* Replay, ledgers, failures, phases and the multi-process GPU merge, on
 * synthetic traces whose figures are checked by hand. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis.h"
#include "trace_builder.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

/* Writes b to tb_tmpdir/name and analyzes the given files. */
static char *save(struct tb *b, const char *name)
{
    char *path;
    assert_true(asprintf(&path, "%s/%s", tb_tmpdir, name) > 0);
    assert_int_equal(tb_write(b, path), 0);
    tb_free(b);
    return path;
}

static void analyze(struct vt_analysis *a, char **paths, size_t n)
{
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(vt_analysis_run(a, paths, n, devnull), 0);
    fclose(devnull);
}

static void test_categories(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 100, 1, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x10000, 100 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_VMM_PHYSICAL, TB_MAIN, 20, 0, 0x77, 50 * MiB, TB_STACK_B);
    tb_alloc(&b, VT_KIND_VA_RESERVE, TB_MAIN, 30, 0, 0x900000000, 4 * GiB, TB_STACK_B);
    tb_alloc(&b, VT_KIND_VA_MAP, TB_MAIN, 31, 0, 0x900000000, 50 * MiB, TB_STACK_B);
    tb_alloc(&b, VT_KIND_MANAGED, TB_MAIN, 40, 0, 0x20000, 10 * MiB, TB_STACK_C);
    tb_alloc(&b, VT_KIND_HOST_PINNED, TB_MAIN, 50, -1, 0x30000, 5 * MiB, TB_STACK_C);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 60, 0, 0x10000);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 61, 0, 0xdead);   /* never seen */
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 70, 0, 0x40000, 30 * MiB, TB_STACK_A);
    /* cuMemRetainAllocationHandle (size 0, device unknown), then two
     * releases: the memory goes with the second. */
    tb_alloc(&b, VT_KIND_VMM_PHYSICAL, TB_MAIN, 71, -1, 0x77, 0, TB_STACK_B);
    tb_free_mem(&b, VT_KIND_VMM_PHYSICAL, TB_MAIN, 72, -1, 0x77);
    tb_trailer(&b, 80);
    char *path = save(&b, "cat.vtrace");
    struct vt_analysis a;
    analyze(&a, &path, 1);
    struct vt_replay *rp = &a.inputs[0].replay;
    struct vt_ledger *dev = vt_replay_ledger(rp, 0, VT_CAT_DEVICE);
    assert_non_null(dev);
    assert_int_equal(dev->peak.peak_bytes, 150 * MiB); /* device + VMM physical */
    assert_int_equal(dev->peak.peak_time_ns, 20);
    assert_int_equal(dev->sites.total_bytes, 80 * MiB); /* one reference remains */
    assert_int_equal(vt_replay_ledger(rp, 0, VT_CAT_MANAGED)->peak.peak_bytes, 10 * MiB);
    assert_int_equal(vt_replay_ledger(rp, -1, VT_CAT_HOST_PINNED)->peak.peak_bytes, 5 * MiB);
    assert_int_equal(rp->nledgers, 3);                   /* reservations/maps in none */
    assert_int_equal(rp->unmatched_frees, 1);
    assert_int_equal(rp->replaced_allocs, 0);
    assert_int_equal(rp->untracked_events, 2);
    vt_analysis_free(&a);
    free(path);
}

static void test_oom_verdicts(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 200, 2, 8 * GiB);
    /* Exhausted: holds 6 GiB of 8, 1 GiB free, asks 4; then a flush of
     * 2 GiB and a successful retry. */
    for (int i = 0; i < 3; i++)
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10 + i, 0, 0x100000000ull * (i + 1), 2 * GiB,
                 i == 0 ? TB_STACK_A : TB_STACK_B);
    tb_fail(&b, VT_KIND_DEVICE, TB_MAIN, 100, 0, 4 * GiB, TB_STACK_C, 1 * GiB, 8 * GiB);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 110, 0, 0x100000000ull);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 120, 0, 0x900000000ull, 4 * GiB, TB_STACK_C);
    /* Fragmented: 5 GiB free, asks 4 GiB. Then a failing retry. */
    tb_fail(&b, VT_KIND_DEVICE, TB_MAIN, 5000000000ull, 0, 4 * GiB, TB_STACK_C, 5 * GiB, 8 * GiB);
    tb_fail(&b, VT_KIND_DEVICE, TB_MAIN, 5000000100ull, 0, 4 * GiB, TB_STACK_C, 5 * GiB, 8 * GiB);
    tb_trailer(&b, 6000000000ull);
    char *p1 = save(&b, "oom1.vtrace");

    /* Contended: holds 1 GiB, others hold 6 GiB; nothing follows. */
    tb_init(&b);
    tb_standard_header(&b, 201, 3, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 1 * GiB, TB_STACK_A);
    tb_fail(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 20, 0, 2 * GiB, TB_STACK_B, 1 * GiB, 8 * GiB);
    tb_fail(&b, VT_KIND_DEVICE, TB_MAIN, 30, 0, 2 * GiB, TB_STACK_B, 0, 0); /* no driver info */
    tb_flush(&b);
    char *p2 = save(&b, "oom2.vtrace"); /* no trailer: truncated */

    struct vt_analysis a;
    char *paths[2] = {p1, p2};
    analyze(&a, paths, 2);
    struct vt_ledger *l = vt_replay_ledger(&a.inputs[0].replay, 0, VT_CAT_DEVICE);
    assert_int_equal(l->nooms, 3);
    assert_int_equal(l->ooms[0].verdict, VT_VERDICT_EXHAUSTED);
    assert_int_equal(l->ooms[0].process_bytes, 6 * GiB);
    assert_int_equal(l->ooms[0].outside_bytes, 1 * GiB);
    assert_int_equal(l->ooms[0].released_bytes, 2 * GiB);
    assert_int_equal(l->ooms[0].released_count, 1);
    assert_int_equal(l->ooms[0].retry, VT_RETRY_SUCCEEDED);
    assert_int_equal(l->ooms[0].ntop, 2); /* sites A (2 GiB) and B (2 x 2 GiB) */
    assert_int_equal(l->ooms[0].top[0].stack, TB_STACK_B);
    assert_int_equal(l->ooms[0].top[0].bytes, 4 * GiB);
    assert_int_equal(l->ooms[0].top[0].count, 2);
    assert_int_equal(l->ooms[0].kind_bytes[VT_KIND_DEVICE], 6 * GiB);
    assert_int_equal(l->ooms[1].verdict, VT_VERDICT_FRAGMENTED);
    assert_int_equal(l->ooms[1].retry, VT_RETRY_FAILED);
    assert_int_equal(l->ooms[2].retries, 1);
    assert_true(l->ooms[2].retry_of_previous);
    assert_int_equal(l->ooms[2].retry, VT_RETRY_NOT_SEEN);
    assert_int_equal(l->peak.peak_bytes, 8 * GiB);
    struct vt_ledger *l2 = vt_replay_ledger(&a.inputs[1].replay, 0, VT_CAT_DEVICE);
    assert_int_equal(l2->nooms, 2);
    assert_int_equal(l2->ooms[0].verdict, VT_VERDICT_CONTENDED);
    assert_int_equal(l2->ooms[0].outside_bytes, 6 * GiB);
    assert_int_equal(l2->ooms[0].thread, TB_AUTOGRAD);
    assert_int_equal(l2->ooms[1].verdict, VT_VERDICT_UNKNOWN);
    assert_true(vt_reader_truncated(a.inputs[1].reader));
    vt_analysis_free(&a);
    free(p1);
    free(p2);
}

/* docs/internals/REPORT_INTERNALS.md's decision table ("Verdicts"), row by
 * row, with each boundary on both sides. Units are arbitrary (T = 10 unless said). */
static void test_verdict_rule(void **state)
{
    (void)state;
    const uint64_t M = 1ull << 20;
    static const struct {
        const char *why;
        uint64_t r, f, t, p, ca, k;
        bool info;
        enum vt_verdict want;
    } rows[] = {
        {"no driver figures", 4, 1, 10, 2, 0, 0, false, VT_VERDICT_UNKNOWN},
        {"R > T", 11, 9, 10, 0, 0, 0, true, VT_VERDICT_LARGER_THAN_DEVICE},
        {"R = T is not larger than the device", 10, 0, 10, 8, 0, 0, true, VT_VERDICT_OVERSIZED},
        {"F >= R", 4, 5, 10, 1, 0, 0, true, VT_VERDICT_FRAGMENTED},
        {"F + Ca = R", 4, 1, 10, 6, 3, 0, true, VT_VERDICT_FRAGMENTED},
        {"F + Ca = R - 1", 4, 1, 10, 6, 2, 0, true, VT_VERDICT_EXHAUSTED},
        {"X covers the shortfall and exceeds own live", 4, 1, 10, 2, 0, 0, true,
         VT_VERDICT_CONTENDED},
        {"X = shortfall", 6, 2, 10, 2, 0, 2, true, VT_VERDICT_CONTENDED},
        {"X = shortfall - 1 (R > P + K)", 7, 2, 10, 2, 0, 2, true, VT_VERDICT_OVERSIZED},
        {"X = own live: not contended", 4, 1, 10, 4, 0, 1, true, VT_VERDICT_EXHAUSTED},
        {"X = own live + 1", 4, 1, 10, 3, 0, 1, true, VT_VERDICT_CONTENDED},
        {"the cache counts as not live", 4, 1, 10, 6, 2, 0, true, VT_VERDICT_EXHAUSTED},
        {"R = P + K: exhausted", 9, 1, 10, 7, 0, 2, true, VT_VERDICT_EXHAUSTED},
        {"R = P + K + 1: oversized", 10, 1, 10, 7, 0, 2, true, VT_VERDICT_OVERSIZED},
        {"unmeasured context counts with the others", 4, 1, 10, 2, 0, 0, true,
         VT_VERDICT_CONTENDED},
        {"measured context is this process's", 4, 1, 10, 2, 0, 6, true, VT_VERDICT_EXHAUSTED},
        /* 23.16 GiB asked on 24 GiB, 23.10 GiB free, 520 MiB held */
        {"one huge request", 23716 * M, 23654 * M, 24576 * M, 520 * M, 0, 0, true,
         VT_VERDICT_OVERSIZED},
        /* examples/deepspeed_init_oom: 6.93 of 31.5 GiB, 6.80 free, 24.32 held */
        {"the job's own memory", 7096 * M, 6963 * M, 32256 * M, 24904 * M, 0, 0, true,
         VT_VERDICT_EXHAUSTED},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct vt_oom_numbers n = {.requested = rows[i].r, .free_bytes = rows[i].f,
                                   .total_bytes = rows[i].t, .process_bytes = rows[i].p,
                                   .cached_bytes = rows[i].ca, .context_bytes = rows[i].k,
                                   .driver_info = rows[i].info};
        enum vt_verdict got = vt_oom_verdict_of(&n);
        if (got != rows[i].want)
            fail_msg("%s: %s, want %s", rows[i].why, vt_verdict_name(got),
                     vt_verdict_name(rows[i].want));
    }
}

/* A failure names the other traced processes on its GPU; a failure of the
 * same size on another thread is not a retry; a phase opened before the
 * first allocation counts, and one still open at the end says so. */
static void test_oom_others_and_requests(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 300, 7, 8 * GiB);
    vt_encode_string(&b.enc, "train", 5); /* 1 */
    vt_encode_range_push(&b.enc, TB_MAIN, 5, 0, 1); /* before any allocation, never popped */
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 1 * GiB, TB_STACK_A);
    tb_fail(&b, VT_KIND_DEVICE, TB_MAIN, 50, 0, 4 * GiB, TB_STACK_B, 1 * GiB, 8 * GiB);
    tb_fail(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 60, 0, 4 * GiB, TB_STACK_B, 1 * GiB, 8 * GiB);
    tb_trailer(&b, 100);
    char *pa = save(&b, "others_a.vtrace");
    tb_init(&b);
    tb_standard_header(&b, 301, 7, 8 * GiB); /* the same GPU */
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 20, 0, 0x1000, 6 * GiB, TB_STACK_C);
    tb_trailer(&b, 100);
    char *pb = save(&b, "others_b.vtrace");

    struct vt_analysis a;
    char *paths[2] = {pa, pb};
    analyze(&a, paths, 2);
    struct vt_ledger *l = vt_replay_ledger(&a.inputs[0].replay, 0, VT_CAT_DEVICE);
    assert_int_equal(l->nooms, 2);
    const struct vt_oom *o = &l->ooms[0];
    assert_int_equal(o->verdict, VT_VERDICT_CONTENDED);
    assert_int_equal(o->nothers, 1);
    assert_int_equal(o->others[0].input, 1);
    assert_int_equal(o->others[0].bytes, 6 * GiB);
    assert_false(l->ooms[1].retry_of_previous); /* another thread */
    assert_int_equal(l->ooms[0].retry, VT_RETRY_NOT_SEEN);
    assert_int_equal(vt_oom_request_end(l, 0), 1);
    assert_int_equal(vt_ledger_failed_requests(l), 2);
    const struct vt_phase_peak *p = vt_ledger_phase(l, 1);
    assert_non_null(p);
    assert_int_equal(p->opened, 1);
    assert_true(p->open_at_exit);
    assert_int_equal(p->state.peak_bytes, 1 * GiB);
    vt_analysis_free(&a);
    free(pa);
    free(pb);
}

static void test_phases(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 300, 4, 8 * GiB);
    vt_encode_string(&b.enc, "step", 4);     /* 1 */
    vt_encode_string(&b.enc, "forward", 7);  /* 2 */
    vt_encode_string(&b.enc, "backward", 8); /* 3 */
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 10 * MiB, TB_STACK_A); /* weights */
    vt_encode_range_push(&b.enc, TB_MAIN, 20, 0, 1);
    vt_encode_range_push(&b.enc, TB_MAIN, 30, 0, 2);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 40, 0, 0x2000, 30 * MiB, TB_STACK_B);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 50, 0, 0x3000, 20 * MiB, TB_STACK_B);
    vt_encode_range_pop(&b.enc, TB_MAIN, 60, 0);
    tb_flush(&b);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 70, 0, 0x2000);
    /* backward as a start/end range ending on another thread */
    vt_encode_range_start(&b.enc, TB_MAIN, 80, 5, 0, 3);
    tb_alloc(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 90, 0, 0x4000, 25 * MiB, TB_STACK_C);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 95, 0, 0x4000);
    vt_encode_range_end(&b.enc, TB_AUTOGRAD, 100, 5);
    vt_encode_range_pop(&b.enc, TB_MAIN, 110, 0);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 120, 0, 0x5000, 100 * MiB, TB_STACK_A); /* no phase */
    tb_trailer(&b, 130);
    char *path = save(&b, "phases.vtrace");
    struct vt_analysis a;
    analyze(&a, &path, 1);
    struct vt_ledger *l = vt_replay_ledger(&a.inputs[0].replay, 0, VT_CAT_DEVICE);
    const struct vt_phase_peak *fwd = vt_ledger_phase(l, 2);
    const struct vt_phase_peak *bwd = vt_ledger_phase(l, 3);
    const struct vt_phase_peak *step = vt_ledger_phase(l, 1);
    assert_non_null(fwd);
    assert_int_equal(fwd->state.peak_bytes, 60 * MiB);
    assert_int_equal(fwd->state.peak_time_ns, 50);
    assert_int_equal(bwd->state.peak_bytes, 55 * MiB);  /* 10 + 20 + 25 */
    assert_int_equal(bwd->state.peak_time_ns, 90);
    assert_int_equal(step->state.peak_bytes, 60 * MiB);
    assert_int_equal(l->peak.peak_bytes, 130 * MiB);
    /* backward's breakdown: C 25 MiB on the autograd thread, B 20, A 10 */
    struct vt_site_bytes top[4];
    size_t n = vt_sites_top(&l->sites, &bwd->state, top, 4);
    assert_int_equal(n, 3);
    assert_int_equal(top[0].stack, TB_STACK_C);
    assert_int_equal(top[0].thread, TB_AUTOGRAD);
    assert_int_equal(top[0].bytes, 25 * MiB);
    assert_int_equal(top[1].bytes, 20 * MiB);
    assert_int_equal(top[2].bytes, 10 * MiB);
    assert_int_equal(a.inputs[0].replay.unmatched_pops, 0);
    vt_analysis_free(&a);
    free(path);
}

static void test_shared_gpu(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 401, 9, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 100 * MiB, TB_STACK_A);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 30, 0, 0x1000);
    tb_trailer(&b, 50);
    char *dir;
    assert_true(asprintf(&dir, "%s/gpu", tb_tmpdir) > 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    char *p1 = save(&b, "gpu/a.vtrace");
    tb_init(&b);
    tb_standard_header(&b, 402, 9, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 20, 0, 0x1000, 200 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 40, 0, 0x2000, 50 * MiB, TB_STACK_A);
    tb_trailer(&b, 50);
    char *p2 = save(&b, "gpu/b.vtrace");
    tb_init(&b);
    tb_standard_header(&b, 403, 7, 8 * GiB); /* another GPU */
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 25, 0, 0x1000, 1 * GiB, TB_STACK_A);
    tb_trailer(&b, 50);
    char *p3 = save(&b, "gpu/c.vtrace");
    struct vt_analysis a;
    analyze(&a, &dir, 1); /* the directory: every *.vtrace in it */
    assert_int_equal(a.ninputs, 3);
    assert_int_equal(a.ngpus, 2);
    const struct vt_gpu *g = vt_analysis_gpu_of(&a, 0, 0);
    assert_non_null(g);
    assert_int_equal(g->peak_bytes, 300 * MiB);
    assert_int_equal(g->peak_time_ns, 20);
    assert_int_equal(vt_gpu_peak_of(g, 0), 100 * MiB);
    assert_int_equal(vt_gpu_peak_of(g, 1), 200 * MiB);
    assert_ptr_equal(vt_analysis_gpu_of(&a, 1, 0), g);
    assert_int_equal(vt_analysis_gpu_of(&a, 2, 0)->peak_bytes, 1 * GiB);
    assert_int_equal(vt_replay_ledger(&a.inputs[1].replay, 0, VT_CAT_DEVICE)->peak.peak_bytes,
                     250 * MiB);
    vt_analysis_free(&a);
    unlink(p1);
    unlink(p2);
    unlink(p3);
    free(p1);
    free(p2);
    free(p3);
    rmdir(dir);
    free(dir);
}

/* Two processes on one GPU that only allocate: in the merge's second
 * window (the first placed the GPU) every note raises its total, and
 * each process's notes go as one change (group_merge.c, hand_rising). The
 * peak is the last rise of all, 6 MiB at 5,000,300 ns (the first's), each
 * process's bytes then those of its last rise: handed in file order, the
 * second's 2 MiB would come last and date the peak 5,000,100; dated by its
 * last note (a 0-byte allocation), 5,000,500. */
static void test_shared_gpu_rising(void **state)
{
    (void)state;
    char *dir;
    assert_true(asprintf(&dir, "%s/rising", tb_tmpdir) > 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 701, 9, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 1 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 5000050, 0, 0x2000, 1 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 5000300, 0, 0x3000, 1 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 5000500, 0, 0x4000, 0, TB_STACK_A);
    tb_trailer(&b, 5000600);
    char *p1 = save(&b, "rising/a.vtrace");
    tb_init(&b);
    tb_standard_header(&b, 702, 9, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 20, 0, 0x1000, 1 * MiB, TB_STACK_A);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 5000100, 0, 0x2000, 2 * MiB, TB_STACK_A);
    tb_trailer(&b, 5000600);
    char *p2 = save(&b, "rising/b.vtrace");
    struct vt_analysis a;
    analyze(&a, &dir, 1);
    assert_int_equal(a.ninputs, 2);
    assert_int_equal(a.ngpus, 1);
    const struct vt_gpu *g = vt_analysis_gpu_of(&a, 0, 0);
    assert_non_null(g);
    assert_int_equal(g->peak_bytes, 6 * MiB);
    assert_int_equal(g->peak_time_ns, 5000300);
    assert_int_equal(vt_gpu_peak_of(g, 0), 3 * MiB);
    assert_int_equal(vt_gpu_peak_of(g, 1), 3 * MiB);
    vt_analysis_free(&a);
    unlink(p1);
    unlink(p2);
    free(p1);
    free(p2);
    rmdir(dir);
    free(dir);
}

/* A free counts on its GPU until it returned (format version 5: called at
 * 20, returned at 40): another process's allocation at 25 comes before it,
 * while the process's own reuse of the address, at 30 on another thread
 * and after the free in its file, comes after it: never both blocks of
 * the address at once. Placed at its call, the free would give 250 MiB;
 * the reuse before the free, 350 MiB. */
static void test_shared_gpu_free_duration(void **state)
{
    (void)state;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 501, 11, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 100 * MiB, TB_STACK_A);
    tb_free_lasting(&b, VT_KIND_DEVICE, TB_MAIN, 20, 20, 0, 0x1000);
    tb_alloc(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 30, 0, 0x1000, 50 * MiB, TB_STACK_B);
    tb_free_lasting(&b, VT_KIND_DEVICE, TB_AUTOGRAD, 60, 0, 0, 0x1000);
    tb_trailer(&b, 100);
    char *dir;
    assert_true(asprintf(&dir, "%s/gpudur", tb_tmpdir) > 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    char *p1 = save(&b, "gpudur/a.vtrace");
    tb_init(&b);
    tb_standard_header(&b, 502, 11, 8 * GiB);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 25, 0, 0x9000, 200 * MiB, TB_STACK_A);
    tb_free_lasting(&b, VT_KIND_DEVICE, TB_MAIN, 50, 0, 0, 0x9000);
    tb_trailer(&b, 100);
    char *p2 = save(&b, "gpudur/b.vtrace");
    struct vt_analysis a;
    analyze(&a, &dir, 1);
    assert_int_equal(a.ngpus, 1);
    const struct vt_gpu *g = vt_analysis_gpu_of(&a, 0, 0);
    assert_non_null(g);
    assert_int_equal(g->peak_bytes, 300 * MiB);
    assert_int_equal(g->peak_time_ns, 25);
    assert_int_equal(g->now_bytes, 0);
    /* each process's own ledger in file order: the free, then the reuse */
    assert_int_equal(vt_replay_ledger(&a.inputs[0].replay, 0, VT_CAT_DEVICE)->peak.peak_bytes,
                     100 * MiB);
    assert_int_equal(a.inputs[0].replay.replaced_allocs, 0);
    assert_int_equal(a.inputs[0].replay.unmatched_frees, 0);
    vt_analysis_free(&a);
    unlink(p1);
    unlink(p2);
    free(p1);
    free(p2);
    rmdir(dir);
    free(dir);
}

/* Six processes on six GPUs: the GPUs' table grows (it starts with room for
 * four) while the first process's ledger, placed before, goes on changing;
 * its GPU's totals must follow the table to its new place. */
static void test_many_gpus(void **state)
{
    (void)state;
    char *dir;
    assert_true(asprintf(&dir, "%s/gpus6", tb_tmpdir) > 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    char *paths[6];
    for (int i = 0; i < 6; i++) {
        struct tb b;
        tb_init(&b);
        tb_standard_header(&b, 500 + (uint64_t)i, (uint8_t)(20 + i), 8 * GiB);
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10 + (uint64_t)i, 0, 0x1000,
                 (uint64_t)(i + 1) * MiB, TB_STACK_A);
        if (i == 0) { /* after every GPU is known */
            tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 30, 0, 0x2000, 50 * MiB, TB_STACK_A);
            tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, 40, 0, 0x1000);
            tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 45, 0, 0x3000, MiB / 2, TB_STACK_A);
        }
        tb_trailer(&b, 50);
        char name[32];
        snprintf(name, sizeof name, "gpus6/%d.vtrace", i);
        paths[i] = save(&b, name);
    }
    struct vt_analysis a;
    analyze(&a, &dir, 1);
    assert_int_equal(a.ninputs, 6);
    assert_int_equal(a.ngpus, 6);
    const struct vt_gpu *g = vt_analysis_gpu_of(&a, 0, 0);
    assert_non_null(g);
    assert_int_equal(g->peak_bytes, 51 * MiB);
    assert_int_equal(g->peak_time_ns, 30);
    assert_int_equal(g->now_bytes, 50 * MiB + MiB / 2);
    assert_int_equal(vt_gpu_now_of(g, 0), 50 * MiB + MiB / 2);
    assert_int_equal(vt_gpu_peak_of(g, 0), 51 * MiB);
    for (size_t i = 1; i < 6; i++)
        assert_int_equal(vt_analysis_gpu_of(&a, i, 0)->peak_bytes, (i + 1) * MiB);
    vt_analysis_free(&a);
    for (int i = 0; i < 6; i++) {
        unlink(paths[i]);
        free(paths[i]);
    }
    rmdir(dir);
    free(dir);
}

/* Files open now. */
static size_t open_files(void)
{
    size_t n = 0;
    for (int fd = 0; fd < 4096; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

struct gone_ctx {
    size_t files_before;  /* open before the run */
    size_t files_at_prepare;
    char *gone, *replaced, *other;
};

/* Every trace is opened and its head read by now, and no file of them is
 * open: one is deleted, another replaced by a different file. */
static void take_away(void *ctx, struct vt_input *in)
{
    struct gone_ctx *g = ctx;
    if (in->index != 0)
        return;
    g->files_at_prepare = open_files();
    assert_int_equal(unlink(g->gone), 0);
    assert_int_equal(rename(g->other, g->replaced), 0);
}

/* Traces are opened one at a time, then read group by group: a file
 * deleted or replaced between the first look and the replay is that
 * file's error ("FILE: byte N: reason", status 2, skipped), the others are
 * reported; no file stays open once read. */
static void test_file_gone_before_replay(void **state)
{
    (void)state;
    char *dir;
    assert_true(asprintf(&dir, "%s/gone", tb_tmpdir) > 0);
    assert_int_equal(mkdir(dir, 0700), 0);
    char *paths[4];
    for (int i = 0; i < 4; i++) {
        struct tb b;
        tb_init(&b);
        tb_standard_header(&b, 600 + (uint64_t)i, 31, 8 * GiB); /* one GPU */
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10 + (uint64_t)i, 0, 0x1000,
                 (uint64_t)(i + 1) * MiB, TB_STACK_A);
        tb_trailer(&b, 50);
        char name[32];
        snprintf(name, sizeof name, i < 3 ? "gone/%d.vtrace" : "%d.other", i);
        paths[i] = save(&b, name);
    }
    struct gone_ctx g = {.gone = paths[1], .replaced = paths[2], .other = paths[3]};
    char *msg = NULL;
    size_t msg_len = 0;
    FILE *err = open_memstream(&msg, &msg_len);
    assert_non_null(err);
    g.files_before = open_files();
    struct vt_analysis a;
    assert_int_equal(vt_analysis_run_with(&a, &dir, 1, err, take_away, &g), 2);
    assert_int_equal(open_files(), g.files_before);
    assert_int_equal(g.files_at_prepare, g.files_before);
    fclose(err);
    assert_int_equal(a.ninputs, 3);
    assert_int_equal(a.skipped, 2);
    assert_int_equal(a.not_read, 0);
    char *want;
    assert_true(asprintf(&want,
                         "vramtrace: %s: byte 16: cannot open it again to read on: "
                         "No such file or directory\n"
                         "vramtrace: %s: byte 16: another file took its place since it was "
                         "first opened\n",
                         paths[1], paths[2]) > 0);
    assert_string_equal(msg, want);
    free(want);
    free(msg);
    const struct vt_gpu *gpu = vt_analysis_gpu_of(&a, 0, 0);
    assert_non_null(gpu);
    assert_int_equal(gpu->peak_bytes, 1 * MiB); /* the first trace's alone */
    assert_null(vt_analysis_gpu_of(&a, 1, 0));
    vt_analysis_free(&a);
    unlink(paths[0]);
    unlink(paths[2]);
    for (int i = 0; i < 4; i++)
        free(paths[i]);
    rmdir(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_categories),
        cmocka_unit_test(test_oom_verdicts),
        cmocka_unit_test(test_verdict_rule),
        cmocka_unit_test(test_oom_others_and_requests),
        cmocka_unit_test(test_phases),
        cmocka_unit_test(test_shared_gpu),
        cmocka_unit_test(test_shared_gpu_free_duration),
        cmocka_unit_test(test_shared_gpu_rising),
        cmocka_unit_test(test_many_gpus),
        cmocka_unit_test(test_file_gone_before_replay),
    };
    return cmocka_run_group_tests(tests, tb_tmpdir_setup, tb_tmpdir_teardown);
}
