/*
 * `vramtrace export --format memory-viz`: a PyTorch memory snapshot (the
 * dict torch.cuda.memory._dump_snapshot pickles) that pytorch.org/memory_viz
 * opens on its "Active Memory Timeline" and "Allocator State History" tabs,
 * and that `vramtrace report` reads back to the same figures.
 *
 * A trace sees the driver, not PyTorch's allocator, so each device
 * allocation is its own segment holding one block of its size: its begin is
 * segment_alloc + alloc, its end free_requested + free_completed +
 * segment_free (the replay's live set decides both, through on_live), a
 * failed allocation an oom entry (size: the request; device_free: the
 * driver's free memory then). The final `segments` are the allocations
 * live at the end of the trace, so the trace and the final state agree, as
 * memory_viz's segment view requires. Frames are the allocation's stack,
 * innermost first, {filename, line, name}; a free carries its allocation's
 * frames. VMM handles and arrays have no address of their own: they get
 * made-up addresses from 2^52 up, never reused, so that no two live
 * segments overlap. One process per file (--pid picks it).
 *
 * Sized to open (issue 29): the trace keeps the latest max_entries entries
 * (default 100,000: PyTorch's own default history) in a ring, so memory is
 * bounded by that and the live set, never by the trace's length; --since
 * and --until (or --at) window it, and the segments are those live at the
 * window's end. The `vramtrace` key says what was left out. --all keeps
 * every entry (memory grows with them; their size is said first).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_trace.h"
#include "grow_array.h"
#include "pair_map.h"
#include "pickle_writer.h"

#define MADE_UP_BASE ((uint64_t)1 << 52)
#define MV_ENTRIES_DEFAULT 100000   /* torch.cuda.memory._record_memory_history's max_entries */
#define MV_ENTRY_BYTES 45           /* an entry in the pickle, about (frames memoized) */

enum mv_action { MV_SEGMENT_ALLOC, MV_ALLOC, MV_FREE_REQUESTED, MV_FREE_COMPLETED,
                 MV_SEGMENT_FREE, MV_OOM };
static const char *const action_names[] = {"segment_alloc", "alloc", "free_requested",
                                           "free_completed", "segment_free", "oom"};

struct mv_event {
    uint8_t action;
    int64_t device;
    uint64_t addr, size, stack, time_ns, device_free;
};

struct mv_alloc {
    int64_t device;
    uint64_t addr, size, stack;
    bool ended;                /* a free slot (its index on the free list) */
};

struct memviz {
    const struct vt_export_options *opt;
    /* the trace entries: a ring of the latest `limit` (limit 0: all, grown) */
    struct mv_event *ev;
    size_t nev, ev_cap, head;  /* head: the oldest, once the ring is full */
    size_t limit;
    uint64_t entries;          /* every entry of the window, written or not */
    /* the live allocations: slots, reused through a free list */
    struct mv_alloc *allocs;
    size_t nallocs, allocs_cap;
    uint64_t *free_slots;
    size_t nfree, free_cap;
    struct vt_pair_map live;   /* (kind, key) -> index in allocs */
    uint64_t made_up;          /* next made-up address */
    int64_t max_device;
    /* the window, in the trace's time (absolute ns) once the origin is known */
    uint64_t origin_ns;
    bool window_open, window_closed;
    /* --at peak / oom:N: the instant a first replay found */
    bool has_end;
    uint64_t end_ns;            /* oom:N: the failure's time */
    size_t end_ledger;          /* peak: the ledger, its bytes and time */
    uint64_t end_bytes;
    bool close_next;            /* the peak was reached: the next record is past it */
    bool skip, out_of_memory;
    /* --all: a first replay counts (counting), then one a device writes its
     * entries as they come (stream, stream_device): nothing held */
    bool counting;
    struct writer *stream;
    int64_t stream_device;
};

static bool ledger_selected(const struct vt_export_options *opt, const struct vt_ledger *l)
{
    return l->category == VT_CAT_DEVICE && (!opt->has_device || l->device == opt->device);
}

