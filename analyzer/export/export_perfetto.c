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
 * One read, the run stage's (run_traces.h), which is the report's, so each
 * failure gets its headline verdict from it too: an observer of the
 * exporter's rides along it, counting the counters' samples and noting
 * what the file will say of each record (input_notes.h: on disk, not in
 * memory), and the file is written from the notes once the read is over.
 * Sized to open: when the samples pass VT_PERFETTO_SAMPLES_MAX (a JSON of
 * about 20 MB), each
 * counter is written at a screen's resolution instead (column_series.h:
 * each column's maximum and last value, so the peak stays exact), and
 * otherData says what was left out. Failures, phases, marks and peaks are
 * always all kept. --all writes every sample, its size said first.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "column_series.h"
#include "export.h"
#include "export_input.h"
#include "export_verdicts.h"
#include "format.h"
#include "input_notes.h"
#include "input_tables.h"
#include "json_writer.h"
#include "pair_map.h"
#include "run_traces.h"

/* Above this many counter samples in all (about 100 bytes each) the
 * counters are downsampled; then each gets 2 points per column. */
#define VT_PERFETTO_SAMPLES_MAX 200000
#define VT_PERFETTO_COLUMNS_MAX 10000 /* a few screens' width: room to zoom */
#define VT_PERFETTO_COLUMNS_MIN 256
#define VT_PERFETTO_SAMPLE_BYTES 100  /* a "C" event's line, about */

struct counter {
    bool pending;
    uint64_t ts_ns, last, max;
};

/* What the observer notes of an input, in its records' order, for the
 * file written after the read (input_notes.h): a tag byte, then the
 * note's struct. */
enum note_tag { NOTE_PROCESS = 1, NOTE_THREAD, NOTE_RANGE, NOTE_SAMPLE };

struct note_process {
    uint64_t pid;
};

struct note_thread {          /* followed by name_length bytes of its name */
    uint64_t id, os_tid;
    uint64_t name_length;
};

struct note_range {           /* a range's or a mark's record */
    uint64_t thread, domain, name, range_id, time_ns;
    uint64_t type;
};

struct note_sample {          /* a counter's sample: the changes of one instant */
    uint64_t ledger, ts_ns, max, last;
};

/* One input's, fed on its replay's thread (inputs are replayed on
 * threads): its counters folded instant by instant, the samples counted,
 * and every note the file needs. */
struct watch {
    const struct vt_export_options *opt;
    struct vt_input_notes *notes;
    size_t input;
    bool skip;                 /* --pid selected another process */
    struct counter counters[VT_LEDGERS_MAX]; /* the pending sample stays here at the end */
    uint64_t samples;
    bool counted[VT_LEDGERS_MAX]; /* a counter with a sample */
};

struct watching {
    const struct vt_export_options *opt;
    struct vt_input_notes *notes;
    struct watch *per_input;
    size_t n;
};

struct perfetto {
    struct vt_json j;
    const struct vt_export_options *opt;
    uint64_t pid;              /* the pid events carry */
    bool skip;                 /* --pid selected another process */
    bool any_counter;          /* this input wrote a sample */
    bool any_selected;
    struct vt_pair_map depth;  /* (thread, domain) -> open push ranges */
    struct vt_pair_map pushed; /* ((thread, domain), depth) -> its range's name string id */
    struct vt_pair_map ranges; /* (range id, 0) -> name string id, (range id, 1) -> os tid,
                                * (range id, 2) -> its async id in the file */
    /* A range's id can be any 64-bit number (the phase API's have the top
     * bit set), and JSON readers hold numbers as doubles, exact only up to
     * 2^53: each range gets the next small number instead, never reused. */
    uint64_t async_ids;
    uint64_t samples;          /* every sample: what --all writes */
    uint64_t ncounters;        /* counters with a sample, all inputs */
    /* the file: downsampled counters (downsample) or every sample */
    bool downsample;
    struct vt_column_grid grid;
    struct vt_column_series series[VT_LEDGERS_MAX];
    bool series_used[VT_LEDGERS_MAX];
    uint64_t written;          /* counter samples written */
    /* the counter track of the ledger last sampled, named once: samples
     * come in long runs of one ledger */
    const struct vt_ledger *track_of;
    char track[64];
    bool out_of_memory;
    /* the report's headline verdict of each failure, from the same read */
    struct vt_export_verdicts verdicts;
    /* the read: of these traces, with this observer, its messages kept
     * here until it is known whether it failed */
    char *const *traces;
    size_t ntraces;
    struct watching ws;
    FILE *said;
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
    vt_json_newline(&p->j); /* one event a line: whitespace, still one document */
}

