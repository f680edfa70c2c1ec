/*
 * What grows step over step, in tensors (report.h, vt_report_tensor_growth).
 * One step, one rate: the rule runs at the closings of the step phase -
 * the one the allocator's samples count steps by (allocator_samples.h: the
 * optimizer where it closed, else the forward) - not at every phase, whose
 * closings fall at different points of a step (a warm-up the optimizer's
 * state made at step 1 is in the forward's first rise, not in the
 * optimizer's) and would give one leak several rates.
 *
 * The trace's closings are on the process's monotonic clock; PyTorch's
 * history stamps its entries in wall-clock microseconds (time_us). The
 * process record holds both clocks read at its start, which converts one
 * into the other. At each closing inside the history's window, the
 * allocator's allocated bytes are those after its last entry at or before
 * that instant; the replay's growth rule then judges them. The sites are
 * the allocator's: the blocks live at the run's last closing that were not
 * at its start (same address and size: the same block), by Python stack.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "pair_map.h"
#include "snapshot_analysis.h"

/* The allocated bytes at each closing the history covers, in order, and
 * the history's entries applied at each; n in and out. */
static size_t tensor_totals(const struct vt_snap_device *d, const struct vt_process_info *p,
                            const uint64_t *close_ns, size_t n, uint64_t *totals, size_t *upto)
{
    const struct vt_snap_timeline *t = &d->tl;
    int64_t first_us, last_us;
    if (!t->nev || !vt_snap_time_at(d, 0, &first_us) || !vt_snap_time_at(d, t->nev - 1, &last_us))
        return 0;
    uint64_t allocated = t->initial.allocated, reserved = t->initial.reserved;
    size_t i = 0, m = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t at;
        if (!vt_report_wall_us(p, close_ns[k], &at) || at < first_us || at > last_us)
            continue;
        int64_t when;
        while (i < t->nev && vt_snap_time_at(d, i, &when) && when <= at)
            vt_snap_totals_step(t, &t->ev[i++], &allocated, &reserved);
        upto[m] = i;
        totals[m++] = allocated;
    }
    return m;
}

/* The step phase's index in l->phases, or SIZE_MAX: the samples' step
 * where the process was sampled, else the optimizer where it closed, else
 * the forward. */
static size_t step_phase(struct vt_report *rep, size_t input, const struct vt_ledger *l)
{
    const struct vt_alloc_samples *ss = rep->a->inputs[input].replay.samples;
    const char *name = NULL;
    if (ss)
        vt_alloc_samples_steps(ss, &name);
    const char *const names[] = {name, "optimizer", "forward"};
    for (size_t n = 0; n < sizeof names / sizeof *names; n++)
        for (size_t k = 0; names[n] && k < l->nphases; k++) {
            const char *ph = vt_report_string(rep, input, l->phases[k].name);
            if (ph && !strcmp(ph, names[n]) && l->phases[k].growth.closings)
                return k;
        }
    return SIZE_MAX;
}

/* The blocks live after `to` entries that were not after `from`, grouped
 * by Python stack into out->sites (bytes: grown a step). */
static void grown_sites(const struct vt_snap_timeline *t, size_t from, size_t to,
                        struct vt_tensor_growth *out)
{
    struct vt_snap_state a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (vt_snap_state_at(t, from, &a) && vt_snap_state_at(t, to, &b)) {
        struct vt_pair_map before;
        vt_pair_map_init(&before);
        bool ok = true;
        for (size_t k = 0; k < a.nlive && ok; k++)
            ok = vt_pair_map_put(&before, a.live[k].addr, a.live[k].requested, 1);
        size_t n = 0;
        for (size_t k = 0; k < b.nlive && ok; k++)
            if (!vt_pair_map_get(&before, b.live[k].addr, b.live[k].requested))
                b.live[n++] = b.live[k];
        b.nlive = n;
        struct vt_snap_site *sites = NULL;
        size_t nsites = 0;
        if (ok && vt_snap_group_sites(&b, &sites, &nsites)) {
            out->sites_known = true;
            out->sites = sites;
            /* a temporary live at the last closing at another address
             * than at the first is no growth: sites under a sixteenth of
             * the rate are left out */
            for (size_t k = 0; k < nsites && out->nsites < VT_TENSOR_GROWTH_SITES; k++) {
                uint64_t step = sites[k].bytes / out->g.openings;
                if (step * 16 >= out->g.per_opening) {
                    sites[out->nsites] = sites[k];
                    sites[out->nsites++].bytes = step;
                }
            }
        } else {
            free(sites);
        }
        vt_pair_map_free(&before);
    }
    vt_snap_state_free(&a);
    vt_snap_state_free(&b);
}

bool vt_report_tensor_growth(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                             struct vt_tensor_growth *out)
{
    memset(out, 0, sizeof *out);
    out->phase = step_phase(rep, input, l);
    char path[4096], err[512];
    if (out->phase == SIZE_MAX ||
        !vt_report_torch_last_snapshot(rep, input, l->device, path, sizeof path))
        return false;
    out->a = calloc(1, sizeof *out->a);
    if (!out->a || vt_snap_analysis_run(out->a, path, err, sizeof err) != 0) {
        vt_report_tensor_growth_free(out);
        return false;
    }
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < out->a->ndevices; k++)
        if (out->a->devices[k].device == l->device)
            d = &out->a->devices[k];
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    uint64_t *times = malloc(2 * VT_GROWTH_TIMES * sizeof *times);
    size_t *upto = malloc(VT_GROWTH_TIMES * sizeof *upto);
    if (d && times && upto) {
        uint64_t *totals = times + VT_GROWTH_TIMES;
        size_t n = vt_growth_times(&l->phases[out->phase].growth, times);
        size_t m = tensor_totals(d, p, times, n, totals, upto);
        if (m) {
            out->known = true;
            out->closings = m;
            out->grows = vt_growth_of_series(totals, m, &out->g);
            /* the run's start: the closing before its first rise */
            if (out->grows && out->g.openings)
                grown_sites(&d->tl, upto[m - 1 - out->g.openings], upto[m - 1], out);
        }
    }
    free(times);
    free(upto);
    if (!out->known)
        vt_report_tensor_growth_free(out);
    return out->known;
}

void vt_report_tensor_growth_free(struct vt_tensor_growth *t)
{
    free(t->sites);
    t->sites = NULL;
    t->nsites = 0;
    if (t->a) {
        vt_snap_analysis_free(t->a);
        free(t->a);
    }
    t->a = NULL;
}
