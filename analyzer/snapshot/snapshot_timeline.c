/* Reconstructing a device's memory at any point of a snapshot's trace. */
#include "snapshot_timeline.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "pair_map.h"

/* A live set keyed by address: entries in an array, a map addr -> index,
 * removal by moving the last entry into the hole. */
struct live_set {
    struct vt_snap_live *v;
    size_t n, cap;
    struct vt_pair_map index;
    uint64_t bytes;
};

static bool live_put(struct live_set *s, const struct vt_snap_live *b)
{
    uint64_t *at = vt_pair_map_get(&s->index, b->addr, 0);
    if (at) { /* same address again: replace (counts as an inconsistency upstream) */
        s->bytes -= s->v[*at].requested;
        s->v[*at] = *b;
        s->bytes += b->requested;
        return true;
    }
    if (!vt_grow_array((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return false;
    if (!vt_pair_map_put(&s->index, b->addr, 0, s->n))
        return false;
    s->v[s->n++] = *b;
    s->bytes += b->requested;
    return true;
}

static bool live_remove(struct live_set *s, uint64_t addr)
{
    uint64_t at;
    if (!vt_pair_map_remove(&s->index, addr, 0, &at))
        return false;
    s->bytes -= s->v[at].requested;
    s->n--;
    if (at != s->n) {
        s->v[at] = s->v[s->n];
        *vt_pair_map_get(&s->index, s->v[at].addr, 0) = at;
    }
    return true;
}

static void live_free(struct live_set *s)
{
    free(s->v);
    vt_pair_map_free(&s->index);
}

struct seg_set {
    struct vt_snap_seg *v;
    size_t n, cap;
    struct vt_pair_map index;
};

static bool seg_put(struct seg_set *s, const struct vt_snap_seg *g)
{
    uint64_t *at = vt_pair_map_get(&s->index, g->addr, 0);
    if (at) {
        s->v[*at] = *g;
        return true;
    }
    if (!vt_grow_array((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
        return false;
    if (!vt_pair_map_put(&s->index, g->addr, 0, s->n))
        return false;
    s->v[s->n++] = *g;
    return true;
}

static bool seg_remove(struct seg_set *s, uint64_t addr)
{
    uint64_t at;
    if (!vt_pair_map_remove(&s->index, addr, 0, &at))
        return false;
    s->n--;
    if (at != s->n) {
        s->v[at] = s->v[s->n];
        *vt_pair_map_get(&s->index, s->v[at].addr, 0) = at;
    }
    return true;
}

static void seg_free(struct seg_set *s)
{
    free(s->v);
    vt_pair_map_free(&s->index);
}

bool vt_snap_timeline_is_free(const struct vt_snap_timeline *t, const struct vt_snap_event *e)
{
    return e->action == VT_SNAP_FREE_COMPLETED ||
           (t->free_on_request && e->action == VT_SNAP_FREE_REQUESTED);
}

void vt_snap_totals_step(const struct vt_snap_timeline *t, const struct vt_snap_event *e,
                         uint64_t *allocated, uint64_t *reserved)
{
    if (e->action == VT_SNAP_ALLOC)
        *allocated += e->size;
    else if (vt_snap_timeline_is_free(t, e))
        *allocated = *allocated > e->size ? *allocated - e->size : 0;
    else if (e->action == VT_SNAP_SEGMENT_ALLOC || e->action == VT_SNAP_SEGMENT_MAP)
        *reserved += e->size;
    else if (e->action == VT_SNAP_SEGMENT_FREE || e->action == VT_SNAP_SEGMENT_UNMAP)
        *reserved = *reserved > e->size ? *reserved - e->size : 0;
}

static int cmp_live(const void *a, const void *b)
{
    const struct vt_snap_live *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int cmp_seg(const void *a, const void *b)
{
    const struct vt_snap_seg *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Hands the sets over to a state (sorted by address). */
static void to_state(struct live_set *l, struct seg_set *g, uint64_t reserved,
                     struct vt_snap_state *out)
{
    out->live = l->v;
    out->nlive = l->n;
    out->allocated = l->bytes;
    out->segs = g->v;
    out->nsegs = g->n;
    out->reserved = reserved;
    if (out->nlive)
        qsort(out->live, out->nlive, sizeof *out->live, cmp_live);
    if (out->nsegs)
        qsort(out->segs, out->nsegs, sizeof *out->segs, cmp_seg);
    vt_pair_map_free(&l->index);
    vt_pair_map_free(&g->index);
}

static uint64_t sub_clamped(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

bool vt_snap_timeline_init(struct vt_snap_timeline *t, const struct vt_snapshot *s, int64_t device)
{
    memset(t, 0, sizeof *t);
    t->snap = s;
    t->device = device;
    if (device >= 0 && (uint64_t)device < s->ndevices) {
        t->ev = s->traces[device];
        t->nev = s->ntrace[device];
    }
    size_t completed = 0;
    for (size_t i = 0; i < t->nev; i++)
        completed += t->ev[i].action == VT_SNAP_FREE_COMPLETED;
    t->free_on_request = completed == 0;

    struct live_set live = {0};
    struct seg_set segs = {0};
    vt_pair_map_init(&live.index);
    vt_pair_map_init(&segs.index);
    uint64_t reserved = 0;
    bool ok = true;
    for (size_t k = 0; k < s->nsegments && ok; k++) {
        const struct vt_snap_segment *g = &s->segments[k];
        if (g->device != device)
            continue;
        struct vt_snap_seg sg = {g->addr, g->total_size, g->stream, g->is_small, g->is_expandable};
        ok = seg_put(&segs, &sg);
        reserved += g->total_size;
        for (size_t b = 0; b < g->nblocks && ok; b++) {
            const struct vt_snap_block *bl = &g->blocks[b];
            if (bl->state == VT_BLOCK_INACTIVE)
                continue;
            struct vt_snap_live lv = {bl->addr, bl->requested_size, g->stream, bl->frames, true};
            ok = live_put(&live, &lv);
        }
    }
    t->final_allocated = live.bytes;
    t->final_reserved = reserved;
    /* Backwards through the trace. Blocks and segments met here are marked
     * as "before the window" until their creating event is met. */
    for (size_t i = t->nev; i-- > 0 && ok;) {
        const struct vt_snap_event *e = &t->ev[i];
        if (e->action == VT_SNAP_ALLOC) {
            if (!live_remove(&live, e->addr))
                t->inconsistencies++;
        } else if (vt_snap_timeline_is_free(t, e)) {
            if (vt_pair_map_get(&live.index, e->addr, 0))
                t->inconsistencies++;
            struct vt_snap_live lv = {e->addr, e->size, e->stream, NULL, true};
            ok = live_put(&live, &lv);
        } else if (e->action == VT_SNAP_SEGMENT_ALLOC) {
            if (!seg_remove(&segs, e->addr))
                t->inconsistencies++;
            reserved = sub_clamped(reserved, e->size);
        } else if (e->action == VT_SNAP_SEGMENT_FREE) {
            struct vt_snap_seg sg = {e->addr, e->size, e->stream, e->size <= VT_SNAP_SMALL_SEGMENT,
                                     false};
            ok = seg_put(&segs, &sg);
            reserved += e->size;
        } else if (e->action == VT_SNAP_SEGMENT_MAP) {
            reserved = sub_clamped(reserved, e->size);
        } else if (e->action == VT_SNAP_SEGMENT_UNMAP) {
            reserved += e->size;
        }
    }
    /* The frames of blocks that were live all along come from the final
     * state; blocks allocated inside the window get theirs on replay. */
    to_state(&live, &segs, reserved, &t->initial);
    if (!ok)
        vt_snap_timeline_free(t);
    return ok;
}

void vt_snap_timeline_free(struct vt_snap_timeline *t)
{
    vt_snap_state_free(&t->initial);
}

void vt_snap_state_free(struct vt_snap_state *s)
{
    free(s->live);
    free(s->segs);
    memset(s, 0, sizeof *s);
}

bool vt_snap_state_at(const struct vt_snap_timeline *t, size_t upto, struct vt_snap_state *out)
{
    memset(out, 0, sizeof *out);
    struct live_set live = {0};
    struct seg_set segs = {0};
    vt_pair_map_init(&live.index);
    vt_pair_map_init(&segs.index);
    bool ok = true;
    for (size_t k = 0; k < t->initial.nlive && ok; k++)
        ok = live_put(&live, &t->initial.live[k]);
    for (size_t k = 0; k < t->initial.nsegs && ok; k++)
        ok = seg_put(&segs, &t->initial.segs[k]);
    uint64_t reserved = t->initial.reserved;
    if (upto > t->nev)
        upto = t->nev;
    for (size_t i = 0; i < upto && ok; i++) {
        const struct vt_snap_event *e = &t->ev[i];
        if (e->action == VT_SNAP_ALLOC) {
            struct vt_snap_live lv = {e->addr, e->size, e->stream, e->frames, false};
            ok = live_put(&live, &lv);
        } else if (vt_snap_timeline_is_free(t, e)) {
            live_remove(&live, e->addr);
        } else if (e->action == VT_SNAP_SEGMENT_ALLOC) {
            struct vt_snap_seg sg = {e->addr, e->size, e->stream, e->size <= VT_SNAP_SMALL_SEGMENT,
                                     false};
            ok = seg_put(&segs, &sg);
            reserved += e->size;
        } else if (e->action == VT_SNAP_SEGMENT_FREE) {
            seg_remove(&segs, e->addr);
            reserved = sub_clamped(reserved, e->size);
        } else if (e->action == VT_SNAP_SEGMENT_MAP) {
            reserved += e->size;
        } else if (e->action == VT_SNAP_SEGMENT_UNMAP) {
            reserved = sub_clamped(reserved, e->size);
        }
    }
    if (!ok) {
        live_free(&live);
        seg_free(&segs);
        return false;
    }
    to_state(&live, &segs, reserved, out);
    return true;
}

size_t vt_snap_devices(const struct vt_snapshot *s, int64_t *out, size_t max)
{
    size_t n = 0;
    for (size_t d = 0; d < s->ndevices && n < max; d++)
        out[n++] = (int64_t)d;
    for (size_t k = 0; k < s->nsegments; k++) {
        int64_t d = s->segments[k].device;
        bool seen = false;
        for (size_t j = 0; j < n; j++)
            seen |= out[j] == d;
        if (!seen && n < max)
            out[n++] = d;
    }
    return n;
}
