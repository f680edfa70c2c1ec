/*
 * The text report: the first screen tells the story - peaks per process and
 * device, failures with their verdicts, shared GPUs - and the details (top
 * stacks at each peak, phases) follow.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "growth_rule.h"
#include "parts_split.h"
#include "peak_contexts.h"
#include "report.h"
#include "snapshot_analysis.h"
#include "snapshot_render.h"
#include "stack_line.h"
#include "stack_where.h"
#include "terminal_text.h"

static void print_where(struct vt_report *rep, FILE *out, size_t input, uint64_t stack)
{
    struct vt_report_stack s = {rep, input, stack};
    vt_stack_where_known(out, rep->opt->layout.full_stacks, rep->opt->layout.text_frames,
                         vt_report_stack_walk, &s, NULL, vt_report_may_have_python(rep, input));
}

/* A failure's stack: its call is known, "via" it where no frame names it. */
static void print_failure_where(struct vt_report *rep, FILE *out, size_t input,
                                const struct vt_oom *o)
{
    struct vt_report_stack s = {rep, input, o->stack};
    const struct vt_input *r = &rep->a->inputs[input];
    vt_stack_where_known(out, rep->opt->layout.full_stacks, rep->opt->layout.text_frames,
                         vt_report_stack_walk, &s, vt_input_api(r, o->label ? o->label : o->api),
                         vt_report_may_have_python(rep, input));
}

/* The main thread (its id is the pid) goes without saying; other threads
 * are named after the stack, PyTorch's autograd workers as [backward]. */
static void print_thread(struct vt_report *rep, FILE *out, size_t input, uint64_t thread)
{
    const struct vt_input *r = &rep->a->inputs[input];
    const struct vt_thread_info *t = vt_input_thread(r, thread);
    const struct vt_process_info *p = vt_input_process(r);
    char buf[64];
    const char *name = vt_report_thread_name(rep, input, thread, buf, sizeof buf);
    if (!strncmp(name, "pt_autograd_", 12))
        fputs("  [backward]", out);
    else if (!t || !p || t->os_tid != p->pid) {
        fputs("  [thread ", out);
        vt_terminal_put(out, name);
        fputc(']', out);
    }
}

static void print_sites(struct vt_report *rep, FILE *out, size_t input, const char *indent,
                        const struct vt_site_bytes *top, size_t n)
{
    char b[32];
    if (n == 0) {
        fprintf(out, "%s(nothing live)\n", indent);
        return;
    }
    fprintf(out, "%s%12s %7s  %s\n", indent, "bytes", "count", "allocated at");
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    for (size_t i = 0; i < n; i++) {
        fprintf(out, "%s%12s ", indent, vt_format_bytes(top[i].bytes, b, sizeof b));
        if (vt_contexts_site(rp, top[i].stack, top[i].thread))
            fputs("context  ", out); /* a CUDA context's cost (peak_contexts.h) */
        else
            fprintf(out, "%7" PRIu64 "  ", top[i].count);
        print_where(rep, out, input, top[i].stack);
        print_thread(rep, out, input, top[i].thread);
        fputc('\n', out);
    }
}


