/*
 * `vramtrace export --format perfetto`: Chrome trace-event JSON, which
 * ui.perfetto.dev and chrome://tracing open.
 *
 *   {"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}
 *
 * Per traced process (pid = its pid): its name with rank and host
 * (process_name), its threads' names; a counter per ledger ("device 0",
 * "managed 0", "pinned host") whose "bytes" are the ledger's live bytes,
 * one sample per change (changes at one instant are folded into the
 * largest total then and the total after, so the counter's maximum is the
 * report's peak exactly); NVTX push/pop ranges as slices on their thread,
 * start/end ranges as async slices (those open at exit end at the
 * process's last event, on their thread, with their name); each failed
 * allocation and each ledger's peak as an instant with its numbers as
 * args; marks as instants.
 * ts: CLOCK_MONOTONIC microseconds (processes of one host line up).
 *
 * Sized to open: a first read - the run stage's (run_traces.h), which
 * is the report's, so each failure gets its headline verdict from it too -
 * counts the counters' samples;
 * when they pass VT_PERFETTO_SAMPLES_MAX (a JSON of about 20 MB), each
 * counter is written at a screen's resolution instead (column_series.h:
 * each column's maximum and last value, so the peak stays exact), and
 * otherData says what was left out. Failures, phases, marks and peaks are
 * always all kept. --all writes every sample, its size said first.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_trace.h"
#include "export_verdicts.h"
#include "format.h"
#include "column_series.h"
#include "json_writer.h"
#include "input_tables.h"
#include "pair_map.h"
#include "run_traces.h"

/* Above this many counter samples in all (about 100 bytes each) the
 * counters are downsampled; then each gets 2 points per column. */
#define VT_PERFETTO_SAMPLES_MAX 200000
#define VT_PERFETTO_COLUMNS_MAX 10000 /* a few screens' width: room to zoom */
#define VT_PERFETTO_COLUMNS_MIN 256
#define VT_PERFETTO_SAMPLE_BYTES 100  /* a "C" event's line, about */

/* What the first replay found of one input. */
struct input_plan {
    uint64_t t0, t1;           /* the replay's first and last event */
};

struct counter {
    bool pending;
    uint64_t ts_ns, last, max;
};

struct perfetto {
    struct vt_json j;
    const struct vt_export_options *opt;
    uint64_t pid;              /* the pid events carry */
    bool skip;                 /* --pid selected another process */
    bool any_counter;          /* this input wrote a sample */
    bool any_selected;
    struct counter counters[VT_LEDGERS_MAX];
    struct vt_pair_map depth;  /* (thread, domain) -> open push ranges */
    struct vt_pair_map pushed; /* ((thread, domain), depth) -> its range's name string id */
    struct vt_pair_map ranges; /* (range id, 0) -> name string id, (range id, 1) -> os tid,
                                * (range id, 2) -> its async id in the file */
    /* A range's id can be any 64-bit number (the phase API's have the top
     * bit set), and JSON readers hold numbers as doubles, exact only up to
     * 2^53: each range gets the next small number instead, never reused. */
    uint64_t async_ids;
    uint64_t last_ns;          /* the process's last event: where open slices end */
    /* the first replay: count samples, write nothing */
    bool measuring;
    uint64_t samples;          /* every sample: what --all writes */
    uint64_t ncounters;        /* counters with a sample, all inputs */
    uint64_t seen[VT_LEDGERS_MAX]; /* this input's counters: samples so far */
    /* the second: downsampled counters (downsample) or every sample */
    bool downsample;
    struct vt_column_grid grid;
    struct vt_column_series series[VT_LEDGERS_MAX];
    bool series_used[VT_LEDGERS_MAX];
    uint64_t written;          /* counter samples written */
    bool out_of_memory;
    /* the report's headline verdict of each failure, from the first read */
    struct vt_export_verdicts verdicts;
};

static void begin_event(struct perfetto *p, const char *ph, const char *name, uint64_t tid)
{
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "ph", ph);
    vt_json_kv_string(&p->j, "name", name ? name : "?");
    vt_json_kv_uint(&p->j, "pid", p->pid);
    vt_json_kv_uint(&p->j, "tid", tid);
}

