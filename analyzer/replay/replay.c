/* One process's replay: live set, ledgers, phases, failures. See replay.h. */
#include "replay.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

#define DEPTH_KEY UINT64_MAX

_Static_assert(VT_LEDGERS_MAX <= UINT8_MAX + 1, "a live entry keeps its ledger in 8 bits");

const char *vt_category_name(enum vt_category c)
{
    switch (c) {
    case VT_CAT_DEVICE: return "device";
    case VT_CAT_MANAGED: return "managed";
    case VT_CAT_HOST_PINNED: return "host_pinned";
    default: return "none";
    }
}

/* The live set's size (slots of 32 bytes) from which the lookups of a
 * replay read alone are fetched ahead: 256 KiB, a quarter of a
 * second-level cache that every chunk's megabyte of decompressed records
 * also passes through. Measured:
 * bench/synth_trace's 1,000 random addresses live (8,192 slots) replay
 * 0.95x the time with it; alloc_pattern's training loop, 456 live (4,096
 * slots) found in the cache, only paid the 12 instructions an event. */
#define PREFETCH_LIVE_MIN_SLOTS (8192u)

void vt_replay_init(struct vt_replay *rp, const struct vt_reader *reader)
{
    memset(rp, 0, sizeof *rp);
    rp->reader = reader;
    rp->live_prefetch_slots = PREFETCH_LIVE_MIN_SLOTS;
    vt_live_rule_init(&rp->live);
    vt_pair_map_init(&rp->phase_stacks);
    vt_pair_map_init(&rp->ranges);
    vt_pair_map_init(&rp->ledger_index);
    vt_open_phases_init(&rp->phases);
}

void vt_replay_read_alone(struct vt_replay *rp)
{
    vt_live_set_sparse(&rp->live.live);
}

void vt_replay_read_in_turns(struct vt_replay *rp)
{
    rp->live_prefetch_slots = 1; /* any table: an empty set has no slot to fetch */
    rp->live_sparse_later = true;
}

static void ledger_free(struct vt_ledger *l)
{
    vt_sites_free(&l->sites);
    vt_peak_state_free(&l->peak);
    vt_phases_free_ledger(l);
    free(l->ooms);
}

void vt_replay_free(struct vt_replay *rp)
{
    vt_live_rule_free(&rp->live);
    vt_pair_map_free(&rp->phase_stacks);
    vt_pair_map_free(&rp->ranges);
    vt_pair_map_free(&rp->ledger_index);
    vt_open_phases_free(&rp->phases);
    for (size_t i = 0; i < rp->nledgers; i++)
        ledger_free(&rp->ledgers[i]);
    free(rp->ledgers);
    free(rp->contexts);
    free(rp->contexts_made);
    free(rp->marks);
    vt_parts_free(rp->parts);
    vt_alloc_samples_free(rp->samples);
    memset(rp, 0, sizeof *rp);
}

/* "device 0", "managed 1", "pinned host": how people name a ledger. */
const char *vt_ledger_label(const struct vt_ledger *l, char *buf, size_t n)
{
    if (l->category == VT_CAT_HOST_PINNED)
        snprintf(buf, n, "pinned host");
    else if (l->device < 0)
        snprintf(buf, n, "%s dev ?", l->category == VT_CAT_MANAGED ? "managed" : "device");
    else
        snprintf(buf, n, "%s %" PRId64, l->category == VT_CAT_MANAGED ? "managed" : "device",
                 l->device);
    return buf;
}

static long find_ledger(const struct vt_replay *rp, int64_t device, enum vt_category cat)
{
    /* Consecutive events mostly hit the same ledger. */
    size_t last = rp->last_ledger;
    if (last < rp->nledgers && rp->ledgers[last].device == device &&
        rp->ledgers[last].category == cat)
        return (long)last;
    uint64_t *i = vt_pair_map_get(&rp->ledger_index, (uint64_t)device, cat);
    return i ? (long)*i : -1;
}

struct vt_ledger *vt_replay_ledger(struct vt_replay *rp, int64_t device, enum vt_category cat)
{
    long i = find_ledger(rp, device, cat);
    return i < 0 ? NULL : &rp->ledgers[i];
}