static void summary(struct vt_report *rep, FILE *out)
{
    const struct vt_analysis *a = rep->a;
    char b[32], c[32], t[32], lab[32], cmd[80];
    /* The local rank only where a launcher gave one. */
    bool local = false;
    for (size_t i = 0; i < a->ninputs; i++)
        local |= vt_report_input_selected(rep, i) && vt_report_local_rank(rep, i) >= 0;
    fprintf(out, "%8s %5s", "pid", "rank");
    if (local)
        fprintf(out, " %5s", "local");
    fprintf(out, "  %-14s %12s %12s %10s %5s  %s\n", "memory", "peak", "capacity", "at", "OOMs",
            "command");
    for (size_t i = 0; i < a->ninputs; i++) {
        if (!vt_report_input_selected(rep, i))
            continue;
        const struct vt_process_info *p = vt_input_process(&a->inputs[i]);
        const struct vt_replay *rp = &a->inputs[i].replay;
        long rank = vt_report_rank(rep, i), lrank = vt_report_local_rank(rep, i);
        char r[24] = "-", lr[24] = "-", rank_s[64];
        if (rank >= 0)
            snprintf(r, sizeof r, "%ld", rank);
        if (lrank >= 0)
            snprintf(lr, sizeof lr, "%ld", lrank);
        if (local) /* two cells: "    3     1" */
            snprintf(rank_s, sizeof rank_s, "%5s %5s", r, lr);
        else
            snprintf(rank_s, sizeof rank_s, "%s", r);
        vt_report_command(rep, i, cmd, sizeof cmd);
        size_t shown = 0;
        for (int cat = VT_CAT_DEVICE; cat <= VT_CAT_HOST_PINNED; cat++)
            for (size_t k = 0; k < rp->nledgers; k++) {
                const struct vt_ledger *l = &rp->ledgers[k];
                if ((int)l->category != cat || !vt_report_ledger_selected(rep, l))
                    continue;
                const struct vt_device_info *dev =
                    l->device >= 0 && cat == VT_CAT_DEVICE
                        ? vt_input_device(&a->inputs[i], (uint64_t)l->device)
                        : NULL;
                fprintf(out, "%8" PRIu64 " %5s  %-14s %12s %12s %10s %5zu  %s\n",
                        p ? p->pid : 0, rank_s, vt_ledger_label(l, lab, sizeof lab),
                        vt_format_bytes(l->peak.peak_bytes, b, sizeof b),
                        dev ? vt_format_bytes(dev->total_bytes, c, sizeof c) : "-",
                        l->peak.has_peak
                            ? vt_format_reltime(rep, i, l->peak.peak_time_ns, t, sizeof t)
                            : "-",
                        vt_ledger_failed_requests(l), shown ? "" : cmd);
                shown++;
            }
        if (!shown)
            fprintf(out, "%8" PRIu64 " %5s  %-14s %12s %12s %10s %5s  %s\n", p ? p->pid : 0,
                    rank_s, "(none)", "0 B", "-", "-", "0", cmd);
        if (vt_input_truncated(&a->inputs[i]))
            fprintf(out, "%8s        note: %s\n", "", vt_input_truncation_note(&a->inputs[i]));
        if (rp->lost_events)
            fprintf(out, "%8s        note: %" PRIu64 " events were lost by the tracer\n", "",
                    rp->lost_events);
    }
}

/* Several processes: how uneven the device peaks are (data-parallel ranks
 * should be alike; a straggler explains an OOM on one rank). Only processes
 * that hold device memory count: a launcher (torchrun, a shell) is traced
 * too, and its 0 B would make every job look 100% unbalanced. */
static void imbalance(struct vt_report *rep, FILE *out)
{
    const struct vt_analysis *a = rep->a;
    uint64_t max = 0, min = UINT64_MAX, sum = 0;
    size_t n = 0, max_i = 0, min_i = 0;
    for (size_t i = 0; i < a->ninputs; i++) {
        if (!vt_report_input_selected(rep, i))
            continue;
        uint64_t peak = 0;
        bool on_device = false;
        const struct vt_replay *rp = &a->inputs[i].replay;
        for (size_t k = 0; k < rp->nledgers; k++)
            if (rp->ledgers[k].category == VT_CAT_DEVICE &&
                vt_report_ledger_selected(rep, &rp->ledgers[k])) {
                on_device = true;
                if (rp->ledgers[k].peak.peak_bytes > peak)
                    peak = rp->ledgers[k].peak.peak_bytes;
            }
        if (!on_device)
            continue;
        if (peak > max) {
            max = peak;
            max_i = i;
        }
        if (peak < min) {
            min = peak;
            min_i = i;
        }
        sum += peak;
        n++;
    }
    if (n < 2)
        return;
    char b1[32], b2[32], b3[32];
    const struct vt_process_info *pmax = vt_input_process(&a->inputs[max_i]);
    const struct vt_process_info *pmin = vt_input_process(&a->inputs[min_i]);
    fprintf(out, "\nimbalance across %zu processes: largest device peak %s (pid %" PRIu64
                 "), smallest %s (pid %" PRIu64 "), mean %s; spread %.1f%% of the largest\n",
            n, vt_format_bytes(max, b1, sizeof b1), pmax ? pmax->pid : 0,
            vt_format_bytes(min, b2, sizeof b2), pmin ? pmin->pid : 0,
            vt_format_bytes(sum / n, b3, sizeof b3),
            max ? 100.0 * (double)(max - min) / (double)max : 0.0);
}

