/*
 * `vramtrace report --at TIME | oom:N`: each ledger's live set at that
 * instant, told as the peak's section tells the peak (docs/user/REPORT.md,
 * "The live set at one instant"):
 *
 *   pid 5662 device 0 at +0.010s: 5.63 GiB live in 72 allocations; top stacks then:
 *          bytes   count  allocated at
 *       1.88 GiB      24  device_alloc:60 <- allocate_parameters:79 <- main:222  via cudaMallocAsync
 *
 * TIME: the live set after the last event at or before it (run/moment_set.h,
 * collected while the analysis ran); oom:N: what the process held right
 * after its Nth failed device allocation, in time order over its ledgers
 * (the failure's own top stacks, replay.h's VT_OOM_TOP of them).
 */
#include <inttypes.h>

#include "moment_set.h"
#include "report.h"

static void at_time(struct vt_report *rep, FILE *out, size_t i, const struct vt_ledger *l,
                    struct vt_site_bytes *top, vt_report_sites_fn print_sites)
{
    const struct vt_replay *rp = &rep->a->inputs[i].replay;
    const struct vt_peak_state *s = vt_moment_set_ledger(rep->moment_set, i, rp, l);
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[i]);
    char lab[32], at[32], b[32], end[32];
    fprintf(out, "\npid %" PRIu64 " %s at %s: ", p ? p->pid : 0,
            vt_ledger_label(l, lab, sizeof lab),
            vt_format_seconds((int64_t)rep->opt->moment.time_ns, at, sizeof at));
    if (!s || !s->peak_bytes)
        fputs("nothing live", out);
    else
        fprintf(out, "%s live in %" PRIu64 " allocation%s; top stacks then:",
                vt_format_bytes(s->peak_bytes, b, sizeof b), s->peak_count,
                s->peak_count == 1 ? "" : "s");
    if (!vt_moment_set_reached(rep->moment_set, rp))
        fprintf(out, " (the trace ends at %s, before that time: the live set at its end)",
                vt_format_reltime(rep, i, rp->last_time_ns, end, sizeof end));
    fputc('\n', out);
    if (s && s->peak_bytes)
        print_sites(rep, out, i, "  ", top, vt_sites_top(&l->sites, s, top, rep->opt->layout.top));
}

/* The process's Nth failed device allocation over the selected ledgers, in
 * time order (ties: ledger order); NULL if it failed fewer times. */
static const struct vt_oom *nth_failure(struct vt_report *rep, size_t i, uint64_t n,
                                        uint64_t *count)
{
    const struct vt_replay *rp = &rep->a->inputs[i].replay;
    size_t next[VT_LEDGERS_MAX] = {0};
    const struct vt_oom *o = NULL;
    for (*count = 0; *count < n; ++*count) {
        size_t best = rp->nledgers;
        for (size_t k = 0; k < rp->nledgers; k++) {
            const struct vt_ledger *l = &rp->ledgers[k];
            if (l->category == VT_CAT_DEVICE && vt_report_ledger_selected(rep, l) &&
                next[k] < l->nooms &&
                (best == rp->nledgers ||
                 l->ooms[next[k]].time_ns < rp->ledgers[best].ooms[next[best]].time_ns))
                best = k;
        }
        if (best == rp->nledgers)
            return NULL;
        o = &rp->ledgers[best].ooms[next[best]++];
    }
    return o;
}

static void at_oom(struct vt_report *rep, FILE *out, size_t i, const struct vt_ledger *l,
                   vt_report_sites_fn print_sites)
{
    uint64_t seen;
    const struct vt_oom *o = nth_failure(rep, i, rep->opt->moment.oom, &seen);
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[i]);
    char lab[32], at[32], b[32], req[32];
    if (o && (o < l->ooms || o >= l->ooms + l->nooms))
        return; /* another ledger's failure: told there */
    if (!o) {
        /* said once per process, on its first device ledger */
        const struct vt_replay *rp = &rep->a->inputs[i].replay;
        for (size_t k = 0; k < rp->nledgers; k++)
            if (rp->ledgers[k].category == VT_CAT_DEVICE &&
                vt_report_ledger_selected(rep, &rp->ledgers[k])) {
                if (&rp->ledgers[k] == l)
                    fprintf(out, "\npid %" PRIu64 ": %" PRIu64 " failed allocation%s, no failure %" PRIu64 "\n",
                            p ? p->pid : 0, seen, seen == 1 ? "" : "s", rep->opt->moment.oom);
                break;
            }
        return;
    }
    fprintf(out, "\npid %" PRIu64 " %s at failure %" PRIu64 " (%s, %s requested): %s held; top stacks then:\n",
            p ? p->pid : 0, vt_ledger_label(l, lab, sizeof lab), rep->opt->moment.oom,
            vt_format_reltime(rep, i, o->time_ns, at, sizeof at),
            vt_format_bytes(o->requested_bytes, req, sizeof req),
            vt_format_bytes(o->process_bytes, b, sizeof b));
    print_sites(rep, out, i, "  ", o->top, o->ntop);
}

void vt_report_at_text(struct vt_report *rep, FILE *out, size_t input, const struct vt_ledger *l,
                       struct vt_site_bytes *top, vt_report_sites_fn print_sites)
{
    if (rep->opt->moment.at == VT_REPORT_AT_TIME && rep->moment_set)
        at_time(rep, out, input, l, top, print_sites);
    else if (rep->opt->moment.at == VT_REPORT_AT_OOM && l->category == VT_CAT_DEVICE)
        at_oom(rep, out, input, l, print_sites);
}