/* A ledger not used by the previous lookup: found, or made. */
static __attribute__((noinline)) long get_other_ledger(struct vt_replay *rp, int64_t device,
                                                       enum vt_category cat)
{
    long i = find_ledger(rp, device, cat);
    if (i >= 0) {
        rp->last_ledger = (size_t)i;
        return i;
    }
    if (rp->nledgers == VT_LEDGERS_MAX)
        return -2;
    if (!vt_grow_array((void **)&rp->ledgers, &rp->ledgers_cap, rp->nledgers + 1,
                           sizeof *rp->ledgers) ||
        !vt_pair_map_put_new(&rp->ledger_index, (uint64_t)device, cat, rp->nledgers))
        return -1;
    struct vt_ledger *l = &rp->ledgers[rp->nledgers];
    memset(l, 0, sizeof *l);
    l->device = device;
    l->category = cat;
    l->pending_oom = -1;
    vt_sites_init(&l->sites);
    vt_peak_state_init(&l->peak);
    vt_pair_map_init(&l->phase_index);
    if (!vt_phases_new_ledger(&rp->phases, l))
        rp->out_of_memory = true;
    rp->last_ledger = rp->nledgers;
    return (long)rp->nledgers++;
}

/* The index of the ledger of (device, category), made if new; -1 where it
 * cannot be (the event is dropped and counted: out of memory, or too many
 * ledgers). Inline for the common case: the ledger of the previous event. */
static inline long get_ledger(struct vt_replay *rp, int64_t device, enum vt_category cat)
{
    size_t last = rp->last_ledger;
    if (last < rp->nledgers && rp->ledgers[last].device == device &&
        rp->ledgers[last].category == cat)
        return (long)last;
    long li = get_other_ledger(rp, device, cat);
    if (li == -2)
        rp->ledger_overflow_events++;
    else if (li < 0)
        rp->out_of_memory = true;
    return li < 0 ? -1 : li;
}

/* The event being fed carries data (vt_replay_data_end): its time, or
 * the latest time before it if the trace is out of order, so that nothing
 * drawn lies past the end. */
static inline void note_data(struct vt_replay *rp)
{
    rp->last_data_ns = rp->last_time_ns;
    rp->has_data = true;
}

/* ---- ranges (phases themselves: replay_phases.c) ---- */

static void phase_open(struct vt_replay *rp, uint64_t name, uint64_t time_ns)
{
    note_data(rp);
    if (rp->on_range)
        rp->on_range(rp->on_range_ctx, rp, name, time_ns, true);
    if (!vt_phases_open(&rp->phases, rp->ledgers, rp->nledgers, name, time_ns))
        rp->out_of_memory = true;
}

static void phase_close(struct vt_replay *rp, uint64_t name, uint64_t time_ns)
{
    note_data(rp);
    if (rp->on_range)
        rp->on_range(rp->on_range_ctx, rp, name, time_ns, false);
    if (!vt_phases_close(&rp->phases, rp->ledgers, rp->nledgers, name, time_ns))
        rp->out_of_memory = true;
}

static uint64_t stack_key(uint64_t thread, uint64_t domain)
{
    return thread | domain << 32;
}

static void range_push(struct vt_replay *rp, const struct vt_record *rec)
{
    uint64_t key = stack_key(rec->u.range.thread, rec->u.range.domain);
    uint64_t *depth = vt_pair_map_get(&rp->phase_stacks, key, DEPTH_KEY);
    uint64_t d = depth ? *depth : 0;
    if (!vt_pair_map_put(&rp->phase_stacks, key, d, rec->u.range.name) ||
        !vt_pair_map_put(&rp->phase_stacks, key, DEPTH_KEY, d + 1)) {
        rp->out_of_memory = true;
        return;
    }
    phase_open(rp, rec->u.range.name, rec->time_ns);
}

static void range_pop(struct vt_replay *rp, const struct vt_record *rec)
{
    uint64_t key = stack_key(rec->u.range.thread, rec->u.range.domain);
    uint64_t *depth = vt_pair_map_get(&rp->phase_stacks, key, DEPTH_KEY);
    if (!depth || *depth == 0) {
        rp->unmatched_pops++;
        return;
    }
    uint64_t d = --*depth;
    uint64_t name = 0;
    vt_pair_map_remove(&rp->phase_stacks, key, d, &name);
    phase_close(rp, name, rec->time_ns);
}

