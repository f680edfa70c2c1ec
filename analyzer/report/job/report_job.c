/*
 * The job: what a report over the traces of many ranks says first (see
 * report.h, "the job"). A job is the traces of one session (analysis.h);
 * its overview is the ranks x GPUs table, the failure that came first in
 * time and the ones that followed it (a collective timing out on every
 * other rank), and the spread of the ranks' device and phase peaks. It is
 * printed from a job view (job_view.h), so the traces and the summaries of
 * a job's nodes print the same.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "job_foreign.h"
#include "divergence.h"
#include "job_view.h"
#include "peak_contexts.h"
#include "report.h"
#include "stack_line.h"
#include "terminal_text.h"

/* Past this many (rank, GPU) rows the table shows the first ones by rank
 * and says how many more (--rank N shows one). */
#define JOB_ROWS_MAX 32

static bool in_job(const struct vt_report *rep, size_t job, size_t i)
{
    return rep->a->inputs[i].job == job && vt_report_input_selected(rep, i);
}

bool vt_job_worth_overview(const struct vt_report *rep, size_t job)
{
    size_t n = 0;
    for (size_t i = 0; i < rep->a->ninputs; i++)
        if (in_job(rep, job, i) && (++n > 1 || vt_report_rank(rep, i) >= 0))
            return true;
    return false;
}

void vt_job_header_text(FILE *out, size_t job, size_t njobs, const char *session,
                        const char *host, const char *command)
{
    fprintf(out, "=== job %zu of %zu: ", job + 1, njobs);
    if (!session) {
        fputs("traces of no session (traced without `vramtrace run`)", out);
    } else {
        fprintf(out, "session %s", session);
        if (host && *host)
            fprintf(out, " on %s", host);
        if (command && *command) {
            fputs(": ", out);
            vt_terminal_put(out, command);
        }
    }
    fputs(" ===\n", out);
}

/* "rank 3, pid 4242", or "pid 4242" without a rank. */
static const char *who(const struct vt_jv_process *p, char *buf, size_t n)
{
    if (p->rank >= 0)
        snprintf(buf, n, "rank %ld, pid %" PRIu64, p->rank, p->pid);
    else
        snprintf(buf, n, "pid %" PRIu64, p->pid);
    return buf;
}

/* What of the peaks above the ranks' CUDA contexts are (peak_contexts.h):
 * the same few hundred MiB a GPU, said once. */
static void peaks_contexts(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    struct vt_peak_contexts all = {0, 0};
    uint64_t most = 0;
    size_t rows = 0;
    for (size_t o = 0; o < v->nprocesses; o++) {
        const struct vt_jv_process *p = &v->processes[f->order[o]];
        for (size_t k = 0; k < p->ndevices; k++) {
            const struct vt_jv_device *d = &p->devices[k];
            if (!d->contexts_said)
                continue;
            rows += d->contexts_bytes != 0;
            all.bytes += d->contexts_bytes;
            all.unmeasured += d->contexts_unmeasured;
            if (d->contexts_bytes > most)
                most = d->contexts_bytes;
        }
    }
    if (!all.bytes && !all.unmeasured)
        return;
    char b[32];
    fputs("  of the peaks above, CUDA contexts:", out);
    if (all.bytes) {
        fprintf(out, " %s", vt_format_bytes(all.bytes, b, sizeof b));
        if (rows > 1)
            fprintf(out, " over %zu rows, %s the most", rows, vt_format_bytes(most, b, sizeof b));
    }
    if (all.unmeasured)
        fprintf(out, "%s%u context%s cost not measured, not counted", all.bytes ? "; " : " ",
                all.unmeasured, all.unmeasured == 1 ? "'s" : "s'");
    fputc('\n', out);
}

