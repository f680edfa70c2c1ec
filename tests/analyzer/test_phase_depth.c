/*
 * Phase peaks under deep nesting and random ranges, checked against
 * brute-force computations written apart from the analyzer's "max since
 * mark" levels (analyzer/replay/replay_phases.c):
 *
 *   - deep nesting: 10,000 NVTX ranges pushed on one thread while 50,000
 *     allocations and frees run, popped while more run; each phase's peak,
 *     its instant and the per-site bytes then are the maximum of the
 *     ledger's total over the phase's interval, found by scanning the totals
 *     event by event. Must take well under 2 s (the eager scheme took
 *     minutes: every allocation offered its total to every open phase).
 *   - random ranges: push/pop on two threads, start/end ranges ending on
 *     either thread, names reopened while open, three ledgers appearing
 *     late (one through a failed allocation), ties of totals: every record
 *     (order, opened count, peak, instant, live count, per-site bytes) must
 *     equal an eager replay that offers every total to every open name.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "analysis.h"
#include "trace_builder.h"

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state % n;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *write_trace(struct tb *b, const char *name)
{
    char *path;
    assert_true(asprintf(&path, "%s/%s", tb_tmpdir, name) > 0);
    assert_int_equal(tb_write(b, path), 0);
    tb_free(b);
    return path;
}

static void analyze(struct vt_analysis *a, char *path)
{
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(vt_analysis_run(a, &path, 1, devnull), 0);
    fclose(devnull);
}

#define NSTACKS 3
#define NTHREADS 2
static const uint64_t stacks[NSTACKS] = {TB_STACK_A, TB_STACK_B, TB_STACK_C};
static const uint64_t threads[NTHREADS] = {TB_MAIN, TB_AUTOGRAD};

/* The analyzer's per-site bytes of a state equal want[stack][thread]. */
static void check_sites(const struct vt_ledger *l, const struct vt_peak_state *s,
                        const uint64_t want[NSTACKS][NTHREADS])
{
    struct vt_site_bytes top[NSTACKS * NTHREADS + 1];
    size_t n = vt_sites_top(&l->sites, s, top, NSTACKS * NTHREADS + 1);
    size_t nonzero = 0;
    for (int k = 0; k < NSTACKS; k++)
        for (int t = 0; t < NTHREADS; t++)
            nonzero += want[k][t] != 0;
    assert_int_equal(n, nonzero);
    for (size_t i = 0; i < n; i++) {
        int k = (int)top[i].stack - TB_STACK_A, t = top[i].thread == TB_MAIN ? 0 : 1;
        assert_true(k >= 0 && k < NSTACKS);
        assert_int_equal(top[i].bytes, want[k][t]);
    }
}

/* ---- deep nesting ---- */

#define DEEP_PHASES 10000
#define DEEP_EVENTS 50000

struct live {
    uint64_t addr, size;
    int stack, thread;
};