static void ts(struct perfetto *p, uint64_t time_ns)
{
    vt_json_key(&p->j, "ts");
    vt_json_fixed(&p->j, time_ns, 3);
}

static void end_event(struct perfetto *p)
{
    vt_json_end_object(&p->j);
    fputc('\n', p->j.out); /* one event a line: whitespace, still one document */
}

static uint64_t os_tid(struct vt_export_trace *t, uint64_t thread)
{
    const struct vt_thread_info *ti = vt_reader_thread(t->reader, thread);
    return ti && ti->os_tid ? ti->os_tid : thread;
}

static void sample(struct perfetto *p, const char *track, uint64_t time_ns, uint64_t bytes)
{
    begin_event(p, "C", track, p->pid);
    ts(p, time_ns);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_uint(&p->j, "bytes", bytes);
    vt_json_end_object(&p->j);
    end_event(p);
}

static void flush_counter(struct perfetto *p, const struct vt_ledger *l, struct counter *c)
{
    if (!c->pending)
        return;
    if (p->measuring) {
        p->samples += 1 + (c->max > c->last);
        if (!p->seen[c - p->counters]++)
            p->ncounters++;
        c->pending = false;
        p->any_counter = true;
        return;
    }
    p->written += 1 + (c->max > c->last);
    char track[64];
    vt_ledger_label(l, track, sizeof track);
    if (c->max > c->last)
        sample(p, track, c->ts_ns, c->max);
    sample(p, track, c->ts_ns, c->last);
    c->pending = false;
    p->any_counter = true;
}

static bool ledger_selected(const struct vt_export_options *opt, const struct vt_ledger *l)
{
    return !opt->has_device || (l->category != VT_CAT_HOST_PINNED && l->device == opt->device);
}

/* A change at the instant of the counter's pending sample only moves it
 * (true); one at another instant is a new sample, the pending one due. */
static bool fold_change(struct counter *c, uint64_t now_ns, uint64_t v)
{
    if (!c->pending || c->ts_ns != now_ns)
        return false;
    c->last = v;
    if (v > c->max)
        c->max = v;
    return true;
}

static void on_live(void *ctx, struct vt_export_trace *t, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    (void)e;
    (void)begins;
    struct perfetto *p = ctx;
    if (!ledger_selected(p->opt, l))
        return;
    size_t li = (size_t)(l - t->replay.ledgers);
    uint64_t v = l->sites.total_bytes;
    if (p->downsample && !p->measuring) {
        if (!p->series_used[li]) {
            if (!vt_column_series_init(&p->series[li], &p->grid, 0, 0, NULL)) {
                p->out_of_memory = true;
                return;
            }
            p->series_used[li] = true;
        }
        vt_column_series_set(&p->series[li], &p->grid, t->now_ns, v, NULL);
        return;
    }
    struct counter *c = &p->counters[li];
    if (fold_change(c, t->now_ns, v))
        return;
    flush_counter(p, l, c);
    *c = (struct counter){true, t->now_ns, v, v};
}

static void thread_name(struct perfetto *p, const struct vt_thread_info *ti)
{
    if (!ti->name || !ti->name[0])
        return;
    begin_event(p, "M", "thread_name", ti->os_tid ? ti->os_tid : ti->id);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "name", ti->name);
    vt_json_end_object(&p->j);
    end_event(p);
}

static void process_name(struct perfetto *p, struct vt_export_trace *t)
{
    char name[512];
    vt_export_process_name(t, name, sizeof name);
    begin_event(p, "M", "process_name", p->pid);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "name", name);
    vt_json_end_object(&p->j);
    end_event(p);
    long rank = vt_export_rank(t->reader);
    if (rank >= 0) {
        begin_event(p, "M", "process_sort_index", p->pid);
        vt_json_key(&p->j, "args");
        vt_json_begin_object(&p->j);
        vt_json_kv_int(&p->j, "sort_index", rank);
        vt_json_end_object(&p->j);
        end_event(p);
    }
}