static uint64_t os_tid(const struct vt_input *in, uint64_t thread)
{
    const struct vt_thread_info *ti = vt_input_thread(in, thread);
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

/* ---- the observer: rides along the run stage's read ---- */

static void note(struct watch *w, enum note_tag tag, const void *body, size_t n)
{
    unsigned char t = (unsigned char)tag;
    vt_input_notes_add(w->notes, w->input, &t, 1);
    vt_input_notes_add(w->notes, w->input, body, n);
}

static void watch_flush(struct watch *w, size_t li)
{
    struct counter *c = &w->counters[li];
    if (!c->pending)
        return;
    w->samples += 1 + (c->max > c->last);
    w->counted[li] = true;
    struct note_sample s = {li, c->ts_ns, c->max, c->last};
    note(w, NOTE_SAMPLE, &s, sizeof s);
    c->pending = false;
}

static void watch_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                       const struct vt_live *e, bool begins)
{
    (void)e;
    (void)begins;
    struct watch *w = ctx;
    if (w->skip || !ledger_selected(w->opt, l))
        return;
    size_t li = (size_t)(l - rp->ledgers);
    uint64_t v = l->sites.total_bytes, now = rp->last_time_ns;
    struct counter *c = &w->counters[li];
    if (fold_change(c, now, v))
        return;
    watch_flush(w, li);
    *c = (struct counter){true, now, v, v};
}

static void watch_record(void *ctx, struct vt_replay *rp, const struct vt_record *rec)
{
    (void)rp;
    struct watch *w = ctx;
    if (w->skip)
        return;
    switch (rec->type) {
    case VT_REC_PROCESS: {
        struct note_process n = {rec->u.process->pid};
        note(w, NOTE_PROCESS, &n, sizeof n);
        w->skip = w->opt->has_pid && n.pid != w->opt->pid;
        break;
    }
    case VT_REC_THREAD: {
        const struct vt_thread_info *ti = rec->u.thread;
        struct note_thread n = {ti->id, ti->os_tid, ti->name ? strlen(ti->name) : 0};
        note(w, NOTE_THREAD, &n, sizeof n);
        vt_input_notes_add(w->notes, w->input, ti->name ? ti->name : "", n.name_length);
        break;
    }
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK: {
        struct note_range n = {rec->u.range.thread, rec->u.range.domain, rec->u.range.name,
                               rec->u.range.range_id, rec->time_ns, rec->type};
        note(w, NOTE_RANGE, &n, sizeof n);
        break;
    }
    default: /* memory comes from the replay (on_live); definitions are the tables */
        break;
    }
}

static void watch_prepare(void *ctx, struct vt_input *in)
{
    struct watching *ws = ctx;
    if (in->index >= ws->n)
        return; /* more inputs than traces: the read is refused below */
    struct watch *w = &ws->per_input[in->index];
    *w = (struct watch){.opt = ws->opt, .notes = ws->notes, .input = in->index};
    in->replay.on_live = watch_live;
    in->replay.on_live_ctx = w;
    in->replay.on_record = watch_record;
    in->replay.on_record_ctx = w;
}

/* The one read, by the run stage, which the report reads them with: each
 * input's notes and samples, and the report's verdicts of its failures.
 * False (after what went wrong, on err) when it did not read them all
 * whole. */
