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
    bool ended;
};

struct memviz {
    const struct vt_export_options *opt;
    struct mv_event *ev;
    size_t nev, ev_cap;
    struct mv_alloc *allocs;
    size_t nallocs, allocs_cap;
    struct vt_pair_map live;   /* (kind, key) -> index in allocs */
    uint64_t made_up;          /* next made-up address */
    int64_t max_device;
    bool skip, out_of_memory;
};

static bool ledger_selected(const struct vt_export_options *opt, const struct vt_ledger *l)
{
    return l->category == VT_CAT_DEVICE && (!opt->has_device || l->device == opt->device);
}

static void push(struct memviz *m, enum mv_action a, int64_t device, uint64_t addr,
                 uint64_t size, uint64_t stack, uint64_t time_ns)
{
    if (!vt_grow_array((void **)&m->ev, &m->ev_cap, m->nev + 1, sizeof *m->ev)) {
        m->out_of_memory = true;
        return;
    }
    m->ev[m->nev++] = (struct mv_event){(uint8_t)a, device, addr, size, stack, time_ns, 0};
}

static bool on_record(void *ctx, struct vt_export_trace *t, const struct vt_record *rec)
{
    (void)t;
    struct memviz *m = ctx;
    if (rec->type == VT_REC_PROCESS && m->opt->has_pid && rec->u.process->pid != m->opt->pid) {
        m->skip = true;
        return false;
    }
    return !m->out_of_memory;
}

static void on_live(void *ctx, struct vt_export_trace *t, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct memviz *m = ctx;
    if (!ledger_selected(m->opt, l) || e->size == 0)
        return;
    int64_t device = l->device < 0 ? 0 : l->device;
    if (begins) {
        uint64_t addr = e->addr;
        if (e->kind == VT_KIND_VMM_PHYSICAL || e->kind == VT_KIND_ARRAY) {
            addr = MADE_UP_BASE + m->made_up;
            m->made_up += (e->size + 0x1fffff) & ~(uint64_t)0x1fffff; /* 2 MiB apart */
        }
        if (!vt_grow_array((void **)&m->allocs, &m->allocs_cap, m->nallocs + 1,
                           sizeof *m->allocs) ||
            !vt_pair_map_put(&m->live, e->kind, e->addr, m->nallocs)) {
            m->out_of_memory = true;
            return;
        }
        uint64_t stack = l->sites.sites[e->site].stack;
        m->allocs[m->nallocs++] = (struct mv_alloc){device, addr, e->size, stack, false};
        if (device > m->max_device)
            m->max_device = device;
        push(m, MV_SEGMENT_ALLOC, device, addr, e->size, stack, t->now_ns);
        push(m, MV_ALLOC, device, addr, e->size, stack, t->now_ns);
        return;
    }
    uint64_t i;
    if (!vt_pair_map_remove(&m->live, e->kind, e->addr, &i))
        return;
    struct mv_alloc *a = &m->allocs[i];
    a->ended = true;
    push(m, MV_FREE_REQUESTED, a->device, a->addr, a->size, a->stack, t->now_ns);
    push(m, MV_FREE_COMPLETED, a->device, a->addr, a->size, a->stack, t->now_ns);
    push(m, MV_SEGMENT_FREE, a->device, a->addr, a->size, a->stack, t->now_ns);
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
    push(m, MV_OOM, device, 0, o->requested_bytes, o->stack, o->time_ns);
    if (!m->out_of_memory)
        m->ev[m->nev - 1].device_free = o->driver_info ? o->free_bytes : 0;
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

static void device_trace(struct writer *wr, struct memviz *m, int64_t device)
{
    vt_pw_list_begin(&wr->w);
    for (size_t i = 0; i < m->nev; i++) {
        const struct mv_event *e = &m->ev[i];
        if (e->device != device)
            continue;
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
    vt_pw_list_end(&wr->w);
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
    cstr(&wr, "vramtrace");
    vt_pw_dict_begin(&wr.w);
    vt_pw_kv_str(&wr.w, "note",
                 "exported from a driver-level trace: each device allocation is its own "
                 "segment and block");
    vt_pw_kv_str(&wr.w, "trace", t ? t->path : "");
    vt_pw_kv_int(&wr.w, "pid", t ? (int64_t)vt_export_pid(t->reader) : 0);
    vt_pw_dict_end(&wr.w);
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
    vt_pair_map_free(&m->live);
    const struct vt_export_options *opt = m->opt;
    memset(m, 0, sizeof *m);
    m->opt = opt;
    m->max_device = -1;
    vt_pair_map_init(&m->live);
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
        status = vt_export_trace_run(&t, traces[i], &hooks, &opt->sym, err);
        if (cur.out_of_memory) {
            fputs("vramtrace export: out of memory\n", err);
            status = 2;
        }
        bool keep = status == 0 && !cur.skip && cur.nev > 0;
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
        if (!have)
            fprintf(err, "vramtrace export: no device memory allocated%s: the snapshot is "
                         "empty\n",
                    opt->has_pid ? " by that pid" : "");
        if (!write_snapshot(&m, have ? &chosen : NULL, out))
            status = 2;
    }
    memviz_reset(&m);
    vt_pair_map_free(&m.live);
    if (have)
        vt_export_trace_free(&chosen);
    return status;
}