struct writer;
static void write_entry(struct writer *wr, const struct mv_event *e);

/* An entry of the window: counted (--all's first replay), written as it
 * comes (--all's later ones: one device's), or kept in the ring (a new
 * one, or the oldest overwritten once full). */
static void push(struct memviz *m, enum mv_action a, int64_t device, uint64_t addr,
                 uint64_t size, uint64_t stack, uint64_t time_ns, uint64_t device_free)
{
    if (!m->window_open)
        return;
    m->entries++;
    struct mv_event new = {(uint8_t)a, device, addr, size, stack, time_ns, device_free};
    if (m->counting)
        return;
    if (m->stream) {
        if (device == m->stream_device)
            write_entry(m->stream, &new);
        return;
    }
    struct mv_event *e;
    if (m->limit && m->nev == m->limit) {
        e = &m->ev[m->head];
        m->head = (m->head + 1) % m->limit;
    } else {
        if (!vt_grow_array((void **)&m->ev, &m->ev_cap, m->nev + 1, sizeof *m->ev)) {
            m->out_of_memory = true;
            return;
        }
        e = &m->ev[m->nev++];
    }
    *e = new;
}

/* The ith entry kept, oldest first. */
static const struct mv_event *entry(const struct memviz *m, size_t i)
{
    return &m->ev[m->limit && m->nev == m->limit ? (m->head + i) % m->limit : i];
}

static bool on_record(void *ctx, struct vt_export_trace *t, const struct vt_record *rec)
{
    (void)t;
    struct memviz *m = ctx;
    const struct vt_export_options *opt = m->opt;
    if (rec->type == VT_REC_PROCESS) {
        if (opt->has_pid && rec->u.process->pid != opt->pid) {
            m->skip = true;
            return false;
        }
        m->origin_ns = rec->u.process->start_mono_ns;
    }
    if (m->close_next || (m->has_end && vt_record_is_timed(rec->type) &&
                          rec->time_ns > m->end_ns)) {
        m->window_closed = true;
        return false;
    }
    if (vt_record_is_timed(rec->type)) {
        /* The report's origin: the process start when known, else its
         * first event (export_folded.c counts --at TIME the same way). */
        if (!m->origin_ns || m->origin_ns > rec->time_ns)
            m->origin_ns = rec->time_ns;
        uint64_t since = rec->time_ns - m->origin_ns;
        if (opt->has_until && since > opt->until_ns) {
            m->window_closed = true;
            return false; /* the segments: those live at the window's end */
        }
        m->window_open = !opt->has_since || since >= opt->since_ns;
    }
    return !m->out_of_memory;
}

static bool new_slot(struct memviz *m, uint64_t *index)
{
    if (m->nfree) {
        *index = m->free_slots[--m->nfree];
        return true;
    }
    if (!vt_grow_array((void **)&m->allocs, &m->allocs_cap, m->nallocs + 1, sizeof *m->allocs))
        return false;
    *index = m->nallocs++;
    return true;
}

static void free_slot(struct memviz *m, uint64_t index)
{
    m->allocs[index].ended = true;
    if (vt_grow_array((void **)&m->free_slots, &m->free_cap, m->nfree + 1,
                      sizeof *m->free_slots))
        m->free_slots[m->nfree++] = index; /* else the slot is not reused: no harm */
}