static void gpus(struct vt_report *rep, FILE *out)
{
    const struct vt_analysis *a = rep->a;
    bool header = false;
    char b[32], u[64], t[32];
    for (size_t g = 0; g < a->ngpus; g++) {
        const struct vt_gpu *gp = &a->gpus[g];
        if (rep->one_job && gp->job != rep->job)
            continue;
        if (gp->nmembers < 2)
            continue;
        size_t first = gp->members[0];
        if (!header) {
            fputs("\nshared GPUs (processes merged into one timeline by their monotonic clocks):\n",
                  out);
            header = true;
        }
        fprintf(out, "  %s%s%s: combined peak %s at %s", gp->has_uuid ? vt_format_uuid(gp->uuid, u, sizeof u) : "?",
                gp->name ? " " : "", gp->name ? gp->name : "",
                vt_format_bytes(gp->peak_bytes, b, sizeof b),
                vt_format_reltime(rep, first, gp->peak_time_ns, t, sizeof t));
        if (gp->total_bytes)
            fprintf(out, " of %s", vt_format_bytes(gp->total_bytes, b, sizeof b));
        fputs("; held then:", out);
        for (size_t k = 0; k < gp->nmembers; k++) {
            size_t i = gp->members[k];
            const struct vt_process_info *p = vt_input_process(&a->inputs[i]);
            fprintf(out, " pid %" PRIu64 " %s;", p ? p->pid : 0,
                    vt_format_bytes(vt_gpu_peak_of(gp, i), b, sizeof b));
        }
        fputc('\n', out);
    }
}

/* A table of holders (at a failure, at exit) is worth printing only when it
 * differs from the ledger's peak table as printed (its first `top` rows):
 * the same rows are printed once. Callers check the totals are equal. */
static bool same_as_peak(const struct vt_ledger *l, const struct vt_site_bytes *rows, size_t n,
                         size_t top)
{
    if (!l->peak.has_peak)
        return false;
    struct vt_site_bytes peak[VT_OOM_TOP];
    size_t want = n < top ? n : top;
    if (want > VT_OOM_TOP)
        return false; /* longer tables are not compared: printed */
    size_t np = vt_sites_top(&l->sites, &l->peak, peak, want);
    if (np != want)
        return false;
    for (size_t k = 0; k < np; k++)
        if (peak[k].stack != rows[k].stack || peak[k].thread != rows[k].thread ||
            peak[k].bytes != rows[k].bytes || peak[k].count != rows[k].count)
            return false;
    return true;
}

/* One request: its first failure, and the failed retries folded into it
 * (ooms[first .. end)). */
