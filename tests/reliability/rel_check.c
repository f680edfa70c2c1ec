/*
 * Checks a trace against independent truth, fast enough for traces of
 * millions of events (the analyzer's reader, no JSON in between).
 *
 *   rel_check ledger TRACE LEDGER [--before NS] [--after NS] [--complete]
 *     The memory operations (cuMemAlloc_v2 / cuMemFree_v2) of the trace's
 *     process in the simulated driver's ledger, thread by thread: the
 *     trace's must be exactly a prefix of the ledger's (same entry point,
 *     address, size, result, same order: nothing invented, nothing doubled,
 *     nothing skipped); every ledger operation stamped before NS must be in
 *     that prefix; with --complete the prefix is everything and the trace
 *     was closed (trailer). --after: ledger operations stamped before NS
 *     are not this trace's (the image before an exec, same pid).
 *   rel_check seq TRACE THREADS PAIRS
 *     rel_client load: every (thread, sequence) allocation exactly once, in
 *     sequence order on one OS thread, each followed by the free of its
 *     address; a trailer; nothing lost. And, across threads, in file
 *     order: no allocation of an address that is still live (its free not
 *     yet in the trace), no free of an address that is not - a free that
 *     another thread's reuse of its address overtook (the threads free and
 *     allocate with no lock between them, and the driver hands a freed
 *     address out again at once). The counts of both are printed.
 *
 * Any read error of the trace fails (a truncated file is not an error).
 * Prints one summary line; exit 0 ok, 1 mismatch, 2 usage or I/O.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_reader.h"
#include "vtsim_ledger_reader.h"

struct op {
    uint64_t tid;
    bool alloc;
    uint64_t addr, size, result, ns;
};

struct ops {
    struct op *v;
    size_t n, cap;
};

struct trace {
    uint64_t pid;
    struct ops mem;
    bool truncated, trailer;
    uint64_t lost, trailer_lost, ranges;
};

static void push(struct ops *o, struct op x)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 1024;
        o->v = realloc(o->v, o->cap * sizeof *o->v);
        if (!o->v) {
            fputs("rel_check: out of memory\n", stderr);
            exit(2);
        }
    }
    o->v[o->n++] = x;
}

/* ids -> values, grown on demand (ids are small and dense) */
struct idmap {
    uint64_t *v;
    size_t cap;
};

static void idmap_set(struct idmap *m, uint64_t id, uint64_t v)
{
    if (id >= m->cap) {
        size_t cap = m->cap ? m->cap : 64;
        while (cap <= id)
            cap *= 2;
        m->v = realloc(m->v, cap * sizeof *m->v);
        if (!m->v)
            exit(2);
        memset(m->v + m->cap, 0, (cap - m->cap) * sizeof *m->v);
        m->cap = cap;
    }
    m->v[id] = v;
}

static void load_trace(const char *path, struct trace *t)
{
    struct vt_reader *r;
    struct vt_read_error err;
    memset(t, 0, sizeof *t);
    if (vt_reader_open(path, &r, &err) != 0) {
        fprintf(stderr, "FAIL: %s\n", err.message);
        exit(1);
    }
    struct idmap tids = {0}, apis = {0};
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        switch (rec.type) {
        case VT_REC_PROCESS:
            t->pid = rec.u.process->pid;
            break;
        case VT_REC_THREAD:
            idmap_set(&tids, rec.u.thread->id, rec.u.thread->os_tid);
            break;
        case VT_REC_API:
            /* remember which entry point an id is, by name */
            idmap_set(&apis, rec.u.api.id,
                      !strcmp(rec.u.api.name, "cuMemAlloc_v2") ? 1
                      : !strcmp(rec.u.api.name, "cuMemFree_v2") ? 2 : 0);
            break;
        case VT_REC_MEM: {
            uint64_t kind = rec.u.mem.api < apis.cap ? apis.v[rec.u.mem.api] : 0;
            if (!kind)
                break; /* contexts and the rest: not what these tests count */
            struct op o = {
                .tid = rec.u.mem.thread < tids.cap ? tids.v[rec.u.mem.thread] : 0,
                .alloc = kind == 1,
                .addr = rec.u.mem.addr,
                .size = rec.u.mem.size,
                .result = rec.u.mem.result,
                .ns = rec.time_ns,
            };
            push(&t->mem, o);
            break;
        }
        case VT_REC_LOST:
            t->lost += rec.u.lost.count;
            break;
        case VT_REC_TRAILER:
            t->trailer = true;
            t->trailer_lost = rec.u.trailer.lost;
            break;
        case VT_REC_RANGE_PUSH:
        case VT_REC_RANGE_POP:
        case VT_REC_MARK:
            t->ranges++;
            break;
        default:
            break;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "FAIL: %s\n", vt_reader_error(r)->message);
        exit(1);
    }
    t->truncated = vt_reader_truncated(r);
    vt_reader_close(r);
    free(tids.v);
    free(apis.v);
}