static void range_event(struct perfetto *p, struct vt_export_trace *t, const struct vt_record *rec)
{
    const char *name = NULL;
    uint64_t tid = os_tid(t, rec->u.range.thread);
    uint64_t key = rec->u.range.thread | rec->u.range.domain << 32, *depth;
    switch (rec->type) {
    case VT_REC_RANGE_PUSH: {
        depth = vt_pair_map_get(&p->depth, key, 0);
        uint64_t d = (depth ? *depth : 0) + 1;
        vt_pair_map_put(&p->depth, key, 0, d);
        vt_pair_map_put(&p->pushed, key, d, rec->u.range.name);
        begin_event(p, "B", vt_reader_string(t->reader, rec->u.range.name), tid);
        break;
    }
    case VT_REC_RANGE_POP: {
        uint64_t n;
        depth = vt_pair_map_get(&p->depth, key, 0);
        if (!depth || !*depth)
            return; /* a pop without a push: no slice to end */
        /* An E names the slice it ends: viewers that match by name (and
         * the trace-event checker) see which one. */
        bool named = vt_pair_map_remove(&p->pushed, key, *depth, &n);
        --*depth;
        begin_event(p, "E", named ? vt_reader_string(t->reader, n) : NULL, tid);
        break;
    }
    case VT_REC_RANGE_START:
        vt_pair_map_put(&p->ranges, rec->u.range.range_id, 0, rec->u.range.name);
        vt_pair_map_put(&p->ranges, rec->u.range.range_id, 1, tid);
        vt_pair_map_put(&p->ranges, rec->u.range.range_id, 2, ++p->async_ids);
        begin_event(p, "b", vt_reader_string(t->reader, rec->u.range.name), tid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", p->async_ids);
        break;
    case VT_REC_RANGE_END: {
        uint64_t n, id = 0;
        if (!vt_pair_map_remove(&p->ranges, rec->u.range.range_id, 0, &n))
            return;
        vt_pair_map_remove(&p->ranges, rec->u.range.range_id, 1, NULL);
        vt_pair_map_remove(&p->ranges, rec->u.range.range_id, 2, &id);
        name = vt_reader_string(t->reader, n);
        begin_event(p, "e", name, tid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", id);
        break;
    }
    default: /* VT_REC_MARK */
        begin_event(p, "i", vt_reader_string(t->reader, rec->u.range.name), tid);
        vt_json_kv_string(&p->j, "s", "t");
        break;
    }
    ts(p, rec->time_ns);
    end_event(p);
}

static bool on_record(void *ctx, struct vt_export_trace *t, const struct vt_record *rec)
{
    struct perfetto *p = ctx;
    if (vt_record_is_timed(rec->type))
        p->last_ns = rec->time_ns;
    if (p->out_of_memory)
        return false;
    switch (rec->type) {
    case VT_REC_PROCESS:
        if (p->opt->has_pid && rec->u.process->pid != p->opt->pid) {
            p->skip = true;
            return false;
        }
        p->pid = rec->u.process->pid;
        if (p->measuring)
            return true;
        process_name(p, t);
        break;
    case VT_REC_THREAD:
        if (!p->measuring)
            thread_name(p, rec->u.thread);
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK:
        if (!p->measuring)
            range_event(p, t, rec);
        break;
    /* Memory comes from the replay (on_live), failures and the peak from
     * its ledgers; definitions are the reader's tables. */
    case VT_REC_MEM:
    case VT_REC_SITE:
    case VT_REC_PART:
    case VT_REC_MODULE:
    case VT_REC_MODULE_UNLOAD:
    case VT_REC_DEVICE:
    case VT_REC_STACK_NODE:
    case VT_REC_STRING:
    case VT_REC_API:
    case VT_REC_PY_CODE:
    case VT_REC_LOST:
    case VT_REC_TRAILER:
        break;
    }
    return true;
}

static void args_bytes(struct perfetto *p, const char *key, bool known, uint64_t v)
{
    vt_json_kv_uint_or_null(&p->j, key, known, v);
}

static void failures(struct perfetto *p, struct vt_export_trace *t, const struct vt_ledger *l)
{
    char ledger[64], req[32], name[160];
    vt_ledger_label(l, ledger, sizeof ledger);
    for (size_t k = 0; k < l->nooms; k++) {
        const struct vt_oom *o = &l->ooms[k];
        /* The report's headline verdict: the trace's own may have given
         * way to the allocator's, which every view then names. */
        const char *verdict = vt_export_verdict(&p->verdicts, t->path, l->device, o->time_ns,
                                                o->requested_bytes);
        if (!verdict)
            verdict = vt_verdict_name(o->verdict);
        snprintf(name, sizeof name, "allocation failed: %s on %s (%s)",
                 vt_format_bytes(o->requested_bytes, req, sizeof req), ledger, verdict);
        begin_event(p, "i", name, os_tid(t, o->thread));
        vt_json_kv_string(&p->j, "s", "p");
        ts(p, o->time_ns);
        vt_json_key(&p->j, "args");
        vt_json_begin_object(&p->j);
        vt_json_kv_uint(&p->j, "requested_bytes", o->requested_bytes);
        args_bytes(p, "free_bytes", o->driver_info, o->free_bytes);
        args_bytes(p, "total_bytes", o->driver_info, o->total_bytes);
        vt_json_kv_uint(&p->j, "process_bytes", o->process_bytes);
        args_bytes(p, "cached_bytes", o->cached_known, o->cached_bytes);
        args_bytes(p, "context_bytes", o->context_known, o->context_bytes);
        args_bytes(p, "other_processes_bytes", o->driver_info, o->other_bytes);
        vt_json_kv_string(&p->j, "verdict", verdict);
        vt_json_kv_string(&p->j, "trace_verdict", vt_verdict_name(o->verdict));
        vt_json_kv_string(&p->j, "retry", vt_retry_name(o->retry));
        vt_json_kv_bool(&p->j, "retry_of_previous", o->retry_of_previous);
        vt_json_kv_string(&p->j, "api", vt_reader_api(t->reader, o->api));
        vt_json_kv_string(&p->j, "phase", vt_reader_string(t->reader, o->phase));
        /* The site as every view names it (the report's user_frame). */
        char site[512];
        vt_json_kv_string(&p->j, "site", vt_export_site_frame(t, o->stack, site, sizeof site));
        vt_json_end_object(&p->j);
        end_event(p);
    }
}

static void peak(struct perfetto *p, struct vt_export_trace *t, const struct vt_ledger *l)
{
    if (!l->peak.has_peak)
        return;
    /* The site that held most then, named as every view names it. */
    uint64_t top_bytes = 0, top_stack = 0;
    for (uint32_t i = 0; i < l->sites.nsites && i < l->peak.cap; i++)
        if (l->peak.bytes[i] > top_bytes) {
            top_bytes = l->peak.bytes[i];
            top_stack = l->sites.sites[i].stack;
        }
    char site[512];
    const char *top = top_bytes ? vt_export_site_frame(t, top_stack, site, sizeof site) : NULL;
    char ledger[64], bytes[32], name[128];
    snprintf(name, sizeof name, "peak %s: %s", vt_ledger_label(l, ledger, sizeof ledger),
             vt_format_bytes(l->peak.peak_bytes, bytes, sizeof bytes));
    begin_event(p, "i", name, p->pid);
    vt_json_kv_string(&p->j, "s", "p");
    ts(p, l->peak.peak_time_ns);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "ledger", ledger);
    vt_json_kv_uint(&p->j, "peak_bytes", l->peak.peak_bytes);
    vt_json_kv_uint(&p->j, "live_allocations", l->peak.peak_count);
    vt_json_kv_string(&p->j, "top_site", top);
    vt_json_kv_uint(&p->j, "top_site_bytes", top_bytes);
    vt_json_end_object(&p->j);
    end_event(p);
}

/* Ranges still open when the trace ends (a process that died inside one)
 * end at its last event: each slice innermost first, on the thread that
 * opened it and with its name, so the viewer closes that slice rather than
 * drawing a thread that never ran. */
static void close_open(struct perfetto *p, struct vt_export_trace *t)
{
    for (size_t i = 0; i < p->depth.cap; i++) {
        const struct vt_pair_slot *s = &p->depth.slots[i];
        if (!s->used)
            continue;
        uint64_t tid = os_tid(t, s->a & 0xffffffffu); /* the key: thread | domain << 32 */
        for (uint64_t d = s->value; d > 0; d--) {
            const uint64_t *n = vt_pair_map_get(&p->pushed, s->a, d);
            begin_event(p, "E", n ? vt_reader_string(t->reader, *n) : NULL, tid);
            ts(p, p->last_ns);
            end_event(p);
        }
    }
    for (size_t i = 0; i < p->ranges.cap; i++) {
        const struct vt_pair_slot *s = &p->ranges.slots[i];
        if (!s->used || s->b != 0)
            continue;
        const uint64_t *tid = vt_pair_map_get(&p->ranges, s->a, 1);
        const uint64_t *id = vt_pair_map_get(&p->ranges, s->a, 2);
        begin_event(p, "e", vt_reader_string(t->reader, s->value), tid ? *tid : p->pid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", id ? *id : 0);
        ts(p, p->last_ns);
        end_event(p);
    }
}

/* A downsampled counter's points, in time order. */
static void write_series(struct perfetto *p, const struct vt_ledger *l, size_t li)
{
    if (!p->series_used[li])
        return;
    struct vt_column_series *s = &p->series[li];
    vt_column_series_finish(s, &p->grid);
    char track[64];
    vt_ledger_label(l, track, sizeof track);
    for (size_t k = 0; k < s->npoints; k++)
        sample(p, track, s->t[k], s->total[k]);
    p->written += s->npoints;
    p->any_counter = true;
    vt_column_series_free(s);
    p->series_used[li] = false;
}

static void reset_input(struct perfetto *p)
{
    p->skip = p->any_counter = false;
    p->pid = 0;
    memset(p->counters, 0, sizeof p->counters);
    memset(p->seen, 0, sizeof p->seen);
    vt_pair_map_init(&p->depth);
    vt_pair_map_init(&p->pushed);
    vt_pair_map_init(&p->ranges);
}

static void free_input(struct perfetto *p)
{
    vt_pair_map_free(&p->depth);
    vt_pair_map_free(&p->pushed);
    vt_pair_map_free(&p->ranges);
    for (size_t i = 0; i < VT_LEDGERS_MAX; i++)
        if (p->series_used[i]) {
            vt_column_series_free(&p->series[i]);
            p->series_used[i] = false;
        }
}

/* The first read, by the run stage: per input, the counters' samples as
 * the second read will take them (on_live and flush_counter's rules, on
 * the input's own counters: inputs are replayed on threads). */
struct input_count {
    struct counter counters[VT_LEDGERS_MAX];
    uint64_t samples;
    bool counted[VT_LEDGERS_MAX]; /* a counter with a sample */
};

struct measure {
    const struct vt_export_options *opt;
    struct input_count *per_input;
};

static void count_flush(struct input_count *ic, size_t li)
{
    struct counter *c = &ic->counters[li];
    if (!c->pending)
        return;
    ic->samples += 1 + (c->max > c->last);
    ic->counted[li] = true;
    c->pending = false;
}

static void count_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                       const struct vt_live *e, bool begins)
{
    (void)e;
    (void)begins;
    struct measure *m = ctx;
    if (!ledger_selected(m->opt, l))
        return;
    /* Which input: the replay is the input's, at a fixed offset. */
    const struct vt_input *in =
        (const struct vt_input *)((const char *)rp - offsetof(struct vt_input, replay));
    struct input_count *ic = &m->per_input[in->index];
    size_t li = (size_t)(l - rp->ledgers);
    uint64_t v = l->sites.total_bytes, now = rp->last_time_ns;
    struct counter *c = &ic->counters[li];
    if (fold_change(c, now, v))
        return;
    count_flush(ic, li);
    *c = (struct counter){true, now, v, v};
}

static void count_prepare(void *ctx, struct vt_input *in)
{
    in->replay.on_live = count_live;
    in->replay.on_live_ctx = ctx;
}

/* The first read of every input at once by the run stage, which the report
 * reads them with: each one's span and samples, and the report's verdicts
 * of its failures. False when it did not read them all whole (or memory
 * ran out): the exporter's own first replay then says why. */
static bool measure_all(struct perfetto *p, char *const *traces, size_t n,
                        struct input_plan *plans)
{
    struct measure m = {p->opt, calloc(n + 1, sizeof *m.per_input)};
    if (!m.per_input)
        return false;
    struct vt_run_observers obs = {.prepare = count_prepare, .prepare_ctx = &m};
    struct vt_run_result run;
    FILE *quiet = fopen("/dev/null", "w");
    bool ok = quiet && vt_run_traces(traces, n, &obs, &run, quiet) == 0 && !run.unread &&
              run.a.ninputs == n && !run.a.out_of_memory;
    for (size_t i = 0; ok && i < n; i++)
        ok = !strcmp(run.a.inputs[i].path, traces[i]);
    for (size_t i = 0; ok && i < n; i++) {
        const struct vt_input *in = &run.a.inputs[i];
        const struct vt_process_info *pi = vt_input_process(in);
        if (p->opt->has_pid && pi && pi->pid != p->opt->pid)
            continue; /* not written: not counted */
        struct input_count *ic = &m.per_input[i];
        for (size_t li = 0; li < in->replay.nledgers; li++) {
            if (ledger_selected(p->opt, &in->replay.ledgers[li]))
                count_flush(ic, li);
            p->ncounters += ic->counted[li];
        }
        p->samples += ic->samples;
        plans[i].t0 = in->replay.first_time_ns;
        plans[i].t1 = in->replay.last_time_ns;
    }
    if (ok && !vt_export_verdicts_init(&p->verdicts, &run, &p->opt->sym))
        fputs("vramtrace export: out of memory for the report's verdicts: the trace's own "
              "are named\n", stderr);
    if (quiet) {
        vt_run_result_free(&run);
        fclose(quiet);
    }
    free(m.per_input);
    return ok;
}

/* The first replay of an input, where the run stage could not read them
 * all: its span and its samples, counted, and what is wrong said. */
static int measure_input(struct perfetto *p, const char *path, struct input_plan *plan, FILE *err)
{
    struct vt_export_trace t;
    struct vt_export_hooks hooks = {.on_record = on_record, .on_live = on_live, .ctx = p};
    reset_input(p);
    p->measuring = true;
    int status = vt_export_trace_run(&t, path, &hooks, &p->opt->sym, err);
    if (status == 0 && !p->skip) {
        for (size_t i = 0; i < t.replay.nledgers; i++)
            if (ledger_selected(p->opt, &t.replay.ledgers[i]))
                flush_counter(p, &t.replay.ledgers[i], &p->counters[i]);
        plan->t0 = t.replay.first_time_ns;
        plan->t1 = t.replay.last_time_ns;
    }
    p->measuring = false;
    free_input(p);
    vt_export_trace_free(&t);
    return status;
}

static int one_input(struct perfetto *p, const char *path, const struct input_plan *plan,
                     FILE *quiet, FILE *err)
{
    struct vt_export_trace t;
    struct vt_export_hooks hooks = {.on_record = on_record, .on_live = on_live, .ctx = p};
    reset_input(p);
    if (p->downsample) {
        uint64_t columns = VT_PERFETTO_SAMPLES_MAX / (2 * (p->ncounters ? p->ncounters : 1));
        if (columns > VT_PERFETTO_COLUMNS_MAX)
            columns = VT_PERFETTO_COLUMNS_MAX;
        if (columns < VT_PERFETTO_COLUMNS_MIN)
            columns = VT_PERFETTO_COLUMNS_MIN;
        vt_column_grid_init(&p->grid, plan->t0, plan->t1, (size_t)columns);
    }
    /* The first replay said what there was to say about the input. */
    int status = vt_export_trace_run(&t, path, &hooks, &p->opt->sym, quiet ? quiet : err);
    if (status != 0)
        fprintf(err, "vramtrace export: %s: cannot be read again (changed while read?)\n",
                path);
    if (status == 0 && p->out_of_memory) {
        fputs("vramtrace export: out of memory\n", err);
        status = 2;
    }
    if (status == 0 && !p->skip) {
        p->any_selected = true;
        for (size_t i = 0; i < t.replay.nledgers; i++) {
            const struct vt_ledger *l = &t.replay.ledgers[i];
            if (!ledger_selected(p->opt, l))
                continue;
            flush_counter(p, l, &p->counters[i]);
            write_series(p, l, i);
            failures(p, &t, l);
            peak(p, &t, l);
        }
        close_open(p, &t);
        if (!p->any_counter)
            fprintf(err, "vramtrace export: %s: no %s allocated: no counter for it\n", path,
                    p->opt->has_device ? "memory on that device" : "GPU memory");
    }
    free_input(p);
    vt_export_trace_free(&t);
    return status;
}

/* otherData: what the file holds, and what it leaves out. */
static void other_data(struct perfetto *p)
{
    vt_json_key(&p->j, "otherData");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "exporter", "vramtrace export --format perfetto");
    vt_json_kv_string(&p->j, "counters",
                      "bytes live per process and ledger (device N, managed N, pinned host), "
                      "as vramtrace report counts them");
    vt_json_kv_string(&p->j, "ts", "CLOCK_MONOTONIC microseconds");
    vt_json_kv_uint(&p->j, "counter_samples", p->samples);
    vt_json_kv_uint(&p->j, "counter_samples_written", p->written);
    if (p->downsample) {
        vt_json_kv_uint(&p->j, "counter_columns", p->grid.columns);
        vt_json_kv_string(&p->j, "left_out",
                          "counter samples: each counter is cut into counter_columns equal "
                          "columns of its process's time and keeps each column's maximum (at "
                          "its first instant) and last value, so its peak is exact; every "
                          "failure, phase, mark and peak is kept; `vramtrace export --format "
                          "perfetto --all` writes every sample");
    } else {
        vt_json_kv_string(&p->j, "left_out", "nothing");
    }
    vt_json_end_object(&p->j);
}