static bool read_whole(struct perfetto *p, const struct vt_run_result *run, FILE *err)
{
    struct watching *ws = &p->ws;
    size_t n = p->ntraces;
    bool ok = vt_export_read_all(run, p->traces, n) && !run->a.out_of_memory;
    if (!ok) {
        char buf[4096];
        size_t got;
        rewind(p->said);
        while ((got = fread(buf, 1, sizeof buf, p->said)) > 0)
            fwrite(buf, 1, got, err);
    }
    if (ok && !vt_input_notes_whole(ws->notes)) {
        fputs("vramtrace export: the notes of the read could not be kept (disk full?)\n",
              err);
        ok = false;
    }
    for (size_t i = 0; ok && i < n; i++) {
        const struct vt_input *in = &run->a.inputs[i];
        const struct vt_process_info *pi = vt_input_process(in);
        if (p->opt->has_pid && pi && pi->pid != p->opt->pid)
            continue; /* not written: not counted */
        struct watch *w = &ws->per_input[i];
        for (size_t li = 0; li < in->replay.nledgers; li++) {
            struct counter *c = &w->counters[li];
            if (ledger_selected(p->opt, &in->replay.ledgers[li]) && c->pending) {
                w->samples += 1 + (c->max > c->last); /* written with the input's end */
                w->counted[li] = true;
            }
            p->ncounters += w->counted[li];
        }
        p->samples += w->samples;
    }
    if (ok && !vt_export_verdicts_init(&p->verdicts, run, &p->opt->sym))
        fputs("vramtrace export: out of memory for the report's verdicts: the trace's own "
              "are named\n", stderr);
    return ok;
}

/* ---- the file, written from the notes ---- */

static void write_sample(struct perfetto *p, const struct vt_ledger *l, size_t li,
                         uint64_t ts_ns, uint64_t max, uint64_t last)
{
    if (p->downsample) {
        /* The instant's maximum, then its last value: a column keeps the
         * same maximum and last value as from every change. */
        if (!p->series_used[li]) {
            if (!vt_column_series_init(&p->series[li], &p->grid, 0, 0, NULL)) {
                p->out_of_memory = true;
                return;
            }
            p->series_used[li] = true;
        }
        vt_column_series_set(&p->series[li], &p->grid, ts_ns, max, NULL);
        vt_column_series_set(&p->series[li], &p->grid, ts_ns, last, NULL);
        return;
    }
    p->written += 1 + (max > last);
    if (p->track_of != l) {
        vt_ledger_label(l, p->track, sizeof p->track);
        p->track_of = l;
    }
    if (max > last)
        sample(p, p->track, ts_ns, max);
    sample(p, p->track, ts_ns, last);
    p->any_counter = true;
}

static void thread_name(struct perfetto *p, const char *name, uint64_t os_tid_, uint64_t id)
{
    if (!name[0])
        return;
    begin_event(p, "M", "thread_name", os_tid_ ? os_tid_ : id);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "name", name);
    vt_json_end_object(&p->j);
    end_event(p);
}

static void process_name(struct perfetto *p, const struct vt_input *in)
{
    char name[512];
    vt_export_input_name(in, name, sizeof name);
    begin_event(p, "M", "process_name", p->pid);
    vt_json_key(&p->j, "args");
    vt_json_begin_object(&p->j);
    vt_json_kv_string(&p->j, "name", name);
    vt_json_end_object(&p->j);
    end_event(p);
    long rank = vt_export_input_rank(in);
    if (rank >= 0) {
        begin_event(p, "M", "process_sort_index", p->pid);
        vt_json_key(&p->j, "args");
        vt_json_begin_object(&p->j);
        vt_json_kv_int(&p->j, "sort_index", rank);
        vt_json_end_object(&p->j);
        end_event(p);
    }
}

