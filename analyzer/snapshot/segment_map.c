/* Segment layout at one moment: see segment_map.h. */
#include "segment_map.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

void vt_alloc_config_from_snapshot(struct vt_alloc_config *c, const struct vt_snap_settings *s)
{
    vt_alloc_config_default(c);
    if (!s->present)
        return;
    c->max_split_size = s->max_split_size;
    c->garbage_collection_threshold = s->garbage_collection_threshold;
    c->expandable_segments = s->expandable_segments;
    for (int i = 0; i < VT_PT_INTERVALS; i++)
        c->roundup_power2_divisions[i] = s->roundup_power2_divisions[i];
}

/* The bytes a live block occupies, given the room up to the next block. */
static uint64_t occupied(const struct vt_alloc_config *cfg, const struct vt_snap_seg *seg,
                         uint64_t requested, uint64_t room)
{
    uint64_t rounded = vt_pt_round_size(cfg, requested);
    if (rounded >= room)
        return room;
    if (seg->is_expandable || seg->is_small)
        return rounded; /* any rest >= 512 B is split off */
    uint64_t rest = room - rounded;
    if (rounded >= cfg->max_split_size)
        return rest < cfg->max_non_split_rounding ? room : rounded;
    return rest > VT_PT_SMALL_SIZE ? rounded : room;
}

static bool add_block(struct vt_segmap *m, size_t *cap, const struct vt_segmap_block *b)
{
    if (!vt_grow_array((void **)&m->blocks, cap, m->nblocks + 1, sizeof *m->blocks))
        return false;
    m->blocks[m->nblocks++] = *b;
    return true;
}

static void add_free(struct vt_segmap *m, struct vt_segmap_segment *s, uint64_t size)
{
    s->free_bytes += size;
    if (size > s->largest_free)
        s->largest_free = size;
    m->free_bytes += size;
    if (size > m->largest_free)
        m->largest_free = size;
    uint64_t *pool = s->seg->is_small ? &m->largest_free_small : &m->largest_free_large;
    if (size > *pool)
        *pool = size;
}

bool vt_segmap_build(struct vt_segmap *m, const struct vt_snap_state *st,
                     const struct vt_alloc_config *cfg)
{
    memset(m, 0, sizeof *m);
    size_t cap = 0;
    m->segments = calloc(st->nsegs ? st->nsegs : 1, sizeof *m->segments);
    if (!m->segments)
        return false;
    size_t b = 0; /* next live block (both lists are sorted by address) */
    for (size_t k = 0; k < st->nsegs; k++) {
        const struct vt_snap_seg *seg = &st->segs[k];
        struct vt_segmap_segment *s = &m->segments[m->nsegments++];
        s->seg = seg;
        s->first = m->nblocks;
        uint64_t end = seg->addr + seg->size, at = seg->addr;
        while (b < st->nlive && st->live[b].addr < seg->addr)
            m->outside++, b++;
        while (b < st->nlive && st->live[b].addr < end) {
            const struct vt_snap_live *lv = &st->live[b++];
            if (lv->addr > at) {
                struct vt_segmap_block fb = {at, lv->addr - at, 0, true, NULL};
                if (!add_block(m, &cap, &fb))
                    return false;
                add_free(m, s, fb.size);
            }
            uint64_t next = b < st->nlive && st->live[b].addr < end ? st->live[b].addr : end;
            uint64_t start = lv->addr > at ? lv->addr : at;
            uint64_t size = occupied(cfg, seg, lv->requested, next - start);
            struct vt_segmap_block lb = {start, size, lv->requested, false, lv};
            if (!add_block(m, &cap, &lb))
                return false;
            s->allocated += size;
            s->requested += lv->requested;
            at = start + size;
        }
        if (at < end) {
            struct vt_segmap_block fb = {at, end - at, 0, true, NULL};
            if (!add_block(m, &cap, &fb))
                return false;
            add_free(m, s, fb.size);
        }
        s->nblocks = m->nblocks - s->first;
    }
    m->outside += st->nlive - b;
    m->fragmentation = m->free_bytes ? 1.0 - (double)m->largest_free / (double)m->free_bytes : 0.0;
    return true;
}

void vt_segmap_free(struct vt_segmap *m)
{
    free(m->segments);
    free(m->blocks);
    memset(m, 0, sizeof *m);
}