static void print_request(struct vt_report *rep, FILE *out, size_t i, const struct vt_ledger *l,
                          size_t first, size_t end)
{
    const struct vt_analysis *a = rep->a;
    const struct vt_process_info *p = vt_input_process(&a->inputs[i]);
    const struct vt_oom *o = &l->ooms[first];
    char b1[32], b2[32], b3[32], b4[32], t[32], th[64], err[128], text[768];
    const char *api = vt_input_api(&a->inputs[i], o->api);
    const char *asked = o->label ? vt_input_api(&a->inputs[i], o->label) : api;
    fprintf(out, "  pid %" PRIu64 " device %" PRId64 " at %s: %s of %s (%s) failed: %s",
            p ? p->pid : 0, o->device, vt_format_reltime(rep, i, o->time_ns, t, sizeof t), asked,
            vt_format_bytes(o->requested_bytes, b1, sizeof b1), vt_kind_name(o->kind),
            vt_oom_error_name(o, err, sizeof err));
    if (o->label)
        fprintf(out, " from %s", api);
    fputc('\n', out);
    fprintf(out, "    %s\n", vt_oom_narrative(o, first ? &l->ooms[first - 1] : NULL, text,
                                              sizeof text));
    fprintf(out, "    then: %s released in %" PRIu64 " frees within %.1fs; retry %s\n",
            vt_format_bytes(o->released_bytes, b1, sizeof b1), o->released_count,
            (double)VT_OOM_FLUSH_WINDOW_NS / 1e9, vt_retry_name(o->retry));
    for (size_t m = first + 1; m < end; m++) {
        const struct vt_oom *r = &l->ooms[m];
        fprintf(out, "    retried at %s: %s free, this process held %s: failed again\n",
                vt_format_reltime(rep, i, r->time_ns, t, sizeof t),
                r->driver_info ? vt_format_bytes(r->free_bytes, b1, sizeof b1) : "?",
                vt_format_bytes(r->process_bytes, b2, sizeof b2));
    }
    if (!vt_oom_request_failed(l, first))
        fputs("    the retry succeeded: not counted as out of memory\n", out);
    struct vt_verdict_told told;
    vt_report_verdict(rep, i, l, first, end, &told);
    fprintf(out, "    verdict%s: %s - %s\n",
            !strcmp(told.source, "allocator")           ? " (PyTorch's allocator at the failure)"
            : !strcmp(told.source, "allocator_samples") ? " (PyTorch's allocator, sampled)"
                                                        : "",
            told.verdict, told.story);
    fprintf(out, "    next: %s\n", told.next_step);
    if (told.set_aside)
        fprintf(out, "    (the trace alone would say %s: %s)\n", told.trace_verdict,
                told.set_aside);
    vt_report_torch_oom_text(rep, out, i, l, first, end);
    vt_parts_failure_text(rep, out, i, l, first, end);
    if (o->driver_info)
        fprintf(out, "    driver: %s free of %s; this process held %s; outside it %s\n",
                vt_format_bytes(o->free_bytes, b1, sizeof b1),
                vt_format_bytes(o->total_bytes, b2, sizeof b2),
                vt_format_bytes(o->process_bytes, b3, sizeof b3),
                vt_format_bytes(o->outside_bytes, b4, sizeof b4));
    else
        fprintf(out, "    this process held %s (driver free/total not captured)\n",
                vt_format_bytes(o->process_bytes, b3, sizeof b3));
    fprintf(out, "    thread %s", vt_report_thread_name(rep, i, o->thread, th, sizeof th));
    if (o->phase)
        fprintf(out, ", in phase %s", vt_report_string(rep, i, o->phase));
    if (o->outer_phase && o->outer_phase != o->phase)
        fprintf(out, " (within %s)", vt_report_string(rep, i, o->outer_phase));
    /* the stack on a line of its own: its full width for the frames */
    fputs("\n    at: ", out);
    print_failure_where(rep, out, i, o);
    fputc('\n', out);
    size_t n = o->ntop < rep->opt->layout.top ? o->ntop : rep->opt->layout.top;
    if (n && o->process_bytes + o->context_bytes == l->peak.peak_bytes &&
        same_as_peak(l, o->top, o->ntop, rep->opt->layout.top))
        fputs("    largest holders then: the same as at the peak (below)\n", out);
    else if (n) {
        fputs("    largest holders then:\n", out);
        print_sites(rep, out, i, "      ", o->top, n);
    }
}

static void failures(struct vt_report *rep, FILE *out)
{
    const struct vt_analysis *a = rep->a;
    bool header = false;
    for (size_t i = 0; i < a->ninputs; i++) {
        if (!vt_report_input_selected(rep, i))
            continue;
        const struct vt_replay *rp = &a->inputs[i].replay;
        for (size_t k = 0; k < rp->nledgers; k++) {
            const struct vt_ledger *l = &rp->ledgers[k];
            if (!vt_report_ledger_selected(rep, l))
                continue;
            for (size_t m = 0, end; m < l->nooms; m = end) {
                end = vt_oom_request_end(l, m);
                if (!header) {
                    fputs("\nallocation failures:\n", out);
                    header = true;
                }
                print_request(rep, out, i, l, m, end);
            }
        }
    }
}