static void table(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    fprintf(out, "  %6s %6s  %-12s %6s  %-12s %12s %12s %5s %8s\n", "rank", "local", "host",
            "device", "GPU", "peak", "capacity", "OOMs", "pid");
    size_t rows = 0, hidden = 0, idle = 0;
    for (size_t o = 0; o < v->nprocesses; o++) {
        const struct vt_jv_process *p = &v->processes[f->order[o]];
        char r1[24], r2[24], g[32], b1[32], b2[32];
        idle += !p->ndevices;
        for (size_t k = 0; k < p->ndevices; k++) {
            const struct vt_jv_device *d = &p->devices[k];
            if (rows == JOB_ROWS_MAX) {
                hidden++;
                continue;
            }
            rows++;
            fprintf(out, "  %6s %6s  %-12.12s %6" PRId64 "  %-12s %12s %12s %5" PRIu64 " %8" PRIu64 "\n",
                    vt_format_rank(p->rank, r1, sizeof r1), vt_format_rank(p->local_rank, r2, sizeof r2),
                    p->host && *p->host ? p->host : "?", d->device,
                    vt_jv_gpu_short(&d->gpu, g, sizeof g),
                    vt_format_bytes(d->peak_bytes, b1, sizeof b1),
                    d->capacity_bytes ? vt_format_bytes(d->capacity_bytes, b2, sizeof b2) : "-",
                    d->failed_requests, p->pid);
        }
    }
    if (hidden)
        fprintf(out, "  ... %zu more (rank, GPU) rows: --rank N shows one rank\n", hidden);
    peaks_contexts(v, f, out);
    if (idle)
        fprintf(out, "  %zu process%s without device memory (launchers, agents)\n",
                idle, idle == 1 ? "" : "es");
}

static void first_failure(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    const struct vt_jv_failure *x = &v->failures[f->failures[0]];
    char w[64], b[32], g[32], at[32];
    fprintf(out, "  first failure: %s, at %s: %s of %s failed on device %" PRId64 " (%s): %s\n",
            who(&v->processes[x->process], w, sizeof w),
            vt_format_seconds((int64_t)x->since_start_ns, at, sizeof at),
            x->api ? x->api : "allocation", vt_format_bytes(x->requested_bytes, b, sizeof b),
            x->device, vt_jv_gpu_short(&x->gpu, g, sizeof g), x->verdict ? x->verdict : "unknown");
    if (x->user_frame) {
        fputs("    in ", out);
        vt_terminal_put(out, x->user_frame);
        fputc('\n', out);
    }
    vt_job_foreign_failure_text(v, f->order, x, out);
    if (v->nfailures < 2)
        return;
    fputs("    followed by:", out);
    for (size_t k = 1; k < v->nfailures && k <= VT_JOB_FOLLOWERS_MAX; k++) {
        const struct vt_jv_failure *y = &v->failures[f->failures[k]];
        fprintf(out, "%s %s %s", k > 1 ? "," : "", who(&v->processes[y->process], w, sizeof w),
                vt_format_seconds((int64_t)(y->wall_ns - x->wall_ns), at, sizeof at));
    }
    if (v->nfailures - 1 > VT_JOB_FOLLOWERS_MAX)
        fprintf(out, ", and %zu more", v->nfailures - 1 - VT_JOB_FOLLOWERS_MAX);
    fputc('\n', out);
}

/* The processes whose phases grow across openings, in the overview's order
 * of processes (by rank): "rank 3, pid 41: forward +64.00 MiB per opening
 * from opening 2". */
#define VT_JOB_GROWTH_SHOWN 8
static void growth_text(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    size_t shown = 0, more = 0;
    char w[64], b[32];
    for (size_t k = 0; k < v->nprocesses; k++) {
        const struct vt_jv_process *p = &v->processes[f->order[k]];
        for (size_t m = 0; m < p->nphases; m++) {
            const struct vt_jv_phase *ph = &p->phases[m];
            if (!ph->growth_per_opening)
                continue;
            if (shown == VT_JOB_GROWTH_SHOWN) {
                more++;
                continue;
            }
            if (!shown++)
                fputs("  growing across openings (device bytes live at each closing):\n", out);
            fprintf(out, "    %s: ", who(p, w, sizeof w));
            vt_terminal_put(out, ph->name);
            fprintf(out, " +%s per opening from opening %" PRIu64 "\n",
                    vt_format_bytes(ph->growth_per_opening, b, sizeof b), ph->growth_from_opening);
        }
    }
    if (more)
        fprintf(out, "    ... and %zu more\n", more);
}