static void test_deep_nesting(void **state)
{
    (void)state;
    rng_state = 0x9e3779b97f4a7c15ull;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 400, 5, 1ull << 40);
    char name[16];
    for (int i = 0; i < DEEP_PHASES; i++) {
        int n = snprintf(name, sizeof name, "d%d", i);
        vt_encode_string(&b.enc, name, (size_t)n); /* string id i + 1 */
    }
    /* The brute force's timeline: the total and per-site bytes after every
     * memory event (index e), each phase's first and last event index. */
    uint64_t *total = calloc(DEEP_EVENTS + 1, sizeof *total);
    uint64_t *time_of = calloc(DEEP_EVENTS + 1, sizeof *time_of);
    uint64_t(*sites)[NSTACKS][NTHREADS] = calloc(DEEP_EVENTS + 1, sizeof *sites);
    size_t *opened_at = calloc(DEEP_PHASES, sizeof *opened_at);
    size_t *closed_at = calloc(DEEP_PHASES, sizeof *closed_at);
    struct live *live = calloc(DEEP_EVENTS, sizeof *live);
    assert_true(total && time_of && sites && opened_at && closed_at && live);
    size_t nlive = 0, pushed = 0, popped = 0;
    uint64_t t = 1000, next_addr = 0x100000;
    /* Event 0 is the state before any memory event. Phases open during the
     * first 40% of the events and close (innermost first) during the last
     * 40%: intervals of every length, nested. */
    for (size_t e = 1; e <= DEEP_EVENTS; e++) {
        size_t want_pushed = e * 10 < DEEP_EVENTS * 4 ? e * DEEP_PHASES * 10 / (DEEP_EVENTS * 4)
                                                      : DEEP_PHASES;
        while (pushed < want_pushed) {
            vt_encode_range_push(&b.enc, TB_MAIN, t++, 0, pushed + 1);
            opened_at[pushed++] = e - 1; /* the total before event e counts */
        }
        if (e * 10 > DEEP_EVENTS * 6) {
            size_t want_popped = (e * 10 - DEEP_EVENTS * 6) * DEEP_PHASES / (DEEP_EVENTS * 4);
            while (popped < want_popped) {
                vt_encode_range_pop(&b.enc, TB_MAIN, t++, 0);
                closed_at[DEEP_PHASES - 1 - popped++] = e - 1;
            }
        }
        memcpy(sites[e], sites[e - 1], sizeof sites[e]);
        /* Mostly allocations with sizes that repeat (ties), frees of random
         * live ones: the total climbs, falls back and climbs again. */
        if (nlive && rnd(100) < 45) {
            size_t i = rnd(nlive);
            struct live x = live[i];
            live[i] = live[--nlive];
            tb_free_mem(&b, VT_KIND_DEVICE, threads[x.thread], t, 0, x.addr);
            total[e] = total[e - 1] - x.size;
            sites[e][x.stack][x.thread] -= x.size;
        } else {
            struct live x = {next_addr, 1 + rnd(4) * 256, (int)rnd(NSTACKS), (int)rnd(NTHREADS)};
            next_addr += 0x1000;
            live[nlive++] = x;
            tb_alloc(&b, VT_KIND_DEVICE, threads[x.thread], t, 0, x.addr, x.size,
                     stacks[x.stack]);
            total[e] = total[e - 1] + x.size;
            sites[e][x.stack][x.thread] += x.size;
        }
        time_of[e] = t++;
        if (e % 8192 == 0)
            tb_flush(&b);
    }
    while (popped < DEEP_PHASES) {
        vt_encode_range_pop(&b.enc, TB_MAIN, t++, 0);
        closed_at[DEEP_PHASES - 1 - popped++] = DEEP_EVENTS;
    }
    tb_trailer(&b, t);
    char *path = write_trace(&b, "deep.vtrace");

    double start = now_s();
    struct vt_analysis a;
    analyze(&a, path);
    double took = now_s() - start;
    print_message("deep nesting: %d phases, %d events: %.3f s\n", DEEP_PHASES, DEEP_EVENTS, took);
    assert_true(took < 2.0);

    struct vt_ledger *l = vt_replay_ledger(&a.inputs[0].replay, 0, VT_CAT_DEVICE);
    assert_non_null(l);
    assert_int_equal(l->nphases, DEEP_PHASES);
    for (size_t i = 0; i < DEEP_PHASES; i++) {
        /* Brute force: the largest total over the phase's events, the
         * earliest event with it. A phase that opened before the first
         * memory event (ledger not there yet) starts at event 1. */
        size_t from = opened_at[i] ? opened_at[i] : 1, best = from;
        for (size_t e = from; e <= closed_at[i]; e++)
            if (total[e] > total[best])
                best = e;
        const struct vt_phase_peak *p = vt_ledger_phase(l, i + 1);
        assert_non_null(p);
        if (p->state.peak_bytes != total[best] || p->state.peak_time_ns != time_of[best])
            fail_msg("phase %zu (events %zu-%zu): %llu at %llu, brute force %llu at %llu", i,
                     from, closed_at[i], (unsigned long long)p->state.peak_bytes,
                     (unsigned long long)p->state.peak_time_ns, (unsigned long long)total[best],
                     (unsigned long long)time_of[best]);
        check_sites(l, &p->state, (const uint64_t(*)[NTHREADS])sites[best]);
    }
    vt_analysis_free(&a);
    free(path);
    free(total);
    free(time_of);
    free(sites);
    free(opened_at);
    free(closed_at);
    free(live);
}

/* ---- random ranges against an eager replay ---- */

#define NAMES 12
#define LEDGERS 4

struct eager_record {
    uint64_t name, opened;
    bool has_peak;
    uint64_t peak, time, count;
    uint64_t sites[NSTACKS][NTHREADS];
};

struct eager_ledger {
    int64_t device;
    enum vt_category cat;
    uint64_t total, count;
    uint64_t sites[NSTACKS][NTHREADS];
    struct eager_record rec[NAMES];
    size_t nrec;
};

struct eager {
    struct eager_ledger ledgers[LEDGERS];
    size_t nledgers;
    struct { uint64_t name, count; } open[NAMES];
    size_t nopen;
    uint64_t opened[NAMES + 1]; /* by name id (1..NAMES): ranges opened in the process */
};