/* The allocator's sites that grew (PyTorch's history: blocks kept across
 * the growing steps, by Python stack), a step's bytes each. */
static void print_tensor_sites(struct vt_report *rep, FILE *out, const struct vt_tensor_growth *t)
{
    char b[32];
    fprintf(out, "      %12s  %s\n", "per step", "grown at (PyTorch's allocator: tensors kept)");
    for (size_t r = 0; r < t->nsites; r++) {
        fprintf(out, "      %12s  ", vt_format_bytes(t->sites[r].bytes, b, sizeof b));
        vt_snap_print_where(out, t->sites[r].frames, &rep->opt->layout);
        fputc('\n', out);
    }
}

/* Without samples, the growth in tensors from the allocator's history
 * (vt_report_tensor_growth), told as the samples' growth is: one rate a
 * step. */
static void print_tensor_growth(struct vt_report *rep, FILE *out, size_t i,
                                const struct vt_ledger *l, const struct vt_tensor_growth *t)
{
    char b[32], b2[32], b3[32];
    const char *name = vt_report_string(rep, i, l->phases[t->phase].name);
    if (!t->grows) {
        fprintf(out, "  growth in tensors (PyTorch's allocator history, allocated bytes at each %s "
                     "closing): none (%zu closings in its window)\n",
                name ? name : "?", t->closings);
        return;
    }
    const struct vt_growth_result *g = &t->g;
    fprintf(out, "  growth (PyTorch's allocator history, allocated bytes at each %s closing): +%s a "
                 "step since step %" PRIu64 " of the %zu in its window (%" PRIu64
                 " in a row up to the last; %s -> %s): a leak\n",
            name ? name : "?", vt_format_bytes(g->per_opening, b, sizeof b), g->from_opening,
            t->closings, g->openings, vt_format_bytes(g->first_bytes, b2, sizeof b2),
            vt_format_bytes(g->last_bytes, b3, sizeof b3));
    if (t->nsites)
        print_tensor_sites(rep, out, t);
}

/* The allocator's growth (growth_rule.h) on the device it was sampled on;
 * whether it grows. Its sites are the allocator's where its history
 * covers the steps (t), else the segments'. */
static bool print_allocator_growth(struct vt_report *rep, FILE *out, size_t i,
                                   const struct vt_ledger *l, const struct vt_tensor_growth *t)
{
    const struct vt_input *in = &rep->a->inputs[i];
    struct vt_growth_told g;
    if (l->category != VT_CAT_DEVICE || !in->replay.samples ||
        in->replay.samples->device != l->device || !vt_growth_told_of(&in->replay, vt_input_device_total(in, l->device), &g))
        return false;
    char b[32], b2[32], b3[32];
    fprintf(out, "  growth (PyTorch's allocator, %s bytes at each %s closing): +%s a step since "
                 "step %" PRIu64 " (%" PRIu64 " in a row up to the last of %" PRIu64
                 "; %s -> %s)%s\n",
            g.level, g.step_phase, vt_format_bytes(g.r.per_opening, b, sizeof b), g.r.from_opening,
            g.r.openings, g.r.closings, vt_format_bytes(g.r.first_bytes, b2, sizeof b2),
            vt_format_bytes(g.r.last_bytes, b3, sizeof b3),
            strcmp(g.level, "allocated") ? ": the cache grows, the tensors do not" : ": a leak");
    if (g.fills) {
        fprintf(out, "    at that rate the device fills at step %" PRIu64, g.fills_at_step);
        if (g.step_ns)
            fprintf(out, ", in about %.1f s (%.3f s a step)", (double)g.fills_in_ns / 1e9,
                    (double)g.step_ns / 1e9);
        fputc('\n', out);
    }
    if (t && t->grows && t->nsites && !strcmp(g.level, "allocated")) {
        print_tensor_sites(rep, out, t);
        return true;
    }
    if (g.sites_dropped) {
        fputs("    (sites not kept: the step closed too often to copy them)\n", out);
        return true;
    }
    if (!g.nsites)
        return true;
    fprintf(out, "      %12s  %s\n", "per step", "grown at (segments)");
    for (size_t r = 0; r < g.nsites; r++) {
        fprintf(out, "      %12s  ", vt_format_bytes(g.sites[r].bytes, b, sizeof b));
        print_where(rep, out, i, g.sites[r].stack);
        print_thread(rep, out, i, g.sites[r].thread);
        fputc('\n', out);
    }
    return true;
}