static void growth_json(const struct vt_job_view *v, const struct vt_job_figures *f,
                        struct vt_json *j)
{
    vt_json_key(j, "growth");
    vt_json_begin_array(j);
    for (size_t k = 0; k < v->nprocesses; k++) {
        const struct vt_jv_process *p = &v->processes[f->order[k]];
        for (size_t m = 0; m < p->nphases; m++) {
            const struct vt_jv_phase *ph = &p->phases[m];
            if (!ph->growth_per_opening)
                continue;
            vt_json_begin_object(j);
            vt_json_kv_uint(j, "pid", p->pid);
            vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
            vt_json_kv_string(j, "phase", ph->name);
            vt_json_kv_uint(j, "per_opening_bytes", ph->growth_per_opening);
            vt_json_kv_uint(j, "from_opening", ph->growth_from_opening);
            vt_json_end_object(j);
        }
    }
    vt_json_end_array(j);
}

/* Each rank's peak split into parts (ZeRO and FSDP shard parameters and
 * state: the split shows it), for the processes with a census. */
static void parts_text(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    bool header = false;
    char w[64], b[5][32];
    for (size_t k = 0; k < v->nprocesses; k++) {
        const struct vt_jv_process *p = &v->processes[f->order[k]];
        for (size_t m = 0; m < p->ndevices; m++) {
            const struct vt_jv_device *d = &p->devices[m];
            if (!d->parts_known)
                continue;
            if (!header) {
                fprintf(out, "  what each peak is made of (segment level):\n    %-24s %6s %12s "
                             "%12s %12s %12s %12s\n",
                        "", "device", "parameters", "gradients", "opt. state", "buffers",
                        "the rest");
                header = true;
            }
            uint64_t sum = 0;
            for (size_t q = 0; q < VT_PART_COUNT_ - 1; q++)
                sum += d->parts[q];
            fprintf(out, "    %-24s %6" PRId64 " %12s %12s %12s %12s %12s\n", who(p, w, sizeof w),
                    d->device, vt_format_bytes(d->parts[VT_PART_PARAMETER - 1], b[0], sizeof b[0]),
                    vt_format_bytes(d->parts[VT_PART_GRADIENT - 1], b[1], sizeof b[1]),
                    vt_format_bytes(d->parts[VT_PART_OPTIMIZER_STATE - 1], b[2], sizeof b[2]),
                    vt_format_bytes(d->parts[VT_PART_BUFFER - 1], b[3], sizeof b[3]),
                    vt_format_bytes(d->peak_bytes > sum ? d->peak_bytes - sum : 0, b[4],
                                    sizeof b[4]));
        }
    }
}

static void parts_json(const struct vt_job_view *v, const struct vt_job_figures *f,
                       struct vt_json *j)
{
    vt_json_key(j, "parts");
    vt_json_begin_array(j);
    for (size_t k = 0; k < v->nprocesses; k++) {
        const struct vt_jv_process *p = &v->processes[f->order[k]];
        for (size_t m = 0; m < p->ndevices; m++) {
            const struct vt_jv_device *d = &p->devices[m];
            if (!d->parts_known)
                continue;
            vt_json_begin_object(j);
            vt_json_kv_uint(j, "pid", p->pid);
            vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
            vt_json_kv_int(j, "device", d->device);
            vt_json_kv_uint(j, "peak_bytes", d->peak_bytes);
            vt_jv_contexts_json(j, d);
            vt_jv_parts_json(j, d);
            vt_json_end_object(j);
        }
    }
    vt_json_end_array(j);
}

/* "largest 9.50 GiB (rank 0, pid 3294), median 9.25 GiB, smallest ...;
 * spread 10.5% of the largest" */
static void spread(const struct vt_job_view *v, uint64_t largest, size_t largest_process,
                   uint64_t median, uint64_t smallest, size_t smallest_process, FILE *out)
{
    char b1[32], b2[32], b3[32], w1[64], w2[64];
    fprintf(out, "largest %s (%s), median %s, smallest %s (%s); spread %.1f%% of the largest\n",
            vt_format_bytes(largest, b1, sizeof b1),
            who(&v->processes[largest_process], w1, sizeof w1),
            vt_format_bytes(median, b2, sizeof b2), vt_format_bytes(smallest, b3, sizeof b3),
            who(&v->processes[smallest_process], w2, sizeof w2),
            largest ? 100.0 * (double)(largest - smallest) / (double)largest : 0.0);
}

