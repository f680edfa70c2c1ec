/*
 * The growth rule (growth_rule.h). The forecast: at the latest step the
 * process held D bytes on the device (the trace's) of which the cache
 * (reserved - allocated, the allocator's) is room the tensors take before
 * a new segment is needed; the device fills when the allocated bytes have
 * grown by T - D + cache, at the measured rate a step.
 */
#include <string.h>

#include "growth_rule.h"

static const struct vt_ledger *device_ledger(const struct vt_replay *rp, int64_t device)
{
    for (size_t i = 0; i < rp->nledgers; i++)
        if (rp->ledgers[i].device == device && rp->ledgers[i].category == VT_CAT_DEVICE)
            return &rp->ledgers[i];
    return NULL;
}

bool vt_growth_told_of(const struct vt_replay *rp, uint64_t device_total,
                       struct vt_growth_told *g)
{
    memset(g, 0, sizeof *g);
    const struct vt_alloc_samples *s = rp->samples;
    if (!s)
        return false;
    const struct vt_ledger *l = device_ledger(rp, s->device);
    const char *name;
    const struct vt_alloc_steps *st = vt_alloc_samples_steps(s, &name);
    if (!st)
        return false;
    const struct vt_growth *grown = &st->allocated;
    g->level = "allocated";
    if (!vt_growth_of(grown, &g->r)) {
        grown = &st->reserved;
        g->level = "reserved";
        if (!vt_growth_of(grown, &g->r))
            return false;
    }
    g->step_phase = name;
    g->total_bytes = g->r.last_bytes - g->r.first_bytes;
    g->sites_dropped = grown->sites_dropped;
    if (l) {
        struct vt_growth_site sites[VT_GROWTH_TOLD_SITES];
        g->nsites = vt_growth_sites(grown, sites, VT_GROWTH_TOLD_SITES);
        for (size_t k = 0; k < g->nsites; k++) {
            const struct vt_site *site = &l->sites.sites[sites[k].site];
            g->sites[k] = (struct vt_site_bytes){site->stack, site->thread, sites[k].per_opening, 0};
        }
    }
    g->step_ns = vt_alloc_steps_duration(st);
    g->grown = grown;
    /* The device fills with segments: at the reserved bytes' rate over the
     * same steps where they grew, else at the tensors' once the cache is
     * used up. Contexts take their share first (the device ledger holds
     * them). */
    uint64_t held = st->last_device_bytes;
    uint64_t rate = g->r.per_opening, room = device_total > held ? device_total - held : 0;
    if (!strcmp(g->level, "allocated") && g->r.openings &&
        st->last_reserved > st->run_start_reserved) {
        rate = (st->last_reserved - st->run_start_reserved) / g->r.openings;
    } else {
        const struct vt_alloc_sample *last = &s->last;
        room += last->reserved > last->allocated ? last->reserved - last->allocated : 0;
    }
    if (device_total && rate && room) {
        uint64_t steps = (room + rate - 1) / rate;
        g->fills = true;
        g->fills_at_step = g->r.closings + steps;
        g->fills_in_ns = g->step_ns * steps;
    }
    return true;
}