static void on_live(void *ctx, struct vt_export_trace *t, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct memviz *m = ctx;
    /* a context is no segment of the allocator's */
    if (!ledger_selected(m->opt, l) || e->size == 0 || e->kind == VT_KIND_CONTEXT)
        return;
    int64_t device = l->device < 0 ? 0 : l->device;
    if (begins) {
        uint64_t addr = e->addr;
        if (e->kind == VT_KIND_VMM_PHYSICAL || e->kind == VT_KIND_ARRAY) {
            addr = MADE_UP_BASE + m->made_up;
            m->made_up += (e->size + 0x1fffff) & ~(uint64_t)0x1fffff; /* 2 MiB apart */
        }
        uint64_t slot;
        if (!new_slot(m, &slot) || !vt_pair_map_put(&m->live, e->kind, e->addr, slot)) {
            m->out_of_memory = true;
            return;
        }
        uint64_t stack = l->sites.sites[e->site].stack;
        m->allocs[slot] = (struct mv_alloc){device, addr, e->size, stack, false};
        if (m->opt->until_at && m->opt->at == VT_AT_PEAK && m->has_end &&
            (size_t)(l - t->replay.ledgers) == m->end_ledger &&
            l->sites.total_bytes == m->end_bytes && t->now_ns == m->end_ns)
            m->close_next = true; /* the peak's first instant: the window ends here */
        if (device > m->max_device)
            m->max_device = device;
        push(m, MV_SEGMENT_ALLOC, device, addr, e->size, stack, t->now_ns, 0);
        push(m, MV_ALLOC, device, addr, e->size, stack, t->now_ns, 0);
        return;
    }
    uint64_t i;
    if (!vt_pair_map_remove(&m->live, e->kind, e->addr, &i))
        return;
    struct mv_alloc a = m->allocs[i];
    free_slot(m, i);
    push(m, MV_FREE_REQUESTED, a.device, a.addr, a.size, a.stack, t->now_ns, 0);
    push(m, MV_FREE_COMPLETED, a.device, a.addr, a.size, a.stack, t->now_ns, 0);
    push(m, MV_SEGMENT_FREE, a.device, a.addr, a.size, a.stack, t->now_ns, 0);
}

static void on_oom(void *ctx, struct vt_export_trace *t, struct vt_ledger *l, struct vt_oom *o)
{
    (void)t;
    struct memviz *m = ctx;
    if (!ledger_selected(m->opt, l))
        return;
    int64_t device = l->device < 0 ? 0 : l->device;
    if (device > m->max_device)
        m->max_device = device;
    /* Failures are diagnosed when the replay ends: those in the window
     * (after --since, before the record that closed it) are entries. */
    uint64_t since = o->time_ns >= m->origin_ns ? o->time_ns - m->origin_ns : 0;
    if ((m->opt->has_since && since < m->opt->since_ns) ||
        (m->opt->has_until && since > m->opt->until_ns))
        return;
    m->window_open = true;
    push(m, MV_OOM, device, 0, o->requested_bytes, o->stack, o->time_ns,
         o->driver_info ? o->free_bytes : 0);
}

/* ---- --at peak / oom:N: a first replay finds the instant ---- */

struct find_end {
    const struct vt_export_options *opt;
    uint64_t failures, oom_ns;
    bool oom_found, skip;
};

static bool find_record(void *ctx, struct vt_export_trace *t, const struct vt_record *rec)
{
    (void)t;
    struct find_end *f = ctx;
    if (rec->type == VT_REC_PROCESS && f->opt->has_pid && rec->u.process->pid != f->opt->pid) {
        f->skip = true;
        return false;
    }
    return true;
}

static void find_oom(void *ctx, struct vt_export_trace *t, struct vt_ledger *l, struct vt_oom *o)
{
    (void)t;
    struct find_end *f = ctx;
    /* as export_folded.c counts oom:N: the failures in the order diagnosed */
    if (ledger_selected(f->opt, l) && ++f->failures == f->opt->oom && !f->oom_found) {
        f->oom_found = true;
        f->oom_ns = o->time_ns;
    }
}

/* Sets m's end from a first replay of path. Returns 0 (no end: the process
 * was not selected, or has no peak), or 2 after a message on err. */