static struct eager_record *eager_record(struct eager_ledger *l, uint64_t name)
{
    for (size_t i = 0; i < l->nrec; i++)
        if (l->rec[i].name == name)
            return &l->rec[i];
    struct eager_record *r = &l->rec[l->nrec++];
    memset(r, 0, sizeof *r);
    r->name = name;
    return r;
}

static void eager_offer(struct eager_ledger *l, struct eager_record *r, uint64_t t)
{
    if (r->has_peak && l->total <= r->peak)
        return;
    r->has_peak = true;
    r->peak = l->total;
    r->count = l->count;
    r->time = t;
    memcpy(r->sites, l->sites, sizeof r->sites);
}

static struct eager_ledger *eager_ledger(struct eager *m, int64_t device, enum vt_category cat)
{
    for (size_t i = 0; i < m->nledgers; i++)
        if (m->ledgers[i].device == device && m->ledgers[i].cat == cat)
            return &m->ledgers[i];
    struct eager_ledger *l = &m->ledgers[m->nledgers++];
    memset(l, 0, sizeof *l);
    l->device = device;
    l->cat = cat;
    return l;
}

static void eager_open(struct eager *m, uint64_t name, uint64_t t)
{
    size_t k;
    for (k = 0; k < m->nopen && m->open[k].name != name; k++)
        ;
    if (k == m->nopen) {
        m->open[k].name = name;
        m->open[k].count = 0;
        m->nopen++;
    }
    m->open[k].count++;
    m->opened[name]++;
    for (size_t i = 0; i < m->nledgers; i++) {
        struct eager_record *r = eager_record(&m->ledgers[i], name);
        eager_offer(&m->ledgers[i], r, t);
    }
}

static void eager_close(struct eager *m, uint64_t name)
{
    for (size_t k = 0; k < m->nopen; k++)
        if (m->open[k].name == name) {
            if (--m->open[k].count == 0)
                m->open[k] = m->open[--m->nopen];
            return;
        }
}

static void eager_change(struct eager *m, struct eager_ledger *l, int stack, int thread,
                         int64_t bytes, uint64_t t)
{
    l->total += (uint64_t)bytes;
    l->count += bytes > 0 ? 1 : (uint64_t)-1;
    l->sites[stack][thread] += (uint64_t)bytes;
    if (bytes > 0)
        for (size_t k = 0; k < m->nopen; k++)
            eager_offer(l, eager_record(l, m->open[k].name), t);
}

struct rlive {
    uint64_t addr, size;
    int stack, thread, ledger_kind;
};

static const struct {
    uint8_t kind;
    int64_t device;
    enum vt_category cat;
} ledger_kinds[LEDGERS] = {
    {VT_KIND_DEVICE, 0, VT_CAT_DEVICE},
    {VT_KIND_DEVICE, 1, VT_CAT_DEVICE},
    {VT_KIND_HOST_PINNED, -1, VT_CAT_HOST_PINNED},
    {VT_KIND_MANAGED, 1, VT_CAT_MANAGED},
};