int vt_export_perfetto(char *const *traces, size_t n, const struct vt_export_options *opt,
                       FILE *out, FILE *err)
{
    struct perfetto *p = calloc(1, sizeof *p);
    struct input_plan *plans = calloc(n + 1, sizeof *plans);
    if (!p || !plans) {
        free(p);
        free(plans);
        fputs("vramtrace export: out of memory\n", err);
        return 2;
    }
    p->opt = opt;
    int status = 0;
    /* The first read: each input's span and how many samples every
     * change would take. It writes nothing; its notes are the second's. */
    if (!measure_all(p, traces, n, plans)) {
        p->samples = p->ncounters = 0;
        vt_export_verdicts_free(&p->verdicts);
        for (size_t i = 0; i < n && status == 0; i++)
            status = measure_input(p, traces[i], &plans[i], err);
    }
    p->downsample = !opt->all && p->samples > VT_PERFETTO_SAMPLES_MAX;
    if (opt->all && status == 0)
        fprintf(err, "vramtrace export: --all: every counter sample: %" PRIu64
                     " samples, about %" PRIu64 " MB\n",
                p->samples, (p->samples * VT_PERFETTO_SAMPLE_BYTES + 999999) / 1000000);
    vt_json_init(&p->j, out, false);
    vt_json_begin_object(&p->j);
    vt_json_key(&p->j, "traceEvents");
    vt_json_begin_array(&p->j);
    fputc('\n', out);
    FILE *quiet = fopen("/dev/null", "w");
    for (size_t i = 0; i < n && status == 0; i++)
        status = one_input(p, traces[i], &plans[i], quiet, err);
    if (quiet)
        fclose(quiet);
    vt_json_end_array(&p->j);
    vt_json_kv_string(&p->j, "displayTimeUnit", "ms");
    other_data(p);
    vt_json_end_object(&p->j);
    vt_json_newline(&p->j);
    if (status == 0 && opt->has_pid && !p->any_selected) {
        fprintf(err, "vramtrace export: no pid %" PRIu64 " in the traces\n", opt->pid);
        status = 2;
    }
    if (status == 0 && p->downsample)
        fprintf(err, "vramtrace export: counters at a screen's resolution (%zu columns): %"
                     PRIu64 " of %" PRIu64 " samples written; --all writes every one\n",
                p->grid.columns, p->written, p->samples);
    vt_export_verdicts_free(&p->verdicts);
    free(plans);
    free(p);
    return status;
}
