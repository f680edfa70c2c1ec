/*
 * The job: what a report over the traces of many ranks says first (see
 * report.h, "the job"). A job is the traces of one session (analysis.h);
 * its overview is the ranks x GPUs table, the failure that came first in
 * time and the ones that followed it (a collective timing out on every
 * other rank), and the spread of the ranks' device peaks.
 */
#define _GNU_SOURCE /* qsort_r */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "report.h"

/* Past this many (rank, GPU) rows the table shows the first ones by rank
 * and says how many more (--rank N shows one). */
#define JOB_ROWS_MAX 32

static const struct vt_process_info *proc(const struct vt_report *rep, size_t i)
{
    return vt_reader_process(rep->a->inputs[i].reader);
}

static bool in_job(const struct vt_report *rep, size_t job, size_t i)
{
    return rep->a->inputs[i].job == job && vt_report_input_selected(rep, i);
}

/* A process's time as Unix epoch ns: monotonic times of different hosts
 * do not compare, their wall clocks (roughly) do. */
static uint64_t wall_ns(const struct vt_process_info *p, uint64_t mono_ns)
{
    if (!p || !p->start_realtime_ns)
        return mono_ns;
    return mono_ns - p->start_mono_ns + p->start_realtime_ns;
}

/* The largest device peak of a process, false if it held no device memory. */
static bool device_peak(const struct vt_report *rep, size_t i, uint64_t *peak)
{
    const struct vt_replay *rp = &rep->a->inputs[i].replay;
    bool any = false;
    *peak = 0;
    for (size_t k = 0; k < rp->nledgers; k++) {
        const struct vt_ledger *l = &rp->ledgers[k];
        if (l->category != VT_CAT_DEVICE || !vt_report_ledger_selected(rep, l))
            continue;
        any = true;
        if (l->peak.peak_bytes > *peak)
            *peak = l->peak.peak_bytes;
    }
    return any;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

static int cmp_failure(const void *x, const void *y)
{
    const struct vt_job_failure *a = x, *b = y;
    return a->wall_ns < b->wall_ns ? -1 : a->wall_ns > b->wall_ns;
}

bool vt_job_summarize(const struct vt_report *rep, size_t job, struct vt_job_summary *s)
{
    const struct vt_analysis *a = rep->a;
    memset(s, 0, sizeof *s);
    s->job = job;
    s->world_size = -1;
    uint64_t *peaks = calloc(a->ninputs + 1, sizeof *peaks);
    struct vt_job_failure *fails = NULL;
    size_t nfails = 0, fcap = 0;
    const char **hosts = calloc(a->ninputs + 1, sizeof *hosts);
    bool ok = peaks && hosts;
    for (size_t i = 0; ok && i < a->ninputs; i++) {
        if (!in_job(rep, job, i))
            continue;
        const struct vt_process_info *p = proc(rep, i);
        s->processes++;
        if (vt_report_rank(rep, i) >= 0)
            s->ranks++;
        long w = vt_process_world_size(p);
        if (w > s->world_size)
            s->world_size = w;
        const char *h = p && p->hostname ? p->hostname : "";
        size_t k = 0;
        while (k < s->hosts && strcmp(hosts[k], h))
            k++;
        if (k == s->hosts)
            hosts[s->hosts++] = h;
        uint64_t peak;
        if (device_peak(rep, i, &peak)) {
            if (!s->holders || peak > s->largest) {
                s->largest = peak;
                s->largest_input = i;
            }
            if (!s->holders || peak < s->smallest) {
                s->smallest = peak;
                s->smallest_input = i;
            }
            peaks[s->holders++] = peak;
        }
        const struct vt_replay *rp = &a->inputs[i].replay;
        for (size_t l = 0; l < rp->nledgers; l++) {
            const struct vt_ledger *led = &rp->ledgers[l];
            if (led->category != VT_CAT_DEVICE || !vt_report_ledger_selected(rep, led))
                continue;
            for (size_t m = 0, end; m < led->nooms; m = end) {
                end = vt_oom_request_end(led, m);
                if (!vt_oom_request_failed(led, m))
                    continue;
                if (!vt_grow_array((void **)&fails, &fcap, nfails + 1, sizeof *fails)) {
                    ok = false;
                    break;
                }
                fails[nfails++] = (struct vt_job_failure){i, led, m,
                                                          wall_ns(p, led->ooms[m].time_ns)};
            }
        }
    }
    for (size_t g = 0; ok && g < a->ngpus; g++) {
        const struct vt_gpu *gp = &a->gpus[g];
        for (size_t i = 0; i < a->ninputs; i++)
            if (gp->job == job && gp->proc_used[i] && in_job(rep, job, i)) {
                s->gpus++;
                break;
            }
    }
    if (ok && s->holders) {
        qsort(peaks, s->holders, sizeof *peaks, cmp_u64);
        s->median = s->holders % 2 ? peaks[s->holders / 2]
                                   : peaks[s->holders / 2 - 1] / 2 + peaks[s->holders / 2] / 2 +
                                         (peaks[s->holders / 2 - 1] % 2 + peaks[s->holders / 2] % 2) / 2;
    }
    if (ok && nfails) {
        qsort(fails, nfails, sizeof *fails, cmp_failure);
        s->has_failure = true;
        s->first = fails[0];
        for (size_t f = 1; f < nfails; f++) {
            if (s->nfollowing < VT_JOB_FOLLOWERS_MAX)
                s->following[s->nfollowing++] = fails[f];
            else
                s->more_following++;
        }
    }
    free(peaks);
    free(hosts);
    free(fails);
    return ok;
}

bool vt_job_worth_overview(const struct vt_report *rep, size_t job)
{
    size_t n = 0;
    for (size_t i = 0; i < rep->a->ninputs; i++)
        if (in_job(rep, job, i) && (++n > 1 || vt_report_rank(rep, i) >= 0))
            return true;
    return false;
}

static const char *rank_text(long rank, char *buf, size_t n)
{
    if (rank < 0)
        return "-";
    snprintf(buf, n, "%ld", rank);
    return buf;
}

/* "rank 3, pid 4242", or "pid 4242" without a rank. */
static const char *who(const struct vt_report *rep, size_t i, char *buf, size_t n)
{
    const struct vt_process_info *p = proc(rep, i);
    long rank = vt_report_rank(rep, i);
    if (rank >= 0)
        snprintf(buf, n, "rank %ld, pid %" PRIu64, rank, p ? p->pid : 0);
    else
        snprintf(buf, n, "pid %" PRIu64, p ? p->pid : 0);
    return buf;
}

static int by_rank(const void *x, const void *y, void *ctx)
{
    const struct vt_report *rep = ctx;
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    long ra = vt_report_rank(rep, a), rb = vt_report_rank(rep, b);
    if (ra != rb)
        return ra < 0 ? 1 : rb < 0 ? -1 : ra < rb ? -1 : 1;
    return a < b ? -1 : a > b;
}

/* The GPU's short name: the first 8 hex digits of its UUID ("GPU-1a2b3c4d"). */
static const char *gpu_short(const struct vt_gpu *gp, char *buf, size_t n)
{
    if (!gp || !gp->has_uuid)
        return "?";
    snprintf(buf, n, "GPU-%02x%02x%02x%02x", gp->uuid[0], gp->uuid[1], gp->uuid[2], gp->uuid[3]);
    return buf;
}

static void table(struct vt_report *rep, FILE *out, size_t job)
{
    const struct vt_analysis *a = rep->a;
    size_t *order = calloc(a->ninputs + 1, sizeof *order), n = 0;
    if (!order)
        return;
    for (size_t i = 0; i < a->ninputs; i++)
        if (in_job(rep, job, i))
            order[n++] = i;
    qsort_r(order, n, sizeof *order, by_rank, rep);
    fprintf(out, "  %6s %6s  %-12s %6s  %-12s %12s %12s %5s %8s\n", "rank", "local", "host",
            "device", "GPU", "peak", "capacity", "OOMs", "pid");
    size_t rows = 0, hidden = 0, idle = 0;
    for (size_t o = 0; o < n; o++) {
        size_t i = order[o];
        const struct vt_process_info *p = proc(rep, i);
        const struct vt_replay *rp = &a->inputs[i].replay;
        char r1[24], r2[24], g[32], b1[32], b2[32];
        bool any = false;
        for (size_t k = 0; k < rp->nledgers; k++) {
            const struct vt_ledger *l = &rp->ledgers[k];
            if (l->category != VT_CAT_DEVICE || !vt_report_ledger_selected(rep, l))
                continue;
            any = true;
            if (rows == JOB_ROWS_MAX) {
                hidden++;
                continue;
            }
            rows++;
            const struct vt_gpu *gp = vt_analysis_gpu_of(a, i, l->device);
            const struct vt_device_info *dev =
                l->device >= 0 ? vt_reader_device(a->inputs[i].reader, (uint64_t)l->device) : NULL;
            fprintf(out, "  %6s %6s  %-12.12s %6" PRId64 "  %-12s %12s %12s %5zu %8" PRIu64 "\n",
                    rank_text(vt_report_rank(rep, i), r1, sizeof r1),
                    rank_text(vt_report_local_rank(rep, i), r2, sizeof r2),
                    p && p->hostname ? p->hostname : "?", l->device, gpu_short(gp, g, sizeof g),
                    vt_format_bytes(l->peak.peak_bytes, b1, sizeof b1),
                    dev && dev->total_bytes ? vt_format_bytes(dev->total_bytes, b2, sizeof b2) : "-",
                    vt_ledger_failed_requests(l), p ? p->pid : 0);
        }
        idle += !any;
    }
    if (hidden)
        fprintf(out, "  ... %zu more (rank, GPU) rows: --rank N shows one rank\n", hidden);
    if (idle)
        fprintf(out, "  %zu process%s without device memory (launchers, agents): in the details below\n",
                idle, idle == 1 ? "" : "es");
    free(order);
}

static void print_failure(struct vt_report *rep, FILE *out, const struct vt_job_failure *f)
{
    const struct vt_oom *o = &f->ledger->ooms[f->oom];
    const struct vt_analysis *a = rep->a;
    char w[64], b[32], t[32], g[32];
    const char *api = vt_reader_api(a->inputs[f->input].reader, o->label ? o->label : o->api);
    fprintf(out, "  first failure: %s, at %s: %s of %s failed on device %" PRId64 " (%s): %s\n",
            who(rep, f->input, w, sizeof w),
            vt_format_reltime(rep, f->input, o->time_ns, t, sizeof t), api ? api : "allocation",
            vt_format_bytes(o->requested_bytes, b, sizeof b), o->device,
            gpu_short(vt_analysis_gpu_of(a, f->input, o->device), g, sizeof g),
            vt_verdict_name(o->verdict));
}

void vt_job_overview_text(struct vt_report *rep, FILE *out, size_t job)
{
    struct vt_job_summary s;
    if (!vt_job_summarize(rep, job, &s))
        return;
    const struct vt_analysis *a = rep->a;
    char b1[32], b2[32], b3[32], w1[64], w2[64];
    fprintf(out, "job: %zu process%s", s.processes, s.processes == 1 ? "" : "es");
    if (s.ranks)
        fprintf(out, ", %zu with a rank", s.ranks);
    if (s.world_size >= 0)
        fprintf(out, " (world size %ld)", s.world_size);
    fprintf(out, ", on %zu GPU%s of %zu host%s\n", s.gpus, s.gpus == 1 ? "" : "s", s.hosts,
            s.hosts == 1 ? "" : "s");
    if (s.world_size > 0 && s.ranks && s.ranks < (size_t)s.world_size && !rep->opt->has_rank &&
        !rep->opt->has_pid)
        fprintf(out, "  note: %zu of %ld ranks traced (the others wrote no trace here: no GPU use, "
                     "another node, or the tracer did not reach them)\n",
                s.ranks, s.world_size);
    table(rep, out, job);
    if (s.has_failure) {
        print_failure(rep, out, &s.first);
        if (s.nfollowing) {
            fputs("    followed by:", out);
            for (size_t f = 0; f < s.nfollowing; f++)
                fprintf(out, "%s %s +%.3fs", f ? "," : "", who(rep, s.following[f].input, w1, sizeof w1),
                        (double)(s.following[f].wall_ns - s.first.wall_ns) / 1e9);
            if (s.more_following)
                fprintf(out, ", and %zu more", s.more_following);
            fputc('\n', out);
        }
    } else {
        fputs("  no allocation failed\n", out);
    }
    if (s.holders > 1)
        fprintf(out, "  device peaks across %zu processes: largest %s (%s), median %s, smallest %s "
                     "(%s); spread %.1f%% of the largest\n",
                s.holders, vt_format_bytes(s.largest, b1, sizeof b1),
                who(rep, s.largest_input, w1, sizeof w1), vt_format_bytes(s.median, b2, sizeof b2),
                vt_format_bytes(s.smallest, b3, sizeof b3), who(rep, s.smallest_input, w2, sizeof w2),
                s.largest ? 100.0 * (double)(s.largest - s.smallest) / (double)s.largest : 0.0);
    (void)a;
    fputc('\n', out);
}

static void failure_json(struct vt_report *rep, struct vt_json *j, const struct vt_job_failure *f)
{
    const struct vt_process_info *p = proc(rep, f->input);
    const struct vt_oom *o = &f->ledger->ooms[f->oom];
    vt_json_begin_object(j);
    vt_json_kv_uint_or_null(j, "pid", p, p ? p->pid : 0);
    vt_json_key(j, "rank");
    long rank = vt_report_rank(rep, f->input);
    if (rank >= 0)
        vt_json_int(j, rank);
    else
        vt_json_null(j);
    vt_json_kv_int(j, "device", o->device);
    vt_json_kv_uint(j, "time_ns", o->time_ns);
    vt_json_kv_uint(j, "wall_ns", f->wall_ns);
    vt_json_kv_uint(j, "requested_bytes", o->requested_bytes);
    vt_json_kv_string(j, "verdict", vt_verdict_name(o->verdict));
    vt_json_end_object(j);
}

void vt_jobs_json(struct vt_report *rep, struct vt_json *j)
{
    vt_json_key(j, "jobs");
    vt_json_begin_array(j);
    for (size_t k = 0; rep && k < rep->a->njobs; k++) {
        struct vt_job_summary s;
        if (!vt_job_summarize(rep, k, &s) || !s.processes)
            continue;
        const struct vt_job *job = &rep->a->jobs[k];
        const struct vt_process_info *p0 = NULL;
        for (size_t i = 0; i < rep->a->ninputs && !p0; i++)
            if (in_job(rep, k, i))
                p0 = proc(rep, i);
        vt_json_begin_object(j);
        vt_json_kv_string(j, "session", job->session);
        const char *start = vt_process_env(p0, "VRAMTRACE_SESSION_START");
        vt_json_kv_uint_or_null(j, "session_start_unix_ns", start, start ? strtoull(start, NULL, 10) : 0);
        vt_json_kv_string(j, "session_host", vt_process_env(p0, "VRAMTRACE_SESSION_HOST"));
        vt_json_kv_string(j, "session_command", vt_process_env(p0, "VRAMTRACE_SESSION_COMMAND"));
        vt_json_kv_uint(j, "processes", s.processes);
        vt_json_kv_uint(j, "ranks", s.ranks);
        vt_json_key(j, "world_size");
        if (s.world_size >= 0)
            vt_json_int(j, s.world_size);
        else
            vt_json_null(j);
        vt_json_kv_uint(j, "hosts", s.hosts);
        vt_json_kv_uint(j, "gpus", s.gpus);
        vt_json_key(j, "first_failure");
        if (s.has_failure)
            failure_json(rep, j, &s.first);
        else
            vt_json_null(j);
        vt_json_key(j, "following_failures");
        vt_json_begin_array(j);
        for (size_t f = 0; f < s.nfollowing; f++)
            failure_json(rep, j, &s.following[f]);
        vt_json_end_array(j);
        vt_json_key(j, "device_peaks");
        if (s.holders) {
            const struct vt_process_info *pl = proc(rep, s.largest_input),
                                        *ps = proc(rep, s.smallest_input);
            vt_json_begin_object(j);
            vt_json_kv_uint(j, "processes", s.holders);
            vt_json_kv_uint(j, "largest_bytes", s.largest);
            vt_json_kv_uint_or_null(j, "largest_pid", pl, pl ? pl->pid : 0);
            vt_json_kv_uint(j, "median_bytes", s.median);
            vt_json_kv_uint(j, "smallest_bytes", s.smallest);
            vt_json_kv_uint_or_null(j, "smallest_pid", ps, ps ? ps->pid : 0);
            vt_json_end_object(j);
        } else {
            vt_json_null(j);
        }
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}