static uint64_t innermost_phase(const struct vt_replay *rp, uint64_t thread)
{
    uint64_t key = stack_key(thread, 0);
    uint64_t *depth = vt_pair_map_get(&rp->phase_stacks, key, DEPTH_KEY);
    if (!depth || *depth == 0)
        return 0;
    uint64_t *name = vt_pair_map_get(&rp->phase_stacks, key, *depth - 1);
    return name ? *name : 0;
}

static void range_start(struct vt_replay *rp, const struct vt_record *rec)
{
    uint64_t old;
    /* A reused id without an end: close the old range first. */
    if (vt_pair_map_remove(&rp->ranges, rec->u.range.range_id, 0, &old))
        phase_close(rp, old, rec->time_ns);
    if (!vt_pair_map_put(&rp->ranges, rec->u.range.range_id, 0, rec->u.range.name)) {
        rp->out_of_memory = true;
        return;
    }
    phase_open(rp, rec->u.range.name, rec->time_ns);
}

static void range_end(struct vt_replay *rp, const struct vt_record *rec)
{
    uint64_t name;
    if (vt_pair_map_remove(&rp->ranges, rec->u.range.range_id, 0, &name))
        phase_close(rp, name, rec->time_ns);
    else
        rp->unmatched_pops++;
}

static void mark(struct vt_replay *rp, const struct vt_record *rec)
{
    rp->marks_total++;
    note_data(rp);
    if (rp->nmarks == VT_MARKS_MAX)
        return;
    if (!vt_grow_array((void **)&rp->marks, &rp->marks_cap, rp->nmarks + 1, sizeof *rp->marks)) {
        rp->out_of_memory = true;
        return;
    }
    struct vt_mark *m = &rp->marks[rp->nmarks++];
    m->time_ns = rec->time_ns;
    m->name = rec->u.range.name;
    m->domain = rec->u.range.domain;
    m->thread = rec->u.range.thread;
    m->device_bytes = 0;
    for (size_t i = 0; i < rp->nledgers; i++)
        if (rp->ledgers[i].category == VT_CAT_DEVICE)
            m->device_bytes += rp->ledgers[i].sites.total_bytes;
}

/* ---- contexts (what they cost separates this process from the others) ---- */

static void note_contexts(const struct vt_replay *rp, struct vt_oom *o)
{
    for (size_t i = 0; i < rp->ncontexts; i++) {
        const struct vt_context_entry *c = &rp->contexts[i];
        if (c->device != o->device)
            continue;
        o->contexts++;
        o->context_bytes += c->size;
        if (c->size == 0)
            o->contexts_unmeasured++;
    }
}

/* ---- failures and the flush window ---- */

static void close_window_if_expired(struct vt_ledger *l, uint64_t time_ns)
{
    if (l->pending_oom < 0)
        return;
    if (time_ns > l->ooms[l->pending_oom].time_ns + VT_OOM_FLUSH_WINDOW_NS)
        l->pending_oom = -1;
}

/* A request of the same size on the same thread, in the window after a
 * failure: PyTorch's retry after freeing its cache (or the program's own). */
static bool is_retry_of(const struct vt_oom *o, uint64_t size, uint64_t thread)
{
    return o->requested_bytes == size && o->thread == thread;
}