struct keyed {
    uint64_t tid;
    size_t idx;
};

static int by_tid_then_position(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->tid != y->tid)
        return x->tid < y->tid ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Groups the operations by thread, keeping each thread's order. */
static void group_by_tid(struct ops *o)
{
    if (o->n == 0)
        return;
    struct keyed *k = malloc(o->n * sizeof *k);
    struct op *tmp = malloc(o->n * sizeof *tmp);
    if (!k || !tmp)
        exit(2);
    for (size_t i = 0; i < o->n; i++)
        k[i] = (struct keyed){o->v[i].tid, i};
    qsort(k, o->n, sizeof *k, by_tid_then_position);
    for (size_t i = 0; i < o->n; i++)
        tmp[i] = o->v[k[i].idx];
    memcpy(o->v, tmp, o->n * sizeof *tmp);
    free(tmp);
    free(k);
}

static void load_ledger(const char *path, uint64_t pid, uint64_t after, struct ops *out)
{
    struct vtsim_ledger l;
    if (vtsim_ledger_load(path, &l) != 0) {
        fprintf(stderr, "rel_check: cannot read %s\n", path);
        exit(2);
    }
    for (size_t i = 0; i < l.count; i++) {
        const char *line = l.lines[i];
        bool alloc = vtsim_ledger_is(line, "alloc", "cuMemAlloc_v2");
        bool freed = vtsim_ledger_is(line, "free", "cuMemFree_v2");
        if ((!alloc && !freed) || (uint64_t)vtsim_ledger_num(line, "pid", -1) != pid ||
            (uint64_t)vtsim_ledger_num(line, "ns", 0) < after)
            continue;
        if (vtsim_ledger_num(line, "tid", 0) <= 0 || vtsim_ledger_num(line, "ns", 0) <= 0) {
            /* The driver writes every line whole, with its thread and time;
             * one without them is not an entry (seen once in a crashing
             * run under TSan): named, not counted. */
            fprintf(stderr, "rel_check: note: %s: ledger line %zu has no tid or ns, skipped: %s\n",
                    path, i + 1, line);
            continue;
        }
        struct op o = {
            .tid = (uint64_t)vtsim_ledger_num(line, "tid", 0),
            .alloc = alloc,
            .addr = (uint64_t)vtsim_ledger_num(line, "addr", 0),
            .size = (uint64_t)vtsim_ledger_num(line, "size", 0),
            .result = (uint64_t)vtsim_ledger_num(line, "result", -1),
            .ns = (uint64_t)vtsim_ledger_num(line, "ns", 0),
        };
        push(out, o);
    }
    vtsim_ledger_free(&l);
}

static bool same(const struct op *w, const struct op *g)
{
    if (w->alloc != g->alloc || w->result != g->result)
        return false;
    if (w->result == 0 && w->addr != g->addr)
        return false;
    return !w->alloc || w->size == g->size;
}