static int find_window_end(struct memviz *m, const char *path, FILE *err)
{
    struct find_end f = {.opt = m->opt};
    struct vt_export_trace t;
    struct vt_export_hooks hooks = {.on_record = find_record, .on_oom = find_oom, .ctx = &f};
    int status = vt_export_trace_run(&t, path, &hooks, &m->opt->sym, err);
    if (status == 0 && !f.skip && m->opt->at == VT_AT_PEAK) {
        for (size_t i = 0; i < t.replay.nledgers; i++) {
            const struct vt_ledger *l = &t.replay.ledgers[i];
            if (ledger_selected(m->opt, l) && l->peak.has_peak &&
                (!m->has_end || l->peak.peak_bytes > m->end_bytes)) {
                m->has_end = true;
                m->end_ledger = i;
                m->end_bytes = l->peak.peak_bytes;
                m->end_ns = l->peak.peak_time_ns;
            }
        }
    } else if (status == 0 && !f.skip) {
        if (!f.oom_found) {
            fprintf(err, "vramtrace export: %s: %" PRIu64 " failed allocation%s, no failure %"
                         PRIu64 "\n",
                    path, f.failures, f.failures == 1 ? "" : "s", m->opt->oom);
            status = 2;
        } else {
            m->has_end = true;
            m->end_ns = f.oom_ns;
        }
    }
    vt_export_trace_free(&t);
    return status;
}

/* ---- writing ---- */

struct writer {
    struct vt_pickle_writer w;
    struct vt_export_trace *t;
    struct vt_pair_map frames_memo;  /* (stack, 0) -> memo index of its frames list */
    struct vt_pair_map str_memo;     /* (address of a constant string, 0) -> memo index */
    bool out_of_memory;
};

/* A constant string (a key, an action), memoized on first use. */
static void cstr(struct writer *wr, const char *s)
{
    uint64_t *idx = vt_pair_map_get(&wr->str_memo, (uint64_t)(uintptr_t)s, 0);
    if (idx) {
        vt_pw_get(&wr->w, *idx);
        return;
    }
    vt_pw_str(&wr->w, s);
    if (!vt_pair_map_put(&wr->str_memo, (uint64_t)(uintptr_t)s, 0, vt_pw_memoize(&wr->w)))
        wr->out_of_memory = true;
}

static void frame_dict(void *ctx, const struct vt_frame *f)
{
    struct writer *wr = ctx;
    char name[512];
    vt_pw_dict_begin(&wr->w);
    cstr(wr, "filename");
    vt_pw_str(&wr->w, f->file ? f->file : f->module ? f->module : "??");
    cstr(wr, "line");
    vt_pw_int(&wr->w, f->file ? (int64_t)f->line : 0);
    cstr(wr, "name");
    if (f->function)
        vt_pw_str(&wr->w, f->function);
    else
        vt_pw_str(&wr->w, vt_export_frame_label(f, name, sizeof name));
    vt_pw_dict_end(&wr->w);
}

static void frames(struct writer *wr, uint64_t stack)
{
    uint64_t *idx = vt_pair_map_get(&wr->frames_memo, stack, 0);
    if (idx) {
        vt_pw_get(&wr->w, *idx);
        return;
    }
    vt_pw_list_begin(&wr->w);
    vt_export_frames(wr->t, stack, frame_dict, wr);
    vt_pw_list_end(&wr->w);
    if (!vt_pair_map_put(&wr->frames_memo, stack, 0, vt_pw_memoize(&wr->w)))
        wr->out_of_memory = true;
}

static void kv_uint(struct writer *wr, const char *key, uint64_t v)
{
    cstr(wr, key);
    vt_pw_int(&wr->w, (int64_t)v);
}