static void record_oom(struct vt_replay *rp, struct vt_ledger *l, const struct vt_record *rec)
{
    l->failed_allocs++;
    note_data(rp);
    bool is_retry = false;
    uint32_t retries = 0;
    if (l->pending_oom >= 0) {
        struct vt_oom *prev = &l->ooms[l->pending_oom];
        if (is_retry_of(prev, rec->u.mem.size, rec->u.mem.thread)) {
            prev->retry = VT_RETRY_FAILED;
            is_retry = true;
            retries = prev->retries + 1;
        }
        l->pending_oom = -1;
    }
    if (l->nooms == VT_OOM_MAX ||
        !vt_grow_array((void **)&l->ooms, &l->ooms_cap, l->nooms + 1, sizeof *l->ooms)) {
        rp->ooms_dropped++;
        return;
    }
    struct vt_oom *o = &l->ooms[l->nooms];
    memset(o, 0, sizeof *o);
    o->time_ns = rec->time_ns;
    o->requested_bytes = rec->u.mem.size;
    o->free_bytes = rec->u.mem.free_bytes;
    o->total_bytes = rec->u.mem.total_bytes;
    o->driver_info = rec->u.mem.total_bytes != 0;
    /* the contexts apart (note_contexts): the verdict's P and K */
    o->process_bytes = l->sites.total_bytes - l->context_bytes;
    memcpy(o->kind_bytes, l->kind_bytes, sizeof o->kind_bytes);
    o->kind_bytes[VT_KIND_CONTEXT] = 0;
    if (o->driver_info) {
        uint64_t used = o->total_bytes > o->free_bytes ? o->total_bytes - o->free_bytes : 0;
        o->outside_bytes = used > o->process_bytes ? used - o->process_bytes : 0;
    }
    o->kind = rec->u.mem.kind;
    o->device = rec->u.mem.device;
    o->stack = rec->u.mem.stack;
    o->thread = rec->u.mem.thread;
    o->api = rec->u.mem.api;
    o->label = rec->u.mem.label;
    o->result = rec->u.mem.result;
    o->phase = innermost_phase(rp, rec->u.mem.thread);
    if (!o->phase)
        o->phase = vt_open_phases_innermost(&rp->phases);
    o->outer_phase = vt_open_phases_outermost(&rp->phases);
    o->ntop = vt_sites_top(&l->sites, NULL, o->top, VT_OOM_TOP);
    /* the holders of P: the contexts are K, told apart (note_contexts) */
    size_t kept = 0;
    for (size_t k = 0; k < o->ntop; k++)
        if (!rp->ncontexts || !vt_contexts_site(rp, o->top[k].stack, o->top[k].thread))
            o->top[kept++] = o->top[k];
    o->ntop = kept;
    o->retry_of_previous = is_retry;
    o->retries = retries;
    note_contexts(rp, o);
    if (rp->samples && rp->samples->last.device == o->device) {
        o->torch_known = true;
        o->torch_allocated = rp->samples->last.allocated;
        o->torch_reserved = rp->samples->last.reserved;
    }
    vt_oom_diagnose(o); /* provisional: the flush and retry come later */
    l->pending_oom = (long)l->nooms++;
    if (rp->on_oom)
        rp->on_oom(rp->on_change_ctx, rp, l, o);
    if (rp->on_failure)
        rp->on_failure(rp->on_failure_ctx, rp, l, o);
}

/* ---- the live set ---- */

/* site: an index in l's sites. Inlined (as free_live below): together they
 * run once per event. */
static inline __attribute__((always_inline)) void
ledger_change(struct vt_replay *rp, struct vt_ledger *l, uint8_t kind, uint32_t site,
              int64_t bytes, int64_t count, uint64_t time_ns)
{
    uint64_t old = l->sites.total_bytes;
    note_data(rp);
    vt_sites_change_at(&l->sites, site, bytes, count);
    if (kind < VT_KIND_COUNT_)
        l->kind_bytes[kind] += (uint64_t)bytes;
    if (bytes > 0) {
        if (vt_peak_state_is_new_peak(&l->peak, &l->sites)) {
            vt_peak_state_offer(&l->peak, &l->sites, time_ns);
            l->peak_context_bytes = l->context_bytes;
        }
        if (!vt_phases_after_alloc(&rp->phases, l, time_ns))
            rp->out_of_memory = true;
    }
    if (l->category == VT_CAT_DEVICE) {
        if (l->gpu.now) {
            uint64_t delta = l->sites.total_bytes - old; /* a decrease wraps and cancels out */
            uint64_t now = *l->gpu.now + delta;
            *l->gpu.now = now;
            *l->gpu.share += delta;
            if (now > *l->gpu.peak)
                rp->on_device_peak(rp->on_change_ctx, rp, l, time_ns);
        } else if (rp->on_change) {
            rp->on_change(rp->on_change_ctx, rp, l, old, time_ns);
        }
    }
}