static int check_ledger(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    uint64_t before = 0, after = 0;
    bool complete = false;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--before") && i + 1 < argc)
            before = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--after") && i + 1 < argc)
            after = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--complete"))
            complete = true;
        else
            return 2;
    }
    struct trace t;
    load_trace(argv[2], &t);
    struct ops want = {0};
    load_ledger(argv[3], t.pid, after, &want);
    group_by_tid(&t.mem);
    group_by_tid(&want);
    size_t gi = 0, required = 0, matched = 0;
    for (size_t wi = 0; wi < want.n;) {
        uint64_t tid = want.v[wi].tid;
        size_t wend = wi;
        while (wend < want.n && want.v[wend].tid == tid)
            wend++;
        while (gi < t.mem.n && t.mem.v[gi].tid < tid) {
            fprintf(stderr, "FAIL: pid %" PRIu64 ": trace has events of tid %" PRIu64
                            " the ledger does not\n", t.pid, t.mem.v[gi].tid);
            return 1;
        }
        size_t gstart = gi;
        while (gi < t.mem.n && t.mem.v[gi].tid == tid)
            gi++;
        size_t have = gi - gstart, n = wend - wi;
        if (have > n) {
            fprintf(stderr, "FAIL: pid %" PRIu64 " tid %" PRIu64 ": %zu events in the trace, "
                            "%zu in the ledger\n", t.pid, tid, have, n);
            return 1;
        }
        for (size_t k = 0; k < have; k++) {
            const struct op *w = &want.v[wi + k], *g = &t.mem.v[gstart + k];
            if (!same(w, g)) {
                fprintf(stderr, "FAIL: pid %" PRIu64 " tid %" PRIu64 " event %zu: ledger %s "
                                "0x%" PRIx64 " size %" PRIu64 " result %" PRIu64 ", trace %s 0x%"
                                PRIx64 " size %" PRIu64 " result %" PRIu64 "\n",
                        t.pid, tid, k, w->alloc ? "alloc" : "free", w->addr, w->size, w->result,
                        g->alloc ? "alloc" : "free", g->addr, g->size, g->result);
                return 1;
            }
        }
        matched += have;
        for (size_t k = 0; k < n; k++) {
            const struct op *w = &want.v[wi + k];
            bool must = complete || (before && w->ns < before);
            required += must;
            if (must && k >= have) {
                fprintf(stderr, "FAIL: pid %" PRIu64 " tid %" PRIu64 ": ledger event %zu (ns %"
                                PRIu64 ", %.1f ms before the cut) is not in the trace (%zu are)\n",
                        t.pid, tid, k, w->ns, before ? (double)(before - w->ns) / 1e6 : 0.0, have);
                return 1;
            }
        }
        wi = wend;
    }
    if (gi < t.mem.n) {
        fprintf(stderr, "FAIL: pid %" PRIu64 ": trace has events of tid %" PRIu64
                        " the ledger does not\n", t.pid, t.mem.v[gi].tid);
        return 1;
    }
    if (complete && !t.trailer) {
        fprintf(stderr, "FAIL: pid %" PRIu64 ": no trailer\n", t.pid);
        return 1;
    }
    printf("ok pid %" PRIu64 ": ledger %zu, in trace %zu, required %zu, missing %zu, "
           "truncated %s, trailer %s, lost %" PRIu64 "\n",
           t.pid, want.n, matched, required, want.n - matched, t.truncated ? "yes" : "no",
           t.trailer ? "yes" : "no", t.lost);
    free(want.v);
    free(t.mem.v);
    return 0;
}