/* What grows step over step (phase_growth.h): the phases whose closings
 * rose at least VT_GROWTH_MIN_RISES times in a row up to the last, with
 * the sites that grew; a loop that closed often enough and did not grow
 * is said to be steady. First the allocator's growth, one rate a step. */
static void print_growth(struct vt_report *rep, FILE *out, size_t i, const struct vt_ledger *l,
                         struct vt_site_bytes *top)
{
    char b[32], b2[32], b3[32];
    /* the allocator's history at the step (a snapshot read): only where a
     * phase repeated */
    bool repeated = false;
    for (size_t k = 0; k < l->nphases; k++)
        repeated |= l->phases[k].growth.closings > VT_GROWTH_MIN_RISES;
    struct vt_tensor_growth t;
    bool history = repeated && vt_report_tensor_growth(rep, i, l, &t);
    bool grows = print_allocator_growth(rep, out, i, l, history ? &t : NULL);
    bool samples_told = grows;
    grows |= history && t.grows;
    bool any = false;
    for (size_t k = 0; k < l->nphases; k++) {
        const struct vt_phase_peak *ph = &l->phases[k];
        const char *name = vt_report_string(rep, i, ph->name);
        if (rep->opt->select.phase && (!name || strcmp(name, rep->opt->select.phase)))
            continue;
        struct vt_growth_result g;
        if (!vt_growth_of(&ph->growth, &g))
            continue;
        if (!any)
            fputs("  growth across openings (device bytes live at each closing):\n", out);
        any = true;
        fprintf(out, "    %-24s +%s per opening from opening %" PRIu64 " (%" PRIu64
                     " in a row up to the last of %" PRIu64 "; %s -> %s)\n",
                name ? name : "?", vt_format_bytes(g.per_opening, b, sizeof b), g.from_opening,
                g.openings, g.closings, vt_format_bytes(g.first_bytes, b2, sizeof b2),
                vt_format_bytes(g.last_bytes, b3, sizeof b3));
        size_t n = vt_report_growth_rows(l, ph, top, rep->opt->layout.top);
        if (ph->growth.sites_dropped) {
            fputs("      (sites not kept: the phase closed too often to copy them)\n", out);
            continue;
        }
        fprintf(out, "      %12s  %s\n", "per opening", "grown at");
        for (size_t r = 0; r < n; r++) {
            fprintf(out, "      %12s  ", vt_format_bytes(top[r].bytes, b, sizeof b));
            print_where(rep, out, i, top[r].stack);
            print_thread(rep, out, i, top[r].thread);
            fputc('\n', out);
        }
    }
    if (!any && !grows && repeated)
        fputs("  growth across openings: none (each repeated phase ends where it ended before, "
              "once warm)\n", out);
    /* one leak, one rate: the history's growth is the samples' where
     * they told it */
    if (history && !samples_told)
        print_tensor_growth(rep, out, i, l, &t);
    if (history)
        vt_report_tensor_growth_free(&t);
}