/* e: a copy of the entry that ended (removal moves slots). */
static inline __attribute__((always_inline)) void free_live(struct vt_replay *rp,
                                                           const struct vt_live *e,
                                                           uint64_t time_ns)
{
    struct vt_ledger *l = &rp->ledgers[e->ledger];
    l->frees++;
    /* Without a site (the analyzer ran out of memory) the allocation was
     * never counted, so neither is its end. */
    if (e->site != VT_SITE_NONE) {
        ledger_change(rp, l, e->kind, e->site, -(int64_t)e->size, -1, time_ns);
        if (rp->on_live)
            rp->on_live(rp->on_live_ctx, rp, l, e, false);
        if (rp->parts && l->category == VT_CAT_DEVICE)
            vt_parts_live(rp->parts, e, false, time_ns);
    }
    if (l->pending_oom >= 0) {
        l->ooms[l->pending_oom].released_bytes += e->size;
        l->ooms[l->pending_oom].released_count++;
    }
}

/* A mapping or unmap (live_rule.h says how they hold a VMM handle's
 * memory): an unmap can be when a released handle's memory goes. */
static void map_event(struct vt_replay *rp, const struct vt_replay_mem *ev, uint64_t result)
{
    struct vt_live ended;
    if (vt_live_rule_map(&rp->live, ev->op, ev->addr, ev->aux, result, &ended,
                         &rp->out_of_memory)) {
        close_window_if_expired(&rp->ledgers[ended.ledger], ev->time_ns);
        free_live(rp, &ended, ev->time_ns);
    }
}

static inline __attribute__((always_inline)) void free_event(struct vt_replay *rp,
                                                            const struct vt_replay_mem *ev,
                                                            uint64_t result)
{
    struct vt_live ended;
    switch (vt_live_rule_free_event(&rp->live, ev->kind, ev->addr, result, &ended)) {
    case VT_LIVE_FREE_FAILED: rp->failed_frees++; return;
    case VT_LIVE_FREE_UNMATCHED: rp->unmatched_frees++; return;
    case VT_LIVE_FREE_REF: return; /* another reference remains */
    case VT_LIVE_FREE_ENDED: break;
    }
    close_window_if_expired(&rp->ledgers[ended.ledger], ev->time_ns);
    /* The memory is the driver's again when the free returned (format
     * version 5 times a free at its call and carries its duration; 0
     * before): what other processes on the GPU see (group_merge.c's notes
     * are in that order), while this process's records stay in file
     * order. */
    free_live(rp, &ended, ev->time_ns + ev->duration_ns);
}

static inline __attribute__((always_inline)) void
alloc_event(struct vt_replay *rp, const struct vt_replay_mem *ev, const struct vt_record *rec,
            enum vt_category cat)
{
    uint8_t kind = ev->kind;
    uint64_t result = rec ? rec->u.mem.result : 0;
    /* The entry it replaces, or the empty slot where it goes. */
    struct vt_live *e = NULL;
    enum vt_live_alloc_step step = vt_live_rule_alloc(&rp->live, kind, ev->addr, ev->size,
                                                      result, &e);
    if (step == VT_LIVE_RETAINED)
        return;
    long li = get_ledger(rp, ev->device, cat);
    if (li < 0)
        return;
    struct vt_ledger *l = &rp->ledgers[li];
    close_window_if_expired(l, ev->time_ns);
    if (step == VT_LIVE_FAILED) {
        record_oom(rp, l, rec);
        return;
    }
    if (l->pending_oom >= 0 && is_retry_of(&l->ooms[l->pending_oom], ev->size, ev->thread)) {
        l->ooms[l->pending_oom].retry = VT_RETRY_SUCCEEDED;
        l->pending_oom = -1;
    }
    bool replaced;
    struct vt_live ended;
    if (!(e = vt_live_rule_take(&rp->live, e, kind, ev->addr, ev->size, &replaced, &ended))) {
        rp->out_of_memory = true;
        return;
    }
    if (replaced) {
        /* The tracer missed a free (or the driver reused an address it had
         * freed without telling us): the old allocation is gone, the new
         * one has its slot in the live set (which free_live does not
         * touch, so e stays valid). */
        rp->replaced_allocs++;
        free_live(rp, &ended, ev->time_ns);
        l = &rp->ledgers[li];
    }
    long site = vt_sites_find_or_add(&l->sites, ev->stack, ev->thread);
    e->site = site < 0 ? VT_SITE_NONE : (uint32_t)site;
    e->ledger = (uint8_t)li;
    l->allocs++;
    if (site < 0) {
        rp->out_of_memory = true; /* not counted: see free_live */
        return;
    }
    ledger_change(rp, l, kind, (uint32_t)site, (int64_t)ev->size, 1, ev->time_ns);
    if (rp->on_live)
        rp->on_live(rp->on_live_ctx, rp, l, e, true);
    if (rp->parts && cat == VT_CAT_DEVICE)
        vt_parts_live(rp->parts, e, true, ev->time_ns);
}

