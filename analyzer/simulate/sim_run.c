/* Replaying a stream through the allocator model: see vt_sim_run.h. */
#include "sim_run.h"

#include <stdlib.h>
#include <string.h>

#include "pair_map.h"

const char *vt_sim_verdict_name(enum vt_sim_verdict v)
{
    switch (v) {
    case VT_SIM_OK:
        return "ok";
    case VT_SIM_FRAGMENTED:
        return "fragmented";
    case VT_SIM_EXHAUSTED:
        return "exhausted";
    case VT_SIM_START_TOO_BIG:
        return "start_too_big";
    }
    return "unknown";
}

static void seed(const struct vt_sim_input *in, struct vt_cache_model *m, struct vt_pair_map *live,
                 struct vt_sim_result *res)
{
    for (size_t k = 0; k < in->nseed_segments; k++) {
        const struct vt_snap_seg *s = &in->seed_segments[k];
        if (!vt_cache_seed_segment(m, s->addr, s->size, s->stream, s->is_small))
            res->seed_failures++;
    }
    for (size_t k = 0; k < in->nseed_blocks; k++) {
        const struct vt_sim_seed_block *b = &in->seed_blocks[k];
        struct vt_cache_block *blk = vt_cache_seed_block(m, b->addr, b->size, b->requested);
        if (!blk || !vt_pair_map_put(live, b->addr, 0, (uint64_t)(uintptr_t)blk))
            res->seed_failures++;
    }
}

bool vt_sim_use_recorded_addresses = true;

/* Replaying a snapshot, the k-th new segment lands where the k-th recorded
 * segment_alloc did, if it has the same size: addresses decide best-fit
 * ties among equal sizes, and they are the driver's choice. */
static uint64_t recorded_address(void *ctx, size_t ordinal, uint64_t size)
{
    const struct vt_sim_input *in = ctx;
    if (ordinal == 0 || ordinal > in->truth.segment_allocs || in->truth.segment_sizes[ordinal - 1] != size)
        return 0;
    return in->truth.segment_addrs[ordinal - 1];
}

static void note_peak(struct vt_cache_model *m, struct vt_sim_result *res, size_t i)
{
    if (m->st.allocated > res->peak_allocated)
        res->peak_allocated = m->st.allocated;
    if (m->st.segments > res->max_segments)
        res->max_segments = m->st.segments;
    if (m->st.reserved > res->peak_reserved) {
        res->peak_reserved = m->st.reserved;
        res->peak_reserved_event = i;
        vt_cache_free_space(m, &res->free_at_peak, &res->largest_free_at_peak);
        res->fragmentation_at_peak =
            res->free_at_peak ? 1.0 - (double)res->largest_free_at_peak / (double)res->free_at_peak : 0;
    }
}