static int check_seq(int argc, char **argv)
{
    if (argc != 5)
        return 2;
    uint64_t threads = strtoull(argv[3], NULL, 10), pairs = strtoull(argv[4], NULL, 10);
    struct trace t;
    load_trace(argv[2], &t);
    /* next expected sequence per client thread, and its OS thread */
    uint64_t *next = calloc(threads, sizeof *next), *os = calloc(threads, sizeof *os);
    uint64_t *open_addr = calloc(threads, sizeof *open_addr);
    /* the addresses live in file order, whoever holds them: each client
     * thread holds one at a time, so a few */
    struct ops live = {0};
    uint64_t over_live = 0, free_not_live = 0;
    if (!next || !os || !open_addr)
        return 2;
    /* per OS thread: which client thread it is, and is an alloc open? The
     * trace is in global time order, so per-thread order is file order. */
    for (size_t i = 0; i < t.mem.n; i++) {
        const struct op *o = &t.mem.v[i];
        size_t at = 0;
        while (at < live.n && live.v[at].addr != o->addr)
            at++;
        if (o->alloc && at < live.n)
            over_live++;
        else if (o->alloc)
            push(&live, *o);
        else if (at == live.n)
            free_not_live++;
        else
            live.v[at] = live.v[--live.n];
        if (o->alloc) {
            uint64_t v = o->size / 512 - 1, th = v >> 17, seq = v & ((1u << 17) - 1);
            if (o->size % 512 || th >= threads || seq != next[th] || open_addr[th] ||
                (os[th] && os[th] != o->tid)) {
                fprintf(stderr, "FAIL: event %zu: alloc size %" PRIu64 " (thread %" PRIu64
                                ", seq %" PRIu64 ") on tid %" PRIu64 ", expected seq %" PRIu64
                                "%s\n", i, o->size, th, seq, o->tid, th < threads ? next[th] : 0,
                        th < threads && open_addr[th] ? " after a free" : "");
                return 1;
            }
            os[th] = o->tid;
            open_addr[th] = o->addr;
            next[th]++;
        } else {
            uint64_t th = 0;
            while (th < threads && os[th] != o->tid)
                th++;
            if (th == threads || open_addr[th] != o->addr) {
                fprintf(stderr, "FAIL: event %zu: free of 0x%" PRIx64 " on tid %" PRIu64
                                " does not follow its allocation\n", i, o->addr, o->tid);
                return 1;
            }
            open_addr[th] = 0;
        }
    }
    for (uint64_t th = 0; th < threads; th++) {
        if (next[th] != pairs || open_addr[th]) {
            fprintf(stderr, "FAIL: client thread %" PRIu64 ": %" PRIu64 " of %" PRIu64
                            " pairs in the trace\n", th, next[th], pairs);
            return 1;
        }
    }
    if (!t.trailer || t.lost || t.trailer_lost || t.truncated) {
        fprintf(stderr, "FAIL: trailer %d, lost %" PRIu64 "/%" PRIu64 ", truncated %d\n",
                t.trailer, t.lost, t.trailer_lost, t.truncated);
        return 1;
    }
    if (over_live || free_not_live) {
        fprintf(stderr, "FAIL: of %zu events, %" PRIu64 " allocations of a live address and %" PRIu64
                        " frees of an address not live (a free after the reuse of its address)\n",
                t.mem.n, over_live, free_not_live);
        return 1;
    }
    printf("ok: %zu events, %" PRIu64 " threads x %" PRIu64 " pairs, each once and in order; "
           "0 allocations of a live address, 0 frees of one not live\n",
           t.mem.n, threads, pairs);
    free(live.v);
    free(next);
    free(os);
    free(open_addr);
    free(t.mem.v);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 2;
    if (argc > 1 && !strcmp(argv[1], "ledger"))
        rc = check_ledger(argc, argv);
    else if (argc > 1 && !strcmp(argv[1], "seq"))
        rc = check_seq(argc, argv);
    if (rc == 2)
        fputs("usage: rel_check ledger TRACE LEDGER [--before NS] [--after NS] [--complete]\n"
              "       rel_check seq TRACE THREADS PAIRS\n", stderr);
    return rc;
}