/* A context made or released: one of measured cost holds its bytes in the
 * device's ledger from its creation to its last release, at the site of
 * the call that made it (contexts.h). Not an allocation: no count, no
 * parts; the on_live hook sees it, of kind VT_KIND_CONTEXT, so
 * what follows a ledger's bytes follows it too. */
static __attribute__((noinline)) void context_event(struct vt_replay *rp,
                                                    const struct vt_replay_mem *ev,
                                                    const struct vt_record *rec)
{
    const struct vt_ledger *held = vt_replay_ledger(rp, ev->device, VT_CAT_DEVICE);
    const struct vt_context_made *m = vt_contexts_event(
        rp, ev, rec, held ? held->sites.total_bytes - held->context_bytes : 0);
    bool begins = ev->op != VT_OP_FREE;
    if (m && begins && rp->reader && vt_reader_version(rp->reader) >= 6)
        rp->contexts_measurable = true;
    if (!m || !m->size)
        return;
    long li = get_ledger(rp, m->device, VT_CAT_DEVICE);
    if (li < 0)
        return;
    struct vt_ledger *l = &rp->ledgers[li];
    long site = vt_sites_find_or_add(&l->sites, m->stack, m->thread);
    if (site < 0) {
        rp->out_of_memory = true;
        return;
    }
    if (begins)
        l->context_bytes += m->size;
    else
        l->context_bytes -= m->size;
    /* bytes without a count: the counts are of allocations */
    ledger_change(rp, l, VT_KIND_CONTEXT, (uint32_t)site,
                  begins ? (int64_t)m->size : -(int64_t)m->size, 0, ev->time_ns);
    if (rp->on_live) {
        struct vt_live e = {.addr = m->handle, .size = m->size, .site = (uint32_t)site,
                            .refs = 1, .kind = VT_KIND_CONTEXT, .ledger = (uint8_t)li};
        rp->on_live(rp->on_live_ctx, rp, l, &e, begins);
    }
}

/* rec: the whole record, or NULL for an event that succeeded (the fields
 * only a failure needs are not in ev). */
static inline __attribute__((always_inline)) void mem_event(struct vt_replay *rp,
                                                           const struct vt_replay_mem *ev,
                                                           const struct vt_record *rec)
{
    rp->mem_events++;
    uint64_t result = rec ? rec->u.mem.result : 0;
    uint8_t kind = ev->kind;
    enum vt_category cat = vt_kind_category(kind);
    if (cat == VT_CAT_NONE) {
        if (kind == VT_KIND_VA_MAP)
            map_event(rp, ev, result);
        else if (kind == VT_KIND_CONTEXT && result == 0)
            context_event(rp, ev, rec);
        rp->untracked_events++;
        return;
    }
    if (ev->op == VT_OP_FREE)
        free_event(rp, ev, result);
    else
        alloc_event(rp, ev, rec, cat);
}

static inline void note_time(struct vt_replay *rp, uint64_t time_ns)
{
    if (!rp->has_time) {
        rp->first_time_ns = time_ns;
        rp->has_time = true;
    }
    if (time_ns > rp->last_time_ns)
        rp->last_time_ns = time_ns;
}

static void feed_other(struct vt_replay *rp, const struct vt_record *rec);