static void ledger_details(struct vt_report *rep, FILE *out, size_t i, const struct vt_ledger *l,
                           struct vt_site_bytes *top)
{
    char b[32], t[32], lab[32];
    if (!l->peak.has_peak)
        return;
    if (rep->opt->moment.at != VT_REPORT_AT_PEAK) { /* --at: that instant instead */
        vt_report_at_text(rep, out, i, l, top, print_sites);
        return;
    }
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[i]);
    if (!rep->opt->select.phase) {
        /* ", of which 384.00 MiB CUDA contexts" after the instant */
        struct vt_peak_contexts pc;
        char ctx[160] = "";
        if (vt_peak_contexts_of(&rep->a->inputs[i].replay, l, &pc)) {
            ctx[0] = ',';
            ctx[1] = ' ';
            vt_peak_contexts_words(&pc, ctx + 2, sizeof ctx - 2);
        }
        fprintf(out, "\npid %" PRIu64 " %s: peak %s at %s%s, %" PRIu64 " allocations live; top stacks then:\n",
                p ? p->pid : 0, vt_ledger_label(l, lab, sizeof lab),
                vt_format_bytes(l->peak.peak_bytes, b, sizeof b),
                vt_format_reltime(rep, i, l->peak.peak_time_ns, t, sizeof t), ctx,
                l->peak.peak_count);
        size_t n = vt_sites_top(&l->sites, &l->peak, top, rep->opt->layout.top);
        print_sites(rep, out, i, "  ", top, n);
        vt_parts_text(rep, out, i, l);
    }
    bool header = false;
    for (size_t k = 0; k < l->nphases; k++) {
        const struct vt_phase_peak *ph = &l->phases[k];
        const char *name = vt_report_string(rep, i, ph->name);
        if (rep->opt->select.phase && (!name || strcmp(name, rep->opt->select.phase)))
            continue;
        if (!header) {
            fprintf(out, "  phases of pid %" PRIu64 " %s (peak while open):\n", p ? p->pid : 0,
                    vt_ledger_label(l, lab, sizeof lab));
            fprintf(out, "    %-24s %12s %10s %7s\n", "phase", "peak", "at", "opened");
            header = true;
        }
        fprintf(out, "    %-24s %12s %10s %7" PRIu64 "%s\n", name ? name : "?",
                vt_format_bytes(ph->state.peak_bytes, b, sizeof b),
                vt_format_reltime(rep, i, ph->state.peak_time_ns, t, sizeof t), ph->opened,
                ph->open_at_exit ? "  (still open at exit)" : "");
        if (rep->opt->select.phase) {
            size_t n = vt_sites_top(&l->sites, &ph->state, top, rep->opt->layout.top);
            print_sites(rep, out, i, "      ", top, n);
        }
    }
    print_growth(rep, out, i, l, top);
    if (rep->opt->select.phase)
        return;
    /* Leaks: what no free ended before the trace did. */
    /* its contexts apart: released at exit, never freed */
    uint64_t live = l->sites.total_bytes - l->context_bytes;
    if (live) {
        bool cut = vt_input_truncated(&rep->a->inputs[i]);
        fprintf(out, "  live at exit on pid %" PRIu64 " %s: %s in %" PRIu64 " allocation%s (%s):\n",
                p ? p->pid : 0, vt_ledger_label(l, lab, sizeof lab),
                vt_format_bytes(live, b, sizeof b), l->sites.total_count,
                l->sites.total_count == 1 ? "" : "s",
                cut ? "the trace was cut short: the process may have freed them later"
                    : "never freed");
        size_t n = vt_sites_top(&l->sites, NULL, top, rep->opt->layout.top);
        n = vt_peak_contexts_drop(&rep->a->inputs[i].replay, top, n);
        if (live == l->peak.peak_bytes && same_as_peak(l, top, n, rep->opt->layout.top))
            fputs("    the same as at the peak (above)\n", out);
        else
            print_sites(rep, out, i, "    ", top, n);
    }
}

/* The header of one job among several: its session, when, where, what. */
static void job_header(struct vt_report *rep, FILE *out, size_t job)
{
    const struct vt_analysis *a = rep->a;
    const struct vt_process_info *p = NULL;
    for (size_t i = 0; i < a->ninputs && !p; i++)
        if (a->inputs[i].job == job)
            p = vt_input_process(&a->inputs[i]);
    vt_job_header_text(out, job, a->njobs, a->jobs[job].session,
                       vt_process_env(p, "VRAMTRACE_SESSION_HOST"),
                       vt_process_env(p, "VRAMTRACE_SESSION_COMMAND"));
}