bool vt_sim_run(const struct vt_sim_input *in, const struct vt_alloc_config *cfg, uint64_t capacity,
                size_t nsamples, struct vt_sim_result *res)
{
    memset(res, 0, sizeof *res);
    struct vt_cache_model m;
    struct vt_pair_map live;
    vt_cache_init(&m, cfg, capacity);
    vt_pair_map_init(&live);
    seed(in, &m, &live, res);
    m.log_segments = in->has_truth;
    if (in->has_truth && vt_sim_use_recorded_addresses) {
        m.segment_address = recorded_address;
        m.segment_address_ctx = (void *)in;
    }
    /* On a smaller device the recorded cache would have been flushed. */
    if (capacity && m.st.reserved > capacity)
        vt_cache_empty_cache(&m);
    note_peak(&m, res, 0);
    if (nsamples > VT_SIM_MAX_SAMPLES)
        nsamples = VT_SIM_MAX_SAMPLES;
    size_t per = in->nev / (nsamples ? nsamples : 1) + 1;
    if (capacity && m.st.reserved > capacity) {
        res->verdict = VT_SIM_START_TOO_BIG;
        res->why.reserved = m.st.reserved;
        res->why.allocated = m.st.allocated;
    }
    for (size_t i = 0; i < in->nev && res->verdict == VT_SIM_OK; i++) {
        const struct vt_sim_event *e = &in->ev[i];
        if (e->kind == VT_SIM_ALLOC || e->kind == VT_SIM_FAILED_REQUEST) {
            struct vt_cache_block *b = vt_cache_malloc(&m, e->size, e->stream, &res->why);
            if (!b) {
                if (m.error[0])
                    break;
                res->fail_event = i;
                res->verdict = res->why.free_cached + res->why.device_free >= res->why.rounded
                    ? VT_SIM_FRAGMENTED
                    : VT_SIM_EXHAUSTED;
                break;
            }
            if (e->kind == VT_SIM_FAILED_REQUEST) {
                /* It fits here; the recorded program never got it, so it
                 * is given back after counting toward the peak. */
                note_peak(&m, res, i);
                vt_cache_free(&m, b);
                res->failed_requests_served++;
                goto sample;
            }
            /* An address allocated twice without a free: the old block
             * is gone from the program's view (count it as freed). */
            uint64_t old;
            if (vt_pair_map_remove(&live, e->id, 0, &old))
                vt_cache_free(&m, (struct vt_cache_block *)(uintptr_t)old);
            if (in->has_truth) {
                const struct vt_cache_segment *sg = b->seg;
                uint64_t real_base = sg->addr;
                if (sg->ordinal)
                    real_base = sg->ordinal <= in->truth.segment_allocs
                                    ? in->truth.segment_addrs[sg->ordinal - 1]
                                    : 0;
                res->placements_matching += real_base && real_base + (b->addr - sg->addr) == e->id;
            }
            if (!vt_pair_map_put(&live, e->id, 0, (uint64_t)(uintptr_t)b)) {
                snprintf(m.error, sizeof m.error, "out of memory");
                break;
            }
        } else if (e->kind == VT_SIM_FREE) {
            uint64_t v;
            if (vt_pair_map_remove(&live, e->id, 0, &v))
                vt_cache_free(&m, (struct vt_cache_block *)(uintptr_t)v);
            else
                res->unmatched_frees++;
        } else {
            vt_cache_empty_cache(&m);
        }
    sample:
        note_peak(&m, res, i);
        if (nsamples) {
            size_t s = i / per;
            if (s >= res->nsamples) {
                res->nsamples = s + 1;
                res->samples[s] = (struct vt_sim_sample){i, 0, 0};
            }
            if (m.st.allocated > res->samples[s].allocated)
                res->samples[s].allocated = m.st.allocated;
            if (m.st.reserved > res->samples[s].reserved)
                res->samples[s].reserved = m.st.reserved;
        }
    }
    res->final = m.st;
    for (size_t k = 0; k < m.nsegment_log && k < in->truth.segment_allocs; k++)
        res->segment_sizes_matching += m.segment_log[k] == in->truth.segment_sizes[k];
    bool ok = !m.error[0];
    if (!ok)
        snprintf(res->error, sizeof res->error, "%s", m.error);
    vt_pair_map_free(&live);
    vt_cache_destroy(&m);
    return ok;
}

uint64_t vt_sim_min_capacity(const struct vt_sim_input *in, const struct vt_alloc_config *cfg)
{
    const uint64_t step = (uint64_t)2 << 20;
    struct vt_sim_result *r = malloc(sizeof *r);
    if (!r)
        return 0;
    if (!vt_sim_run(in, cfg, 0, 0, r)) {
        free(r);
        return 0;
    }
    uint64_t hi = (r->peak_reserved + step - 1) / step * step; /* runs, by construction */
    uint64_t lo = r->peak_allocated / step * step;              /* cannot run below this */
    if (lo < step)
        lo = step;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / step / 2 * step;
        if (!vt_sim_run(in, cfg, mid, 0, r)) {
            free(r);
            return 0;
        }
        if (r->verdict == VT_SIM_OK)
            hi = mid;
        else
            lo = mid + step;
    }
    free(r);
    return hi;
}