static inline __attribute__((always_inline)) void feed(struct vt_replay *rp,
                                                      const struct vt_record *rec)
{
    if (rec->type == VT_REC_MEM) { /* nearly every record: tested first */
        note_time(rp, rec->time_ns);
        const struct vt_replay_mem ev = {
            .time_ns = rec->time_ns, .thread = rec->u.mem.thread, .addr = rec->u.mem.addr,
            .size = rec->u.mem.size, .stack = rec->u.mem.stack, .aux = rec->u.mem.aux,
            .duration_ns = rec->u.mem.duration_ns,
            .device = (int32_t)rec->u.mem.device, .op = rec->u.mem.op, .kind = rec->u.mem.kind};
        mem_event(rp, &ev, rec);
    } else {
        feed_other(rp, rec);
    }
}

void vt_replay_feed(struct vt_replay *rp, const struct vt_record *rec)
{
    feed(rp, rec);
}

void vt_replay_feed_batch(struct vt_replay *rp, const struct vt_record *recs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        feed(rp, &recs[i]);
}

/* Asks for the home slot of (kind, addr) in the live set ahead of its
 * lookup. always_inline: GCC drops the calls of an inline function whose
 * only effect is a prefetch (it takes it for pure). */
static inline __attribute__((always_inline)) void prefetch_live(const struct vt_live_set *s,
                                                               uint8_t kind, uint64_t addr)
{
    __builtin_prefetch(&s->slots[vt_live_hash(kind, addr) >> s->shift]);
}

void vt_replay_feed_mem_events(struct vt_replay *rp, const struct vt_replay_mem *evs, size_t n)
{
    /* Every event's live-set slot asked for at once, where the table is
     * large: the lookups of a batch then wait for their misses together,
     * not for each in turn (random addresses make each a miss). A smaller
     * table stays cached, and the requests would only cost instructions -
     * unless other replays run between this one's turns
     * (vt_replay_read_in_turns). */
    if (rp->live_sparse_later && rp->live.live.cap && rp->mem_events >= rp->live.live.cap) {
        /* grown at its next insert: 256 ranks of 20,000 events, 0.9x the time */
        vt_live_set_sparse(&rp->live.live);
        rp->live_sparse_later = false;
    }
    if (rp->live.live.cap >= rp->live_prefetch_slots)
        for (size_t i = 0; i < n; i++)
            prefetch_live(&rp->live.live, evs[i].kind, evs[i].addr);
    for (size_t i = 0; i < n; i++) {
        note_time(rp, evs[i].time_ns);
        mem_event(rp, &evs[i], NULL);
    }
}

/* Only a Python process of format version 5 or later can have censuses
 * of parts (the bootstrap's): for those, the allocations' begin times are
 * kept from the start (parts.h). */
static void process_record(struct vt_replay *rp, const struct vt_record *rec)
{
    if (rp->parts || vt_reader_version(rp->reader) < 5)
        return;
    const char *exe = rec->u.process->exe;
    const char *base = exe ? strrchr(exe, '/') : NULL;
    base = base ? base + 1 : exe;
    if (base && !strncmp(base, "python", 6) && !(rp->parts = vt_parts_new(true)))
        rp->out_of_memory = true;
}

/* A VT_PART_ALLOCATOR_SAMPLE record: PyTorch's allocator's figures
 * beside the device ledger's sites (allocator_samples.h). */
static void allocator_sample(struct vt_replay *rp, const struct vt_record *rec)
{
    struct vt_alloc_sample s = {
        .time_ns = rec->time_ns,
        .device = rec->u.part.device,
        .allocated = rec->u.part.addr,
        .reserved = rec->u.part.bytes,
        .active = rec->u.part.elements,
        .retries = rec->u.part.census,
        .phase = rec->u.part.dtype,
    };
    const char *ooms = vt_reader_string(rp->reader, rec->u.part.name);
    s.ooms = ooms ? strtoull(ooms, NULL, 10) : 0;
    const struct vt_ledger *l = vt_replay_ledger(rp, s.device, VT_CAT_DEVICE);
    if (!vt_alloc_samples_take(&rp->samples, &s, vt_reader_string(rp->reader, s.phase),
                               l ? &l->sites : NULL))
        rp->out_of_memory = true;
}