static void job_text(struct vt_report *rep, FILE *out, struct vt_site_bytes *top)
{
    const struct vt_analysis *a = rep->a;
    size_t procs = 0, ngpus = 0;
    for (size_t i = 0; i < a->ninputs; i++)
        procs += a->inputs[i].job != VT_NO_JOB && (!rep->one_job || a->inputs[i].job == rep->job);
    for (size_t g = 0; g < a->ngpus; g++)
        ngpus += !rep->one_job || a->gpus[g].job == rep->job;
    fprintf(out, "vramtrace report: %zu process%s, %zu GPU%s\n\n", procs,
            procs == 1 ? "" : "es", ngpus, ngpus == 1 ? "" : "s");
    size_t job = rep->one_job ? rep->job : 0;
    if (vt_job_worth_overview(rep, job))
        vt_job_overview_text(rep, out, job);
    summary(rep, out);
    imbalance(rep, out);
    gpus(rep, out);
    failures(rep, out);
    for (size_t i = 0; i < a->ninputs; i++) {
        if (!vt_report_input_selected(rep, i))
            continue;
        const struct vt_replay *rp = &a->inputs[i].replay;
        for (int cat = VT_CAT_DEVICE; cat <= VT_CAT_HOST_PINNED; cat++)
            for (size_t k = 0; k < rp->nledgers; k++)
                if ((int)rp->ledgers[k].category == cat &&
                    vt_report_ledger_selected(rep, &rp->ledgers[k]))
                    ledger_details(rep, out, i, &rp->ledgers[k], top);
        if (rp->nmarks && !rep->opt->select.phase) {
            char b[32], t[32], text[512];
            fputs("  marks (device bytes then):\n", out);
            for (size_t m = 0; m < rp->nmarks && m < rep->opt->layout.top; m++)
                fprintf(out, "    %-24s %12s %10s\n",
                        vt_report_mark_text(rep, i, &rp->marks[m], text, sizeof text),
                        vt_format_bytes(rp->marks[m].device_bytes, b, sizeof b),
                        vt_format_reltime(rep, i, rp->marks[m].time_ns, t, sizeof t));
        }
        if (rp->unmatched_frees || rp->replaced_allocs || rp->unmatched_pops)
            fprintf(out, "  notes: %" PRIu64 " frees of memory allocated before tracing or not seen, %" PRIu64
                         " allocations over a live address, %" PRIu64 " unmatched range ends\n",
                    rp->unmatched_frees, rp->replaced_allocs, rp->unmatched_pops);
    }
}

int vt_report_text(struct vt_report *rep, FILE *to)
{
    struct vt_site_bytes *top = calloc(rep->opt->layout.top ? rep->opt->layout.top : 1, sizeof *top);
    /* Every line goes through it: stack lines are fitted to the width. */
    FILE *out = vt_stack_lines_open(to, rep->opt->layout.full_stacks ? 0 : rep->opt->layout.width);
    if (!top || !out) {
        free(top);
        if (out)
            vt_stack_lines_close(out);
        return 2;
    }
    /* Traces of different sessions are different jobs: one report each,
     * never one timeline (analysis.h). */
    if (rep->a->njobs > 1) {
        for (size_t k = 0; k < rep->a->njobs; k++) {
            rep->one_job = true;
            rep->job = k;
            bool any = false;
            for (size_t i = 0; i < rep->a->ninputs && !any; i++)
                any = vt_report_input_selected(rep, i);
            if (!any)
                continue; /* a filter left nothing of it */
            job_header(rep, out, k);
            job_text(rep, out, top);
            fputc('\n', out);
        }
        rep->one_job = false;
    } else {
        job_text(rep, out, top);
    }
    free(top);
    return vt_stack_lines_close(out) ? 2 : 0;
}
