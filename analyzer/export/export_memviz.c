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
 * One read, the run stage's (run_traces.h): an observer notes each
 * allocation's begin and end and each failure as the replay finds them
 * (input_notes.h: on disk, not in memory), and the file is made from the
 * notes once the read is over, when the window's end (--at peak or oom:N)
 * is known too.
 *
 * Sized to open: the trace keeps the latest max_entries entries
 * (default 100,000: PyTorch's own default history) in a ring, so memory is
 * bounded by that and the live set, never by the trace's length; --since
 * and --until (or --at) window it, and the segments are those live at the
 * window's end. The `vramtrace` key says what was left out. --all keeps
 * every entry, written from the notes a device at a time (their size is
 * said first).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_input.h"
#include "grow_array.h"
#include "input_notes.h"
#include "input_tables.h"
#include "pair_map.h"
#include "pickle_writer.h"
#include "run_traces.h"

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
    /* --at peak / oom:N: the instant the read found */
    bool has_end;
    uint64_t end_ns;            /* oom:N: the failure's time */
    size_t end_ledger;          /* peak: the ledger, its bytes and time */
    uint64_t end_bytes;
    bool close_next;            /* the peak was reached: the next record is past it */
    bool skip, out_of_memory;
    /* playing: the memory record of the last event (0: none), and whether
     * the window closed (or --pid skipped the process): the rest ignored */
    uint64_t record;
    bool played_out;
    /* --all: the notes are played once to count (counting), then once a
     * device, writing its entries as they come (stream, stream_device):
     * nothing held */
    bool counting;
    struct writer *stream;
    int64_t stream_device;
};

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

/* A record of the process begins (timed: at time_ns): it ends the window
 * when the window's end is past (false), else opens it once --since is. */