static void part_record(struct vt_replay *rp, const struct vt_record *rec)
{
    if (rec->u.part.part == VT_PART_ALLOCATOR_SAMPLE) {
        allocator_sample(rp, rec);
        return;
    }
    if (!rp->parts && !(rp->parts = vt_parts_new(false))) {
        rp->out_of_memory = true;
        return;
    }
    vt_parts_record(rp->parts, rp, rec);
    if (rp->parts->out_of_memory)
        rp->out_of_memory = true;
}

static __attribute__((noinline)) void feed_other(struct vt_replay *rp,
                                                 const struct vt_record *rec)
{
    if (vt_record_is_timed(rec->type)) /* MEM records do not come here */
        note_time(rp, rec->time_ns);
    if (rp->on_record)
        rp->on_record(rp->on_record_ctx, rp, rec);
    switch (rec->type) {
    case VT_REC_RANGE_PUSH: range_push(rp, rec); break;
    case VT_REC_RANGE_POP: range_pop(rp, rec); break;
    case VT_REC_RANGE_START: range_start(rp, rec); break;
    case VT_REC_RANGE_END: range_end(rp, rec); break;
    case VT_REC_MARK: mark(rp, rec); break;
    case VT_REC_PROCESS: process_record(rp, rec); break;
    case VT_REC_PART: part_record(rp, rec); break;
    case VT_REC_LOST: rp->lost_events += rec->u.lost.count; break;
    case VT_REC_TRAILER:
        if (rec->u.trailer.lost > rp->lost_events)
            rp->lost_events = rec->u.trailer.lost;
        break;
    case VT_REC_MEM: /* feed() replays it */
        break;
    /* Definitions: the reader keeps their tables, which the replay asks. */
    case VT_REC_MODULE:
    case VT_REC_MODULE_UNLOAD:
    case VT_REC_THREAD:
    case VT_REC_DEVICE:
    case VT_REC_STACK_NODE:
    case VT_REC_STRING:
    case VT_REC_API:
    case VT_REC_PY_CODE:
    case VT_REC_SITE:
        break;
    }
}

void vt_replay_finish(struct vt_replay *rp)
{
    if (!vt_phases_finish(&rp->phases, rp->ledgers, rp->nledgers))
        rp->out_of_memory = true;
    for (size_t i = 0; i < rp->nledgers; i++) {
        struct vt_ledger *l = &rp->ledgers[i];
        l->pending_oom = -1;
        for (size_t k = 0; k < l->nooms; k++)
            vt_oom_diagnose(&l->ooms[k]);
    }
}

void vt_replay_drop_live(struct vt_replay *rp)
{
    size_t room = vt_live_set_room(&rp->live.live);
    rp->live_room_dropped = room > rp->live_room_dropped ? room : rp->live_room_dropped;
    vt_live_rule_free(&rp->live);
}

void vt_replay_expect_live(struct vt_replay *rp, size_t count)
{
    (void)vt_live_set_reserve(&rp->live.live, count); /* else it grows as it goes */
}

size_t vt_replay_live_room(const struct vt_replay *rp)
{
    size_t room = vt_live_set_room(&rp->live.live);
    return room > rp->live_room_dropped ? room : rp->live_room_dropped;
}

/* What a settled replay keeps is kept by every rank of a job to the end:
 * the room its arrays grew into goes (the ledgers' array grows by 16, 8 KB
 * for the one or two most processes have). */
static void trim_ledgers(struct vt_replay *rp)
{
    for (size_t i = 0; i < rp->nledgers; i++) {
        struct vt_ledger *l = &rp->ledgers[i];
        vt_peak_state_settle(&l->peak, l->sites.nsites);
        for (size_t k = 0; k < l->nphases; k++)
            vt_peak_state_settle(&l->phases[k].state, l->sites.nsites);
    }
    if (rp->nledgers && rp->nledgers < rp->ledgers_cap) {
        struct vt_ledger *n = realloc(rp->ledgers, rp->nledgers * sizeof *n);
        if (n) {
            rp->ledgers = n;
            rp->ledgers_cap = rp->nledgers;
        }
    }
}

void vt_replay_settle(struct vt_replay *rp)
{
    vt_live_rule_free(&rp->live);
    for (size_t i = 0; i < rp->nledgers; i++)
        vt_sites_settle(&rp->ledgers[i].sites);
    trim_ledgers(rp);
}
