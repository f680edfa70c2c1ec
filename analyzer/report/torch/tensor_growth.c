/*
 * What grows step over step, in tensors (report.h, vt_report_tensor_growth).
 * The trace's closings are on the process's monotonic clock; PyTorch's
 * history stamps its entries in wall-clock microseconds (time_us). The
 * process record holds both clocks read at its start, which converts one
 * into the other. At each closing inside the history's window, the
 * allocator's allocated bytes are those after its last entry at or before
 * that instant; the replay's growth rule then judges them.
 */
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "snapshot_analysis.h"

/* A monotonic instant of the process as Unix-epoch microseconds; false
 * when the trace lacks the clocks to convert. */
static bool wall_us(const struct vt_process_info *p, uint64_t mono_ns, int64_t *out)
{
    if (!p || !p->start_realtime_ns || !p->start_mono_ns)
        return false;
    int64_t ns = (int64_t)p->start_realtime_ns + ((int64_t)mono_ns - (int64_t)p->start_mono_ns);
    *out = ns / 1000;
    return true;
}

/* The allocated bytes at each closing the history covers, in order; n in
 * and out. */
static size_t tensor_totals(const struct vt_snap_device *d, const struct vt_process_info *p,
                            const uint64_t *close_ns, size_t n, uint64_t *totals)
{
    const struct vt_snap_timeline *t = &d->tl;
    int64_t first_us, last_us;
    if (!t->nev || !vt_snap_time_at(d, 0, &first_us) || !vt_snap_time_at(d, t->nev - 1, &last_us))
        return 0;
    uint64_t allocated = t->initial.allocated, reserved = t->initial.reserved;
    size_t i = 0, m = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t at;
        if (!wall_us(p, close_ns[k], &at) || at < first_us || at > last_us)
            continue;
        int64_t when;
        while (i < t->nev && vt_snap_time_at(d, i, &when) && when <= at)
            vt_snap_totals_step(t, &t->ev[i++], &allocated, &reserved);
        totals[m++] = allocated;
    }
    return m;
}

bool vt_report_tensor_growth(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                             struct vt_tensor_growth *out)
{
    memset(out, 0, l->nphases * sizeof *out);
    char path[4096], err[512];
    if (!vt_report_torch_last_snapshot(rep, input, l->device, path, sizeof path))
        return false;
    struct vt_snap_analysis a;
    if (vt_snap_analysis_run(&a, path, err, sizeof err) != 0) {
        vt_snap_analysis_free(&a);
        return false;
    }
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < a.ndevices; k++)
        if (a.devices[k].device == l->device)
            d = &a.devices[k];
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    uint64_t *times = malloc(2 * VT_GROWTH_TIMES * sizeof *times);
    bool any = false;
    for (size_t k = 0; d && times && k < l->nphases; k++) {
        uint64_t *totals = times + VT_GROWTH_TIMES;
        size_t n = vt_growth_times(&l->phases[k].growth, times);
        size_t m = tensor_totals(d, p, times, n, totals);
        if (!m)
            continue;
        any = out[k].known = true;
        out[k].closings = m;
        out[k].grows = vt_growth_of_series(totals, m, &out[k].g);
    }
    free(times);
    vt_snap_analysis_free(&a);
    return any;
}