static void run_random(uint64_t seed, int steps)
{
    rng_state = seed * 0x2545f4914f6cdd1dull + 1;
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 500, 6, 1ull << 40);
    char name[8];
    for (int i = 0; i < NAMES; i++) {
        int n = snprintf(name, sizeof name, "n%d", i);
        vt_encode_string(&b.enc, name, (size_t)n); /* id i + 1 */
    }
    static struct eager m;
    memset(&m, 0, sizeof m);
    struct rlive live[4096];
    size_t nlive = 0;
    uint64_t stack_names[NTHREADS][256];
    size_t depth[NTHREADS] = {0};
    struct { uint64_t id, name; } ranges[64];
    size_t nranges = 0;
    uint64_t t = 100, next_addr = 0x10000, next_range = 1;
    for (int s = 0; s < steps; s++, t++) {
        int th = (int)rnd(NTHREADS);
        /* Ledgers other than device 0 appear later; device 1's managed
         * ledger first through a failed allocation. */
        int lk = s < steps / 4 ? 0 : (int)rnd(s < steps / 2 ? 3 : LEDGERS);
        uint64_t r = rnd(100);
        if (r < 34 && nlive < 4096) {
            struct rlive x = {next_addr, 1 + rnd(3), (int)rnd(NSTACKS), th, lk};
            next_addr += 0x100;
            live[nlive++] = x;
            tb_alloc(&b, ledger_kinds[lk].kind, threads[th], t, ledger_kinds[lk].device, x.addr,
                     x.size, stacks[x.stack]);
            eager_change(&m, eager_ledger(&m, ledger_kinds[lk].device, ledger_kinds[lk].cat),
                         x.stack, th, (int64_t)x.size, t);
        } else if (r < 62 && nlive) {
            size_t i = rnd(nlive);
            struct rlive x = live[i];
            live[i] = live[--nlive];
            tb_free_mem(&b, ledger_kinds[x.ledger_kind].kind, threads[th], t,
                        ledger_kinds[x.ledger_kind].device, x.addr);
            eager_change(&m,
                         eager_ledger(&m, ledger_kinds[x.ledger_kind].device,
                                      ledger_kinds[x.ledger_kind].cat),
                         x.stack, x.thread, -(int64_t)x.size, t);
        } else if (r < 64) {
            int fk = s < steps / 2 ? 3 : (int)rnd(LEDGERS);
            tb_fail(&b, ledger_kinds[fk].kind, threads[th], t, ledger_kinds[fk].device, 1 << 20,
                    TB_STACK_A, 0, 0);
            eager_ledger(&m, ledger_kinds[fk].device, ledger_kinds[fk].cat);
        } else if (r < 76 && depth[th] < 256) {
            uint64_t n = 1 + rnd(NAMES);
            vt_encode_range_push(&b.enc, threads[th], t, 0, n);
            stack_names[th][depth[th]++] = n;
            eager_open(&m, n, t);
        } else if (r < 88) {
            vt_encode_range_pop(&b.enc, threads[th], t, 0);
            if (depth[th])
                eager_close(&m, stack_names[th][--depth[th]]);
        } else if (r < 94 && nranges < 64) {
            uint64_t n = 1 + rnd(NAMES);
            vt_encode_range_start(&b.enc, threads[th], t, next_range, 0, n);
            ranges[nranges].id = next_range++;
            ranges[nranges++].name = n;
            eager_open(&m, n, t);
        } else if (nranges) {
            size_t i = rnd(nranges);
            vt_encode_range_end(&b.enc, threads[th], t, ranges[i].id); /* either thread */
            eager_close(&m, ranges[i].name);
            ranges[i] = ranges[--nranges];
        }
        if (rnd(500) == 0)
            tb_flush(&b);
    }
    tb_trailer(&b, t);
    char file[32];
    snprintf(file, sizeof file, "random-%llu.vtrace", (unsigned long long)seed);
    char *path = write_trace(&b, file);
    struct vt_analysis a;
    analyze(&a, path);
    struct vt_replay *rp = &a.inputs[0].replay;
    assert_int_equal(rp->nledgers, m.nledgers);
    for (size_t i = 0; i < m.nledgers; i++) {
        struct eager_ledger *el = &m.ledgers[i];
        const struct vt_ledger *l = &rp->ledgers[i];
        assert_int_equal(l->device, el->device);
        assert_int_equal(l->category, el->cat);
        assert_int_equal(l->nphases, el->nrec);
        for (size_t k = 0; k < el->nrec; k++) {
            struct eager_record *want = &el->rec[k];
            const struct vt_phase_peak *p = &l->phases[k];
            want->opened = m.opened[want->name]; /* counted for the process */
            if (p->name != want->name || p->opened != want->opened ||
                p->state.has_peak != want->has_peak || p->state.peak_bytes != want->peak ||
                p->state.peak_time_ns != want->time || p->state.peak_count != want->count)
                fail_msg("seed %llu ledger %zu record %zu: name %llu opened %llu peak %llu at "
                         "%llu count %llu; eager: name %llu opened %llu peak %llu at %llu "
                         "count %llu",
                         (unsigned long long)seed, i, k, (unsigned long long)p->name,
                         (unsigned long long)p->opened, (unsigned long long)p->state.peak_bytes,
                         (unsigned long long)p->state.peak_time_ns,
                         (unsigned long long)p->state.peak_count, (unsigned long long)want->name,
                         (unsigned long long)want->opened, (unsigned long long)want->peak,
                         (unsigned long long)want->time, (unsigned long long)want->count);
            if (want->has_peak)
                check_sites(l, &p->state, (const uint64_t(*)[NTHREADS])want->sites);
            assert_ptr_equal(vt_ledger_phase(l, want->name), p);
        }
    }
    vt_analysis_free(&a);
    unlink(path);
    free(path);
}

static void test_random_ranges(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 150; seed++)
        run_random(seed, 1500 + (int)(seed % 7) * 300);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_random_ranges),
    };
    return cmocka_run_group_tests(tests, tb_tmpdir_setup, tb_tmpdir_teardown);
}