void vt_job_view_text(const struct vt_job_view *v, bool filtered, FILE *out)
{
    struct vt_job_figures f;
    if (!vt_job_figures_of(v, &f))
        return;
    fprintf(out, "job: %zu process%s", f.processes, f.processes == 1 ? "" : "es");
    if (f.ranks)
        fprintf(out, ", %zu with a rank", f.ranks);
    if (f.world_size >= 0)
        fprintf(out, " (world size %ld)", f.world_size);
    fprintf(out, ", on %zu GPU%s of %zu host%s\n", f.gpus, f.gpus == 1 ? "" : "s", f.hosts,
            f.hosts == 1 ? "" : "s");
    if (f.world_size > 0 && f.ranks && f.ranks < (size_t)f.world_size && !filtered)
        fprintf(out, "  note: %zu of %ld ranks traced (the others wrote no trace here: no GPU use, "
                     "another node, or the tracer did not reach them)\n",
                f.ranks, f.world_size);
    table(v, &f, out);
    if (v->nfailures)
        first_failure(v, &f, out);
    else
        fputs("  no allocation failed\n", out);
    if (f.holders > 1) {
        fprintf(out, "  device peaks across %zu processes: ", f.holders);
        spread(v, f.largest, f.largest_process, f.median, f.smallest, f.smallest_process, out);
    }
    size_t shown = 0;
    for (size_t k = 0; k < f.nphases; k++) {
        const struct vt_job_phase_figure *ph = &f.phases[k];
        if (ph->processes < 2)
            continue;
        if (!shown++)
            fputs("  phase peaks across processes:\n", out);
        fputs("    ", out);
        vt_terminal_put(out, ph->name);
        fprintf(out, " (%zu): ", ph->processes);
        spread(v, ph->largest, ph->largest_process, ph->median, ph->smallest, ph->smallest_process,
               out);
    }
    if (f.more_phases && shown)
        fprintf(out, "    ... and %zu more phase names\n", f.more_phases);
    growth_text(v, &f, out);
    vt_divergence_text(v, &f, out);
    parts_text(v, &f, out);
    vt_job_foreign_text(v, f.order, out);
    fputc('\n', out);
    vt_job_figures_free(&f);
}

void vt_job_overview_text(struct vt_report *rep, FILE *out, size_t job)
{
    struct vt_job_view v;
    if (!vt_job_view_of_traces(rep, job, NULL, &v))
        return;
    vt_job_view_text(&v, rep->opt->select.has_rank || rep->opt->select.has_pid || rep->opt->select.has_device, out);
    vt_job_view_free(&v);
}

/* ---- JSON ---- */

static void failure_json(const struct vt_job_view *v, const struct vt_jv_failure *x,
                         struct vt_json *j)
{
    const struct vt_jv_process *p = &v->processes[x->process];
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "pid", p->pid);
    vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
    vt_json_kv_int(j, "device", x->device);
    vt_json_kv_uint(j, "time_ns", x->time_ns);
    vt_json_kv_uint(j, "wall_ns", x->wall_ns);
    vt_json_kv_uint(j, "requested_bytes", x->requested_bytes);
    vt_json_kv_string(j, "verdict", x->verdict ? x->verdict : "unknown");
    vt_json_kv_string(j, "api", x->api);
    vt_json_kv_string(j, "user_frame", x->user_frame);
    vt_json_end_object(j);
}

static void peaks_json(const struct vt_job_view *v, struct vt_json *j, size_t n, uint64_t largest,
                       size_t largest_process, uint64_t median, uint64_t smallest,
                       size_t smallest_process)
{
    vt_json_kv_uint(j, "processes", n);
    vt_json_kv_uint(j, "largest_bytes", largest);
    vt_json_kv_uint(j, "largest_pid", v->processes[largest_process].pid);
    long rank = v->processes[largest_process].rank;
    vt_json_kv_int_or_null(j, "largest_rank", rank >= 0, rank);
    vt_json_kv_uint(j, "median_bytes", median);
    vt_json_kv_uint(j, "smallest_bytes", smallest);
    vt_json_kv_uint(j, "smallest_pid", v->processes[smallest_process].pid);
    rank = v->processes[smallest_process].rank;
    vt_json_kv_int_or_null(j, "smallest_rank", rank >= 0, rank);
}