static int by_address(const void *a, const void *b)
{
    const struct mv_alloc *x = *(const struct mv_alloc *const *)a;
    const struct mv_alloc *y = *(const struct mv_alloc *const *)b;
    if (x->device != y->device)
        return x->device < y->device ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void segments(struct writer *wr, struct memviz *m)
{
    struct mv_alloc **live = calloc(m->nallocs + 1, sizeof *live);
    size_t n = 0;
    if (!live) {
        wr->out_of_memory = true;
        return;
    }
    for (size_t i = 0; i < m->nallocs; i++)
        if (!m->allocs[i].ended)
            live[n++] = &m->allocs[i];
    qsort(live, n, sizeof *live, by_address);
    for (size_t i = 0; i < n; i++) {
        const struct mv_alloc *a = live[i];
        vt_pw_dict_begin(&wr->w);
        kv_uint(wr, "device", (uint64_t)a->device);
        kv_uint(wr, "address", a->addr);
        kv_uint(wr, "total_size", a->size);
        kv_uint(wr, "allocated_size", a->size);
        kv_uint(wr, "active_size", a->size);
        kv_uint(wr, "requested_size", a->size);
        kv_uint(wr, "stream", 0);
        cstr(wr, "segment_type");
        cstr(wr, a->size <= ((uint64_t)1 << 20) ? "small" : "large");
        cstr(wr, "segment_pool_id");
        vt_pw_int_pair(&wr->w, 0, 0);
        cstr(wr, "is_expandable");
        vt_pw_bool(&wr->w, false);
        cstr(wr, "frames");
        frames(wr, a->stack);
        cstr(wr, "blocks");
        vt_pw_list_begin(&wr->w);
        vt_pw_dict_begin(&wr->w);
        kv_uint(wr, "address", a->addr);
        kv_uint(wr, "size", a->size);
        kv_uint(wr, "requested_size", a->size);
        cstr(wr, "state");
        cstr(wr, "active_allocated");
        cstr(wr, "frames");
        frames(wr, a->stack);
        vt_pw_dict_end(&wr->w);
        vt_pw_list_end(&wr->w);
        vt_pw_dict_end(&wr->w);
    }
    free(live);
}

/* PyTorch's time_us is wall-clock microseconds since 1970 (memory_viz shows
 * it as a date); trace times are CLOCK_MONOTONIC. The process record holds
 * both clocks read at its start: the offset between them converts. Without
 * it, monotonic microseconds (a date in 1970, but the order and the
 * intervals right). */
static uint64_t wall_us(const struct vt_export_trace *t, uint64_t mono_ns)
{
    const struct vt_process_info *p = vt_reader_process(t->reader);
    if (p && p->start_realtime_ns && p->start_mono_ns && mono_ns >= p->start_mono_ns)
        return (p->start_realtime_ns + (mono_ns - p->start_mono_ns)) / 1000;
    return mono_ns / 1000;
}

static void write_entry(struct writer *wr, const struct mv_event *e)
{
    vt_pw_dict_begin(&wr->w);
    cstr(wr, "action");
    cstr(wr, action_names[e->action]);
    if (e->action == MV_OOM)
        kv_uint(wr, "device_free", e->device_free);
    else
        kv_uint(wr, "addr", e->addr);
    kv_uint(wr, "size", e->size);
    kv_uint(wr, "stream", 0);
    kv_uint(wr, "time_us", wall_us(wr->t, e->time_ns));
    cstr(wr, "frames");
    frames(wr, e->stack);
    vt_pw_dict_end(&wr->w);
}

static void device_trace(struct writer *wr, struct memviz *m, int64_t device)
{
    vt_pw_list_begin(&wr->w);
    for (size_t i = 0; i < m->nev; i++) {
        const struct mv_event *e = entry(m, i);
        if (e->device == device)
            write_entry(wr, e);
    }
    vt_pw_list_end(&wr->w);
}

/* The `vramtrace` key: where the file came from and what it left out. */
static void meta(struct writer *wr, const struct memviz *m, const struct vt_export_trace *t,
                 uint64_t written)
{
    cstr(wr, "vramtrace");
    vt_pw_dict_begin(&wr->w);
    vt_pw_kv_str(&wr->w, "note",
                 "exported from a driver-level trace: each device allocation is its own "
                 "segment and block");
    vt_pw_kv_str(&wr->w, "trace", t ? t->path : "");
    vt_pw_kv_int(&wr->w, "pid", t ? (int64_t)vt_export_pid(t->reader) : 0);
    vt_pw_kv_int(&wr->w, "entries", (int64_t)m->entries);
    vt_pw_kv_int(&wr->w, "entries_written", (int64_t)written);
    vt_pw_kv_int(&wr->w, "max_entries", (int64_t)m->limit);
    if (m->opt->has_since)
        vt_pw_kv_int(&wr->w, "since_ns", (int64_t)m->opt->since_ns);
    if (m->opt->has_until)
        vt_pw_kv_int(&wr->w, "until_ns", (int64_t)m->opt->until_ns);
    if (m->opt->until_at)
        vt_pw_kv_str(&wr->w, "until", m->opt->at == VT_AT_PEAK ? "peak" : "oom");
    vt_pw_kv_str(&wr->w, "left_out",
                 m->entries > written
                     ? "the oldest trace entries of the window: only the latest max_entries "
                       "are kept (as PyTorch's own history); segments are those live at the "
                       "window's end; --all keeps every entry"
                     : m->opt->has_since || m->opt->has_until || m->opt->until_at
                           ? "the trace entries outside the window; segments are those live "
                             "at the window's end"
                           : "nothing");
    vt_pw_dict_end(&wr->w);
}

static bool write_snapshot(struct memviz *m, struct vt_export_trace *t, FILE *out)
{
    struct writer wr = {.t = t};
    vt_pair_map_init(&wr.frames_memo);
    vt_pair_map_init(&wr.str_memo);
    vt_pw_begin(&wr.w, out);
    vt_pw_dict_begin(&wr.w);
    cstr(&wr, "segments");
    vt_pw_list_begin(&wr.w);
    segments(&wr, m);
    vt_pw_list_end(&wr.w);
    cstr(&wr, "device_traces");
    vt_pw_list_begin(&wr.w);
    for (int64_t d = 0; d <= m->max_device; d++)
        device_trace(&wr, m, d);
    vt_pw_list_end(&wr.w);
    meta(&wr, m, t, m->nev);
    vt_pw_dict_end(&wr.w);
    bool ok = vt_pw_end(&wr.w) && !wr.out_of_memory;
    vt_pair_map_free(&wr.frames_memo);
    vt_pair_map_free(&wr.str_memo);
    return ok;
}

static void memviz_reset(struct memviz *m)
{
    free(m->ev);
    free(m->allocs);
    free(m->free_slots);
    vt_pair_map_free(&m->live);
    const struct vt_export_options *opt = m->opt;
    memset(m, 0, sizeof *m);
    m->opt = opt;
    m->max_device = -1;
    m->limit = opt->all ? 0 : opt->max_entries ? opt->max_entries : MV_ENTRIES_DEFAULT;
    m->window_open = !opt->has_since;
    m->counting = opt->all;
    vt_pair_map_init(&m->live);
}

/* --all: the file written as the trace is replayed again, once a device
 * (each replay writes that device's entries as they come), then the
 * segments live at the end, then the `vramtrace` key: memory is the live
 * set, not the entries. m: the first replay's (counts, devices, the
 * window's end). Key order differs from write_snapshot's; readers look
 * keys up by name. */
static int stream_snapshot(const struct memviz *m, const char *path, FILE *out, FILE *err)
{
    struct writer wr = {0};
    vt_pair_map_init(&wr.frames_memo);
    vt_pair_map_init(&wr.str_memo);
    vt_pw_begin(&wr.w, out);
    vt_pw_dict_begin(&wr.w);
    cstr(&wr, "device_traces");
    vt_pw_list_begin(&wr.w);
    struct memviz s = {.opt = m->opt};
    vt_pair_map_init(&s.live);
    struct vt_export_trace t = {0};
    bool have_t = false;
    int status = 0;
    FILE *quiet = fopen("/dev/null", "w"); /* the first replay said it all */
    for (int64_t d = 0; d <= m->max_device && status == 0; d++) {
        memviz_reset(&s);
        s.counting = false;
        s.stream = &wr;
        s.stream_device = d;
        s.has_end = m->has_end;
        s.end_ns = m->end_ns;
        s.end_ledger = m->end_ledger;
        s.end_bytes = m->end_bytes;
        if (have_t)
            vt_export_trace_free(&t);
        struct vt_export_hooks hooks = {
            .on_record = on_record, .on_live = on_live, .on_oom = on_oom, .ctx = &s};
        wr.t = &t;
        vt_pw_list_begin(&wr.w);
        status = vt_export_trace_run(&t, path, &hooks, &m->opt->sym, quiet ? quiet : err);
        have_t = true;
        vt_pw_list_end(&wr.w);
        if (status != 0 || s.out_of_memory || s.skip) {
            fprintf(err, "vramtrace export: %s: cannot be read again (changed while read?)\n",
                    path);
            status = 2;
        }
    }
    if (quiet)
        fclose(quiet);
    vt_pw_list_end(&wr.w);
    if (status == 0) {
        cstr(&wr, "segments");
        vt_pw_list_begin(&wr.w);
        segments(&wr, &s);
        vt_pw_list_end(&wr.w);
        meta(&wr, m, &t, m->entries);
    }
    vt_pw_dict_end(&wr.w);
    if (!vt_pw_end(&wr.w) || wr.out_of_memory)
        status = 2;
    vt_pair_map_free(&wr.frames_memo);
    vt_pair_map_free(&wr.str_memo);
    memviz_reset(&s);
    vt_pair_map_free(&s.live);
    if (have_t)
        vt_export_trace_free(&t);
    return status;
}

int vt_export_memviz(char *const *traces, size_t n, const struct vt_export_options *opt,
                     FILE *out, FILE *err)
{
    struct memviz m = {.opt = opt};
    vt_pair_map_init(&m.live);
    memviz_reset(&m);
    struct vt_export_trace chosen = {0}, t;
    bool have = false;
    uint64_t other_pid = 0;
    int status = 0;
    /* Keep the first process with device memory; a second one is an error
     * unless --pid chose. */
    for (size_t i = 0; i < n && status == 0; i++) {
        struct memviz cur = {.opt = opt};
        vt_pair_map_init(&cur.live);
        memviz_reset(&cur);
        struct vt_export_hooks hooks = {
            .on_record = on_record, .on_live = on_live, .on_oom = on_oom, .ctx = &cur};
        if (opt->until_at && (status = find_window_end(&cur, traces[i], err)) != 0) {
            memviz_reset(&cur);
            vt_pair_map_free(&cur.live);
            break;
        }
        status = vt_export_trace_run(&t, traces[i], &hooks, &opt->sym, err);
        if (cur.out_of_memory) {
            fputs("vramtrace export: out of memory\n", err);
            status = 2;
        }
        bool keep = status == 0 && !cur.skip && (cur.entries > 0 || cur.nallocs > cur.nfree);
        if (keep && have) {
            other_pid = vt_export_pid(t.reader);
            keep = false;
        }
        if (keep) {
            memviz_reset(&m);
            m = cur;
            chosen = t;
            have = true;
        } else {
            memviz_reset(&cur);
            vt_pair_map_free(&cur.live);
            vt_export_trace_free(&t);
        }
        if (other_pid) {
            fprintf(err,
                    "vramtrace export: a memory-viz file holds one process: choose with --pid "
                    "(pids %" PRIu64 ", %" PRIu64 ", ...)\n",
                    vt_export_pid(chosen.reader), other_pid);
            status = 2;
        }
    }
    if (status == 0) {
        if (opt->all)
            fprintf(err, "vramtrace export: --all: every trace entry: %" PRIu64
                         ", about %" PRIu64 " MB\n",
                    m.entries, (m.entries * MV_ENTRY_BYTES + 999999) / 1000000);
        else if (m.entries > m.nev)
            fprintf(err, "vramtrace export: the latest %zu of %" PRIu64 " trace entries "
                         "(--max-entries N for more, --all for every one)\n",
                    m.nev, m.entries);
        if (!have)
            fprintf(err, "vramtrace export: no device memory allocated%s: the snapshot is "
                         "empty\n",
                    opt->has_pid ? " by that pid" : "");
        if (opt->all && have)
            status = stream_snapshot(&m, chosen.path, out, err);
        else if (!write_snapshot(&m, have ? &chosen : NULL, out))
            status = 2;
    }
    memviz_reset(&m);
    vt_pair_map_free(&m.live);
    if (have)
        vt_export_trace_free(&chosen);
    return status;
}