static bool record_begins(struct memviz *m, bool timed, uint64_t time_ns)
{
    const struct vt_export_options *opt = m->opt;
    if (m->close_next || (m->has_end && timed && time_ns > m->end_ns)) {
        m->window_closed = true;
        return false;
    }
    if (timed) {
        /* The report's origin: the process start when known, else its
         * first event (export_folded.c counts --at TIME the same way). */
        if (!m->origin_ns || m->origin_ns > time_ns)
            m->origin_ns = time_ns;
        uint64_t since = time_ns - m->origin_ns;
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

/* An allocation began or ended (by the replay's live set), as noted. */
struct note_live {
    uint64_t record;           /* which memory record of the process (the replay's count) */
    uint64_t now_ns;           /* the latest time of the process then */
    uint64_t ledger, begins, kind, addr, size, stack;
    uint64_t total;            /* the ledger's bytes after it */
};

/* A device allocation failed, as noted. */
struct note_failure {
    uint64_t record, now_ns, ledger;
    uint64_t requested, stack, time_ns, driver_info, free_bytes;
};

struct note_process {
    uint64_t pid, start_mono_ns;
};

struct note_tick {              /* a timed record other than a memory event */
    uint64_t time_ns;
};

enum note_tag { NOTE_PROCESS = 1, NOTE_TICK, NOTE_LIVE, NOTE_FAILURE };

static void on_live(struct memviz *m, const struct vt_ledger *l, size_t li,
                    const struct note_live *e)
{
    int64_t device = l->device < 0 ? 0 : l->device;
    if (e->begins) {
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
        uint64_t stack = e->stack;
        m->allocs[slot] = (struct mv_alloc){device, addr, e->size, stack, false};
        if (m->opt->until_at && m->opt->at == VT_AT_PEAK && m->has_end && li == m->end_ledger &&
            e->total == m->end_bytes && e->now_ns == m->end_ns)
            m->close_next = true; /* the peak's first instant: the window ends here */
        if (device > m->max_device)
            m->max_device = device;
        push(m, MV_SEGMENT_ALLOC, device, addr, e->size, stack, e->now_ns, 0);
        push(m, MV_ALLOC, device, addr, e->size, stack, e->now_ns, 0);
        return;
    }
    uint64_t i;
    if (!vt_pair_map_remove(&m->live, e->kind, e->addr, &i))
        return;
    struct mv_alloc a = m->allocs[i];
    free_slot(m, i);
    push(m, MV_FREE_REQUESTED, a.device, a.addr, a.size, a.stack, e->now_ns, 0);
    push(m, MV_FREE_COMPLETED, a.device, a.addr, a.size, a.stack, e->now_ns, 0);
    push(m, MV_SEGMENT_FREE, a.device, a.addr, a.size, a.stack, e->now_ns, 0);
}

static void on_failure(struct memviz *m, const struct vt_ledger *l, const struct note_failure *o)
{
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
    push(m, MV_OOM, device, 0, o->requested, o->stack, o->time_ns,
         o->driver_info ? o->free_bytes : 0);
}

/* ---- the observer: rides along the run stage's read ---- */

/* One input's, fed on its replay's thread (inputs are replayed on
 * threads): the notes, and the Nth failure for --at oom:N. */
struct watch {
    const struct vt_export_options *opt;
    struct vt_input_notes *notes;
    size_t input;
    bool skip;                 /* --pid selected another process */
    uint64_t failures, oom_ns; /* oom:N: the failures in the order found, the Nth's time */
    bool oom_found;
    /* One input, no --at and no --all: nothing to wait for, so the
     * entries are made as the replay runs, not noted (NULL: noted). */
    struct memviz *direct;
};

struct watching {
    const struct vt_export_options *opt;
    struct vt_input_notes *notes;
    struct watch *per_input;
    size_t n;
    struct memviz *direct;     /* see struct watch */
};

/* ---- playing the events into the entries, as the replay met them ---- */

/* A memory record's event: the record begins first when it is another. */
static bool record_of(struct memviz *m, uint64_t record, uint64_t now_ns)
{
    if (record != m->record && !record_begins(m, true, now_ns)) {
        m->played_out = true;
        return false;
    }
    m->record = record;
    return true;
}

static void play_process(struct memviz *m, const struct note_process *n)
{
    if (m->played_out)
        return;
    if (m->opt->has_pid && n->pid != m->opt->pid) {
        m->skip = m->played_out = true;
        return;
    }
    if (!record_begins(m, false, 0)) {
        m->played_out = true;
        return;
    }
    m->origin_ns = n->start_mono_ns;
}

static void play_tick(struct memviz *m, uint64_t time_ns)
{
    if (m->played_out)
        return;
    m->record = 0;
    if (!record_begins(m, true, time_ns))
        m->played_out = true;
}

static void play_live(struct memviz *m, const struct vt_ledger *ledgers, const struct note_live *n)
{
    if (!m->played_out && record_of(m, n->record, n->now_ns))
        on_live(m, &ledgers[n->ledger], (size_t)n->ledger, n);
}

static void play_failure(struct memviz *m, const struct vt_ledger *ledgers,
                         const struct note_failure *n)
{
    if (!m->played_out && record_of(m, n->record, n->now_ns))
        on_failure(m, &ledgers[n->ledger], n);
}

static void note(struct watch *w, enum note_tag tag, const void *body, size_t n)
{
    unsigned char t = (unsigned char)tag;
    vt_input_notes_add(w->notes, w->input, &t, 1);
    vt_input_notes_add(w->notes, w->input, body, n);
}

static void watch_record(void *ctx, struct vt_replay *rp, const struct vt_record *rec)
{
    (void)rp;
    struct watch *w = ctx;
    if (w->skip)
        return;
    if (rec->type == VT_REC_PROCESS) {
        struct note_process n = {rec->u.process->pid, rec->u.process->start_mono_ns};
        if (w->direct)
            play_process(w->direct, &n);
        else
            note(w, NOTE_PROCESS, &n, sizeof n);
        w->skip = w->opt->has_pid && n.pid != w->opt->pid;
    } else if (vt_record_is_timed(rec->type)) {
        struct note_tick n = {rec->time_ns};
        if (w->direct)
            play_tick(w->direct, n.time_ns);
        else
            note(w, NOTE_TICK, &n, sizeof n);
    }
}

static void watch_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                       const struct vt_live *e, bool begins)
{
    struct watch *w = ctx;
    /* a context is no segment of the allocator's */
    if (w->skip || !vt_export_ledger_selected(w->opt, l) || e->size == 0 || e->kind == VT_KIND_CONTEXT)
        return;
    struct note_live n = {rp->mem_events, rp->last_time_ns, (uint64_t)(l - rp->ledgers), begins,
                          e->kind, e->addr, e->size, 0, l->sites.total_bytes};
    if (begins)
        n.stack = l->sites.sites[e->site].stack;
    if (w->direct)
        play_live(w->direct, rp->ledgers, &n);
    else
        note(w, NOTE_LIVE, &n, sizeof n);
}

static void watch_failure(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    struct watch *w = ctx;
    if (w->skip || !vt_export_ledger_selected(w->opt, l))
        return;
    /* as export_folded.c counts oom:N: the failures in the order found */
    if (++w->failures == w->opt->oom && !w->oom_found) {
        w->oom_found = true;
        w->oom_ns = o->time_ns;
    }
    struct note_failure n = {rp->mem_events, rp->last_time_ns, (uint64_t)(l - rp->ledgers),
                             o->requested_bytes, o->stack, o->time_ns, o->driver_info,
                             o->free_bytes};
    if (w->direct)
        play_failure(w->direct, rp->ledgers, &n);
    else
        note(w, NOTE_FAILURE, &n, sizeof n);
}

static void watch_prepare(void *ctx, struct vt_input *in)
{
    struct watching *ws = ctx;
    if (in->index >= ws->n)
        return; /* more inputs than traces: the read is refused below */
    struct watch *w = &ws->per_input[in->index];
    *w = (struct watch){.opt = ws->opt, .notes = ws->notes, .input = in->index,
                        .direct = ws->direct};
    in->replay.on_live = watch_live;
    in->replay.on_live_ctx = w;
    in->replay.on_record = watch_record;
    in->replay.on_record_ctx = w;
    in->replay.on_failure = watch_failure;
    in->replay.on_failure_ctx = w;
}

/* ---- the notes played into the entries ---- */

/* Plays an input's notes into m until the window closes. False when they
 * could not be read back. */
static bool play_notes(struct memviz *m, const struct vt_input *in, struct vt_input_notes *notes)
{
    struct vt_input_notes_cursor c;
    if (!vt_input_notes_rewind(notes, in->index, &c)) {
        m->out_of_memory = true;
        return true;
    }
    const struct vt_ledger *ledgers = in->replay.ledgers;
    unsigned char tag;
    bool ok = true;
    while (ok && !m->played_out && vt_input_notes_next(&c, &tag, 1)) {
        if (tag == NOTE_PROCESS) {
            struct note_process n;
            if ((ok = vt_input_notes_next(&c, &n, sizeof n)))
                play_process(m, &n);
        } else if (tag == NOTE_TICK) {
            struct note_tick n;
            if ((ok = vt_input_notes_next(&c, &n, sizeof n)))
                play_tick(m, n.time_ns);
        } else if (tag == NOTE_LIVE) {
            struct note_live n;
            if ((ok = vt_input_notes_next(&c, &n, sizeof n) && n.ledger < in->replay.nledgers))
                play_live(m, ledgers, &n);
        } else if (tag == NOTE_FAILURE) {
            struct note_failure n;
            if ((ok = vt_input_notes_next(&c, &n, sizeof n) && n.ledger < in->replay.nledgers))
                play_failure(m, ledgers, &n);
        } else {
            ok = false;
        }
    }
    vt_input_notes_cursor_free(&c);
    return ok;
}

/* Sets m's end (--at peak or oom:N) from the read. Returns 0 (no end: the
 * process was not selected, or has no peak), or 2 after a message on err. */
static int find_window_end(struct memviz *m, const struct vt_input *in, const struct watch *w,
                           FILE *err)
{
    if (w->skip)
        return 0;
    if (m->opt->at == VT_AT_PEAK) {
        for (size_t i = 0; i < in->replay.nledgers; i++) {
            const struct vt_ledger *l = &in->replay.ledgers[i];
            if (vt_export_ledger_selected(m->opt, l) && l->peak.has_peak &&
                (!m->has_end || l->peak.peak_bytes > m->end_bytes)) {
                m->has_end = true;
                m->end_ledger = i;
                m->end_bytes = l->peak.peak_bytes;
                m->end_ns = l->peak.peak_time_ns;
            }
        }
        return 0;
    }
    if (!w->oom_found) {
        fprintf(err, "vramtrace export: %s: %" PRIu64 " failed allocation%s, no failure %"
                     PRIu64 "\n",
                in->path, w->failures, w->failures == 1 ? "" : "s", m->opt->oom);
        return 2;
    }
    m->has_end = true;
    m->end_ns = w->oom_ns;
    return 0;
}

/* ---- writing ---- */

struct writer {
    struct vt_pickle_writer w;
    struct vt_export_input *x;  /* the process's trace: frames, clocks */
    struct vt_pair_map frames_memo;  /* (stack, 0) -> memo index of its frames list */
    struct vt_pair_map str_memo;     /* (address of a constant string, 0) -> memo index */
    /* str_memo's answers by the string's address, in front of it: an
     * entry names seven keys, and the map's hash was most of each */
    struct {
        const char *s;
        uint64_t index;
    } recent[64];
    bool out_of_memory;
};

/* A constant string (a key, an action), memoized on first use. */
static void cstr(struct writer *wr, const char *s)
{
    size_t slot = ((uintptr_t)s >> 2) % (sizeof wr->recent / sizeof wr->recent[0]);
    if (wr->recent[slot].s == s) {
        vt_pw_get(&wr->w, wr->recent[slot].index);
        return;
    }
    uint64_t *idx = vt_pair_map_get(&wr->str_memo, (uint64_t)(uintptr_t)s, 0);
    uint64_t index;
    if (idx) {
        index = *idx;
        vt_pw_get(&wr->w, index);
    } else {
        vt_pw_str(&wr->w, s);
        index = vt_pw_memoize(&wr->w);
        if (!vt_pair_map_put(&wr->str_memo, (uint64_t)(uintptr_t)s, 0, index)) {
            wr->out_of_memory = true;
            return;
        }
    }
    wr->recent[slot].s = s;
    wr->recent[slot].index = index;
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
    vt_export_input_frames(wr->x, stack, frame_dict, wr);
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
static uint64_t wall_us(const struct vt_export_input *x, uint64_t mono_ns)
{
    const struct vt_process_info *p = vt_input_process(x->in);
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
    kv_uint(wr, "time_us", wall_us(wr->x, e->time_ns));
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
static void meta(struct writer *wr, const struct memviz *m, const struct vt_input *in,
                 uint64_t written)
{
    cstr(wr, "vramtrace");
    vt_pw_dict_begin(&wr->w);
    vt_pw_kv_str(&wr->w, "note",
                 "exported from a driver-level trace: each device allocation is its own "
                 "segment and block");
    vt_pw_kv_str(&wr->w, "trace", in ? in->path : "");
    vt_pw_kv_int(&wr->w, "pid", in ? (int64_t)vt_export_input_pid(in) : 0);
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

static bool write_snapshot(struct memviz *m, struct vt_export_input *x, FILE *out)
{
    struct writer wr = {.x = x};
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
    meta(&wr, m, x ? x->in : NULL, m->nev);
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

/* --all: the file written as the notes are played again, once a device
 * (each time writing that device's entries as they come), then the
 * segments live at the end, then the `vramtrace` key: memory is the live
 * set, not the entries. m: the first playing's (counts, devices, the
 * window's end). Key order differs from write_snapshot's; readers look
 * keys up by name. */
static int stream_snapshot(const struct memviz *m, struct vt_export_input *x,
                           struct vt_input_notes *notes, FILE *out, FILE *err)
{
    struct writer wr = {.x = x};
    vt_pair_map_init(&wr.frames_memo);
    vt_pair_map_init(&wr.str_memo);
    vt_pw_begin(&wr.w, out);
    vt_pw_dict_begin(&wr.w);
    cstr(&wr, "device_traces");
    vt_pw_list_begin(&wr.w);
    struct memviz s = {.opt = m->opt};
    vt_pair_map_init(&s.live);
    int status = 0;
    for (int64_t d = 0; d <= m->max_device && status == 0; d++) {
        memviz_reset(&s);
        s.counting = false;
        s.stream = &wr;
        s.stream_device = d;
        s.has_end = m->has_end;
        s.end_ns = m->end_ns;
        s.end_ledger = m->end_ledger;
        s.end_bytes = m->end_bytes;
        vt_pw_list_begin(&wr.w);
        bool ok = play_notes(&s, x->in, notes);
        vt_pw_list_end(&wr.w);
        if (!ok || s.out_of_memory || s.skip) {
            fprintf(err, "vramtrace export: %s: the read's notes cannot be read back\n",
                    x->in->path);
            status = 2;
        }
    }
    vt_pw_list_end(&wr.w);
    if (status == 0) {
        cstr(&wr, "segments");
        vt_pw_list_begin(&wr.w);
        segments(&wr, &s);
        vt_pw_list_end(&wr.w);
        meta(&wr, m, x->in, m->entries);
    }
    vt_pw_dict_end(&wr.w);
    if (!vt_pw_end(&wr.w) || wr.out_of_memory)
        status = 2;
    vt_pair_map_free(&wr.frames_memo);
    vt_pair_map_free(&wr.str_memo);
    memviz_reset(&s);
    vt_pair_map_free(&s.live);
    return status;
}

/* The export between its plan and its file: the observer of the read,
 * and the process played as it is read when nothing waits on its end. */
struct memviz_export {
    const struct vt_export_options *opt;
    char *const *traces;
    size_t ntraces;
    struct watching ws;
    struct memviz direct;
};

/* Whether the run stage read the traces whole, with the observer's notes.
 * False (after what went wrong, on err) when it did not. */
static bool read_whole(const struct memviz_export *x, const struct vt_run_result *run,
                       FILE *err)
{
    bool ok = vt_export_read_all(run, x->traces, x->ntraces);
    if (ok && run->a.out_of_memory) {
        fputs("vramtrace export: out of memory\n", err);
        ok = false;
    }
    if (ok && !vt_input_notes_whole(x->ws.notes)) {
        fputs("vramtrace export: the notes of the read could not be kept (disk full?)\n",
              err);
        ok = false;
    }
    return ok;
}

void *vt_export_memviz_plan(char *const *traces, size_t n, const struct vt_export_options *opt,
                            struct vt_run_observers *obs, FILE **said, FILE *err)
{
    (void)said;
    struct memviz_export *x = calloc(1, sizeof *x);
    struct vt_input_notes *notes = vt_input_notes_new(n);
    struct watch *per_input = calloc(n + 1, sizeof *per_input);
    if (!x || !notes || !per_input) {
        free(x);
        vt_input_notes_free(notes);
        free(per_input);
        fputs("vramtrace export: out of memory (or no temporary file)\n", err);
        return NULL;
    }
    x->opt = opt;
    x->traces = traces;
    x->ntraces = n;
    x->ws = (struct watching){opt, notes, per_input, n, NULL};
    /* One process and nothing to wait for: its entries made as it is read. */
    x->direct.opt = opt;
    vt_pair_map_init(&x->direct.live);
    memviz_reset(&x->direct);
    if (n == 1 && !opt->all && !opt->until_at)
        x->ws.direct = &x->direct;
    obs->prepare = watch_prepare;
    obs->prepare_ctx = &x->ws;
    return x;
}

int vt_export_memviz_write(void *state, const struct vt_run_result *run, FILE *out, FILE *err)
{
    struct memviz_export *x = state;
    const struct vt_export_options *opt = x->opt;
    struct watching *ws = &x->ws;
    int status = read_whole(x, run, err) ? 0 : 2;
    struct memviz m = {.opt = opt};
    vt_pair_map_init(&m.live);
    memviz_reset(&m);
    const struct vt_input *chosen = NULL;
    uint64_t other_pid = 0;
    /* Keep the first process with device memory; a second one is an error
     * unless --pid chose. */
    for (size_t i = 0; i < x->ntraces && status == 0; i++) {
        const struct vt_input *in = &run->a.inputs[i];
        struct memviz cur = {.opt = opt};
        if (ws->direct) {
            cur = x->direct; /* played as read: taken over */
            memset(&x->direct, 0, sizeof x->direct);
            x->direct.opt = opt;
            vt_pair_map_init(&x->direct.live);
        } else {
            vt_pair_map_init(&cur.live);
            memviz_reset(&cur);
        }
        if (opt->until_at && (status = find_window_end(&cur, in, &ws->per_input[i], err)) != 0) {
            memviz_reset(&cur);
            vt_pair_map_free(&cur.live);
            break;
        }
        if (!ws->direct && !play_notes(&cur, in, ws->notes)) {
            fprintf(err, "vramtrace export: %s: the read's notes cannot be read back\n",
                    in->path);
            status = 2;
        }
        if (cur.out_of_memory) {
            fputs("vramtrace export: out of memory\n", err);
            status = 2;
        }
        bool keep = status == 0 && !cur.skip && (cur.entries > 0 || cur.nallocs > cur.nfree);
        if (keep && chosen) {
            other_pid = vt_export_input_pid(in);
            keep = false;
        }
        if (keep) {
            memviz_reset(&m);
            m = cur;
            chosen = in;
        } else {
            memviz_reset(&cur);
            vt_pair_map_free(&cur.live);
        }
        if (other_pid) {
            fprintf(err,
                    "vramtrace export: a memory-viz file holds one process: choose with --pid "
                    "(pids %" PRIu64 ", %" PRIu64 ", ...)\n",
                    vt_export_input_pid(chosen), other_pid);
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
        if (!chosen)
            fprintf(err, "vramtrace export: no device memory allocated%s: the snapshot is "
                         "empty\n",
                    opt->has_pid ? " by that pid" : "");
        struct vt_export_input xi;
        if (chosen)
            vt_export_input_init(&xi, chosen, &opt->sym);
        if (opt->all && chosen)
            status = stream_snapshot(&m, &xi, ws->notes, out, err);
        else if (!write_snapshot(&m, chosen ? &xi : NULL, out))
            status = 2;
        if (chosen)
            vt_export_input_free(&xi);
    }
    memviz_reset(&m);
    vt_pair_map_free(&m.live);
    return status;
}

void vt_export_memviz_free(void *state)
{
    struct memviz_export *x = state;
    if (!x)
        return;
    memviz_reset(&x->direct);
    vt_pair_map_free(&x->direct.live);
    vt_input_notes_free(x->ws.notes);
    free(x->ws.per_input);
    free(x);
}