void vt_job_session_json(const struct vt_job_view *v, struct vt_json *j)
{
    vt_json_kv_string(j, "session", v->session);
    vt_json_kv_uint_or_null(j, "session_start_unix_ns", v->has_session_start,
                            v->session_start_unix_ns);
    vt_json_kv_string(j, "session_host", v->session_host);
    vt_json_kv_string(j, "session_command", v->session_command);
}

static void job_json(const struct vt_job_view *v, struct vt_json *j)
{
    struct vt_job_figures f;
    if (!vt_job_figures_of(v, &f))
        return;
    vt_json_begin_object(j);
    vt_job_session_json(v, j);
    vt_json_kv_uint(j, "processes", f.processes);
    vt_json_kv_uint(j, "ranks", f.ranks);
    vt_json_kv_int_or_null(j, "world_size", f.world_size >= 0, f.world_size);
    vt_json_kv_uint(j, "hosts", f.hosts);
    vt_json_kv_uint(j, "gpus", f.gpus);
    vt_json_key(j, "first_failure");
    if (v->nfailures)
        failure_json(v, &v->failures[f.failures[0]], j);
    else
        vt_json_null(j);
    vt_json_key(j, "following_failures");
    vt_json_begin_array(j);
    for (size_t k = 1; k < v->nfailures && k <= VT_JOB_FOLLOWERS_MAX; k++)
        failure_json(v, &v->failures[f.failures[k]], j);
    vt_json_end_array(j);
    vt_json_key(j, "device_peaks");
    if (f.holders) {
        vt_json_begin_object(j);
        peaks_json(v, j, f.holders, f.largest, f.largest_process, f.median, f.smallest,
                   f.smallest_process);
        vt_json_end_object(j);
    } else {
        vt_json_null(j);
    }
    vt_json_key(j, "phase_peaks");
    vt_json_begin_array(j);
    for (size_t k = 0; k < f.nphases; k++) {
        const struct vt_job_phase_figure *ph = &f.phases[k];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", ph->name);
        peaks_json(v, j, ph->processes, ph->largest, ph->largest_process, ph->median,
                   ph->smallest, ph->smallest_process);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    growth_json(v, &f, j);
    vt_divergence_json(v, &f, j);
    parts_json(v, &f, j);
    vt_job_foreign_json(v, f.order, j);
    vt_json_key(j, "timeline");
    if (v->has_timelines) {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "resolution_ns", v->resolution_ns);
        vt_json_kv_uint(j, "first_column", f.first_column);
        vt_json_key(j, "largest_process_bytes");
        vt_json_begin_array(j);
        for (size_t c = 0; c < f.ncolumns; c++)
            vt_json_uint(j, f.column_max[c]);
        vt_json_end_array(j);
        vt_json_end_object(j);
    } else {
        vt_json_null(j);
    }
    vt_json_end_object(j);
    vt_job_figures_free(&f);
}

void vt_job_views_json(struct vt_job_view *const *views, size_t n, struct vt_json *j)
{
    vt_json_key(j, "jobs");
    vt_json_begin_array(j);
    for (size_t k = 0; k < n; k++)
        if (views[k]->nprocesses)
            job_json(views[k], j);
    vt_json_end_array(j);
}

void vt_jobs_json(struct vt_report *rep, struct vt_json *j)
{
    vt_json_key(j, "jobs");
    vt_json_begin_array(j);
    for (size_t k = 0; rep && k < rep->a->njobs; k++) {
        if (rep->job_views) {
            if (rep->job_views[k].nprocesses)
                job_json(&rep->job_views[k], j);
            continue;
        }
        struct vt_job_view v;
        if (!vt_job_view_of_traces(rep, k, rep->timelines, &v))
            continue;
        if (v.nprocesses)
            job_json(&v, j);
        vt_job_view_free(&v);
    }
    vt_json_end_array(j);
}