static void range_event(struct perfetto *p, const struct vt_input *in, const struct note_range *r)
{
    const char *name = NULL;
    uint64_t tid = os_tid(in, r->thread);
    uint64_t key = r->thread | r->domain << 32, *depth;
    switch (r->type) {
    case VT_REC_RANGE_PUSH: {
        depth = vt_pair_map_get(&p->depth, key, 0);
        uint64_t d = (depth ? *depth : 0) + 1;
        vt_pair_map_put(&p->depth, key, 0, d);
        vt_pair_map_put(&p->pushed, key, d, r->name);
        begin_event(p, "B", vt_input_string(in, r->name), tid);
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
        begin_event(p, "E", named ? vt_input_string(in, n) : NULL, tid);
        break;
    }
    case VT_REC_RANGE_START:
        vt_pair_map_put(&p->ranges, r->range_id, 0, r->name);
        vt_pair_map_put(&p->ranges, r->range_id, 1, tid);
        vt_pair_map_put(&p->ranges, r->range_id, 2, ++p->async_ids);
        begin_event(p, "b", vt_input_string(in, r->name), tid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", p->async_ids);
        break;
    case VT_REC_RANGE_END: {
        uint64_t n, id = 0;
        if (!vt_pair_map_remove(&p->ranges, r->range_id, 0, &n))
            return;
        vt_pair_map_remove(&p->ranges, r->range_id, 1, NULL);
        vt_pair_map_remove(&p->ranges, r->range_id, 2, &id);
        name = vt_input_string(in, n);
        begin_event(p, "e", name, tid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", id);
        break;
    }
    default: /* VT_REC_MARK */
        begin_event(p, "i", vt_input_string(in, r->name), tid);
        vt_json_kv_string(&p->j, "s", "t");
        break;
    }
    ts(p, r->time_ns);
    end_event(p);
}

static void args_bytes(struct perfetto *p, const char *key, bool known, uint64_t v)
{
    vt_json_kv_uint_or_null(&p->j, key, known, v);
}

static void failures(struct perfetto *p, struct vt_export_input *x, const struct vt_ledger *l)
{
    const struct vt_input *in = x->in;
    char ledger[64], req[32], name[160];
    vt_ledger_label(l, ledger, sizeof ledger);
    for (size_t k = 0; k < l->nooms; k++) {
        const struct vt_oom *o = &l->ooms[k];
        /* The report's headline verdict: the trace's own may have given
         * way to the allocator's, which every view then names. */
        const char *verdict = vt_export_verdict(&p->verdicts, in->path, l->device, o->time_ns,
                                                o->requested_bytes);
        if (!verdict)
            verdict = vt_verdict_name(o->verdict);
        snprintf(name, sizeof name, "allocation failed: %s on %s (%s)",
                 vt_format_bytes(o->requested_bytes, req, sizeof req), ledger, verdict);
        begin_event(p, "i", name, os_tid(in, o->thread));
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
        vt_json_kv_string(&p->j, "api", vt_input_api(in, o->api));
        vt_json_kv_string(&p->j, "phase", vt_input_string(in, o->phase));
        /* The site as every view names it (the report's user_frame). */
        char site[512];
        vt_json_kv_string(&p->j, "site", vt_export_input_site(x, o->stack, site, sizeof site));
        vt_json_end_object(&p->j);
        end_event(p);
    }
}

static void peak(struct perfetto *p, struct vt_export_input *x, const struct vt_ledger *l)
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
    const char *top = top_bytes ? vt_export_input_site(x, top_stack, site, sizeof site) : NULL;
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
static void close_open(struct perfetto *p, const struct vt_input *in)
{
    uint64_t last_ns = in->replay.last_time_ns;
    for (size_t i = 0; i < p->depth.cap; i++) {
        const struct vt_pair_slot *s = &p->depth.slots[i];
        if (!s->used)
            continue;
        uint64_t tid = os_tid(in, s->a & 0xffffffffu); /* the key: thread | domain << 32 */
        for (uint64_t d = s->value; d > 0; d--) {
            const uint64_t *n = vt_pair_map_get(&p->pushed, s->a, d);
            begin_event(p, "E", n ? vt_input_string(in, *n) : NULL, tid);
            ts(p, last_ns);
            end_event(p);
        }
    }
    for (size_t i = 0; i < p->ranges.cap; i++) {
        const struct vt_pair_slot *s = &p->ranges.slots[i];
        if (!s->used || s->b != 0)
            continue;
        const uint64_t *tid = vt_pair_map_get(&p->ranges, s->a, 1);
        const uint64_t *id = vt_pair_map_get(&p->ranges, s->a, 2);
        begin_event(p, "e", vt_input_string(in, s->value), tid ? *tid : p->pid);
        vt_json_kv_string(&p->j, "cat", "phase");
        vt_json_kv_uint(&p->j, "id", id ? *id : 0);
        ts(p, last_ns);
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

/* The thread's name of a NOTE_THREAD, into name (cut to fit). */
static bool read_thread_name(struct vt_input_notes_cursor *c, uint64_t length, char *name,
                             size_t size)
{
    size_t kept = length < size ? (size_t)length : size - 1;
    if (!vt_input_notes_next(c, name, kept))
        return false;
    name[kept] = '\0';
    char rest[256];
    for (uint64_t left = length - kept; left > 0;) {
        size_t n = left < sizeof rest ? (size_t)left : sizeof rest;
        if (!vt_input_notes_next(c, rest, n))
            return false;
        left -= n;
    }
    return true;
}

/* An input's notes, in its records' order, as events (the counters'
 * samples, or their columns when downsampled). */
static void read_notes(struct perfetto *p, const struct vt_input *in,
                       struct vt_input_notes_cursor *c)
{
    unsigned char tag;
    while (!p->out_of_memory && vt_input_notes_next(c, &tag, 1)) {
        switch (tag) {
        case NOTE_PROCESS: {
            struct note_process n;
            if (!vt_input_notes_next(c, &n, sizeof n))
                return;
            if (p->opt->has_pid && n.pid != p->opt->pid) {
                p->skip = true;
                return;
            }
            p->pid = n.pid;
            process_name(p, in);
            break;
        }
        case NOTE_THREAD: {
            struct note_thread n;
            char name[4096];
            if (!vt_input_notes_next(c, &n, sizeof n) ||
                !read_thread_name(c, n.name_length, name, sizeof name))
                return;
            thread_name(p, name, n.os_tid, n.id);
            break;
        }
        case NOTE_RANGE: {
            struct note_range n;
            if (!vt_input_notes_next(c, &n, sizeof n))
                return;
            range_event(p, in, &n);
            break;
        }
        case NOTE_SAMPLE: {
            struct note_sample n;
            if (!vt_input_notes_next(c, &n, sizeof n))
                return;
            write_sample(p, &in->replay.ledgers[n.ledger], n.ledger, n.ts_ns, n.max, n.last);
            break;
        }
        default:
            return;
        }
    }
}

static void replay_notes(struct perfetto *p, const struct vt_input *in,
                         struct vt_input_notes *notes)
{
    struct vt_input_notes_cursor c;
    if (!vt_input_notes_rewind(notes, in->index, &c)) {
        p->out_of_memory = true;
        return;
    }
    read_notes(p, in, &c);
    vt_input_notes_cursor_free(&c);
}

/* One input: its notes, then its counters' last samples, failures, peaks
 * and the ranges still open. */
static int write_input(struct perfetto *p, const struct vt_input *in, const struct watch *w,
                       struct vt_input_notes *notes, FILE *err)
{
    reset_input(p);
    if (p->downsample) {
        uint64_t columns = VT_PERFETTO_SAMPLES_MAX / (2 * (p->ncounters ? p->ncounters : 1));
        if (columns > VT_PERFETTO_COLUMNS_MAX)
            columns = VT_PERFETTO_COLUMNS_MAX;
        if (columns < VT_PERFETTO_COLUMNS_MIN)
            columns = VT_PERFETTO_COLUMNS_MIN;
        vt_column_grid_init(&p->grid, in->replay.first_time_ns, in->replay.last_time_ns,
                            (size_t)columns);
    }
    replay_notes(p, in, notes);
    int status = 0;
    if (p->out_of_memory) {
        fputs("vramtrace export: out of memory\n", err);
        status = 2;
    }
    if (status == 0 && !p->skip) {
        struct vt_export_input x;
        vt_export_input_init(&x, in, &p->opt->sym);
        p->any_selected = true;
        for (size_t i = 0; i < in->replay.nledgers; i++) {
            const struct vt_ledger *l = &in->replay.ledgers[i];
            if (!ledger_selected(p->opt, l))
                continue;
            const struct counter *c = &w->counters[i];
            if (c->pending)
                write_sample(p, l, i, c->ts_ns, c->max, c->last);
            write_series(p, l, i);
            failures(p, &x, l);
            peak(p, &x, l);
        }
        close_open(p, in);
        vt_export_input_free(&x);
        if (!p->any_counter)
            fprintf(err, "vramtrace export: %s: no %s allocated: no counter for it\n", in->path,
                    p->opt->has_device ? "memory on that device" : "GPU memory");
    }
    free_input(p);
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

void *vt_export_perfetto_plan(char *const *traces, size_t n,
                              const struct vt_export_options *opt, struct vt_run_observers *obs,
                              FILE **said, FILE *err)
{
    struct perfetto *p = calloc(1, sizeof *p);
    struct vt_input_notes *notes = vt_input_notes_new(n);
    struct watch *per_input = calloc(n + 1, sizeof *per_input);
    if (!p || !notes || !per_input) {
        free(p);
        vt_input_notes_free(notes);
        free(per_input);
        fputs("vramtrace export: out of memory (or no temporary file)\n", err);
        return NULL;
    }
    p->opt = opt;
    p->traces = traces;
    p->ntraces = n;
    p->ws = (struct watching){opt, notes, per_input, n};
    /* Said only when the read fails: a trace cut short is written as far
     * as it goes, without a word. */
    p->said = tmpfile();
    if (!p->said) {
        fputs("vramtrace export: no temporary file for the read's messages\n", err);
        vt_export_perfetto_free(p);
        return NULL;
    }
    *said = p->said;
    obs->prepare = watch_prepare;
    obs->prepare_ctx = &p->ws;
    return p;
}

int vt_export_perfetto_write(void *state, const struct vt_run_result *run, FILE *out,
                             FILE *err)
{
    struct perfetto *p = state;
    const struct vt_export_options *opt = p->opt;
    int status = read_whole(p, run, err) ? 0 : 2;
    p->downsample = !opt->all && p->samples > VT_PERFETTO_SAMPLES_MAX;
    if (opt->all && status == 0)
        fprintf(err, "vramtrace export: --all: every counter sample: %" PRIu64
                     " samples, about %" PRIu64 " MB\n",
                p->samples, (p->samples * VT_PERFETTO_SAMPLE_BYTES + 999999) / 1000000);
    vt_json_init(&p->j, out, false);
    vt_json_begin_object(&p->j);
    vt_json_key(&p->j, "traceEvents");
    vt_json_begin_array(&p->j);
    vt_json_newline(&p->j);
    for (size_t i = 0; i < p->ntraces && status == 0; i++)
        status = write_input(p, &run->a.inputs[i], &p->ws.per_input[i], p->ws.notes, err);
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
    return status;
}

void vt_export_perfetto_free(void *state)
{
    struct perfetto *p = state;
    if (!p)
        return;
    vt_export_verdicts_free(&p->verdicts);
    vt_input_notes_free(p->ws.notes);
    free(p->ws.per_input);
    if (p->said)
        fclose(p->said);
    free(p);
}
