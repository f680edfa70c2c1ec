/* A job's view from its replayed traces; see job_view.h and report.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "divergence.h"
#include "growth_rule.h"
#include "input_tables.h"
#include "job_view.h"
#include "parts_split.h"
#include "peak_contexts.h"
#include "report.h"
#include "input_files.h"

static const struct vt_process_info *proc(const struct vt_report *rep, size_t i)
{
    return vt_input_process(&rep->a->inputs[i]);
}

/* A process's time as Unix epoch ns: monotonic times of different hosts
 * do not compare, their wall clocks (roughly) do. */
static uint64_t wall_ns(const struct vt_process_info *p, uint64_t mono_ns)
{
    if (!p || !p->start_realtime_ns)
        return mono_ns;
    return mono_ns - p->start_mono_ns + p->start_realtime_ns;
}

static char *copy(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The physical GPU behind one of the input's device ordinals. */
static struct vt_jv_gpu_id gpu_of(const struct vt_report *rep, size_t input, int64_t device)
{
    struct vt_jv_gpu_id g = {0};
    const struct vt_gpu *gp = vt_analysis_gpu_of(rep->a, input, device);
    if (gp && gp->has_uuid) {
        g.has_uuid = true;
        memcpy(g.uuid, gp->uuid, VT_UUID_SIZE);
    }
    return g;
}

/* Where a process's "since start" counts from at time_ns: its start, else
 * its first event. */
static uint64_t origin_of(const struct vt_process_info *p, const struct vt_replay *rp,
                          uint64_t time_ns)
{
    return p && p->start_mono_ns && p->start_mono_ns <= time_ns ? p->start_mono_ns
                                                                 : rp->first_time_ns;
}

/* ---- the view ---- */

struct frame_text {
    struct vt_jv_failure *f;
    bool failed;
};

static void add_frame(void *ctx, const struct vt_frame *fr)
{
    struct frame_text *c = ctx;
    char buf[512];
    if (fr->function && fr->file && fr->line)
        snprintf(buf, sizeof buf, "%s (%s:%" PRIu64 ")", fr->function, vt_path_base_name(fr->file),
                 (uint64_t)fr->line);
    else if (fr->function)
        snprintf(buf, sizeof buf, "%s", fr->function);
    else if (fr->module)
        snprintf(buf, sizeof buf, "%s+0x%" PRIx64, fr->module, fr->module_offset);
    else
        snprintf(buf, sizeof buf, "0x%" PRIx64, fr->ip);
    char *s = strdup(buf);
    if (!s) {
        c->failed = true;
        return;
    }
    c->f->frames[c->f->nframes++] = s;
}

static bool add_failures(struct vt_report *rep, struct vt_job_view *v, size_t input,
                         size_t process, const struct vt_ledger *l)
{
    const struct vt_process_info *p = proc(rep, input);
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    for (size_t m = 0, end; m < l->nooms; m = end) {
        end = vt_oom_request_end(l, m);
        if (!vt_oom_request_failed(l, m))
            continue;
        const struct vt_oom *o = &l->ooms[m];
        struct vt_jv_failure *f = vt_job_view_add_failure(v);
        if (!f)
            return false;
        f->process = process;
        f->device = o->device;
        f->gpu = gpu_of(rep, input, o->device);
        f->time_ns = o->time_ns;
        f->since_start_ns = (int64_t)(o->time_ns - origin_of(p, rp, o->time_ns));
        f->wall_ns = wall_ns(p, o->time_ns);
        f->api = copy(vt_input_api(&rep->a->inputs[input], o->label ? o->label : o->api));
        f->requested_bytes = o->requested_bytes;
        struct vt_verdict_told told;
        vt_report_verdict(rep, input, l, m, end, &told);
        f->verdict = copy(told.verdict);
        char buf[512];
        f->user_frame = copy(vt_report_user_frame(rep, input, o->stack, buf, sizeof buf));
        f->frames = calloc(VT_JOB_FRAMES_MAX, sizeof *f->frames);
        if (!f->verdict || !f->frames)
            return false;
        struct frame_text c = {f, false};
        vt_report_frames(rep, input, o->stack, VT_JOB_FRAMES_MAX, add_frame, &c);
        if (c.failed)
            return false;
    }
    return true;
}

/* A phase of one of the process's device ledgers: the largest peak and
 * the largest growth over its devices. */
static bool add_phase(struct vt_jv_process *p, const char *name, const struct vt_phase_peak *ph)
{
    struct vt_growth_result g;
    bool grows = vt_growth_of(&ph->growth, &g);
    struct vt_jv_phase *x = NULL;
    for (size_t k = 0; k < p->nphases && !x; k++)
        if (!strcmp(p->phases[k].name, name))
            x = &p->phases[k];
    if (!x) {
        struct vt_jv_phase *grown = realloc(p->phases, (p->nphases + 1) * sizeof *grown);
        if (!grown)
            return false;
        p->phases = grown;
        x = &p->phases[p->nphases];
        *x = (struct vt_jv_phase){.name = strdup(name)};
        if (!x->name)
            return false;
        p->nphases++;
    }
    if (ph->state.peak_bytes > x->peak_bytes)
        x->peak_bytes = ph->state.peak_bytes;
    if (grows && g.per_opening > x->growth_per_opening) {
        x->growth_per_opening = g.per_opening;
        x->growth_from_opening = g.from_opening;
    }
    return true;
}

/* PyTorch's allocator's growth a step (growth_rule.h) is its step phase's
 * growth in the job's views, summaries included: the one rule the
 * process's own report tells. */
/* The capacity of the device the allocator was sampled on (0: unknown). */
static uint64_t sampled_total(const struct vt_input *in)
{
    const struct vt_replay *rp = &in->replay;
    return rp->samples && rp->samples->device >= 0
               ? vt_input_device_total(in, rp->samples->device)
               : 0;
}

static void allocator_growth(struct vt_jv_process *p, const struct vt_input *in)
{
    const struct vt_replay *rp = &in->replay;
    struct vt_growth_told g;
    if (!vt_growth_told_of(rp, sampled_total(in), &g))
        return;
    for (size_t k = 0; k < p->nphases; k++)
        if (!strcmp(p->phases[k].name, g.step_phase) &&
            g.r.per_opening > p->phases[k].growth_per_opening) {
            p->phases[k].growth_per_opening = g.r.per_opening;
            p->phases[k].growth_from_opening = g.r.from_opening;
        }
}

/* The program's frame of the ledger's largest site at its peak. */
static char *peak_site(struct vt_report *rep, size_t input, const struct vt_ledger *l)
{
    const struct vt_peak_state *s = &l->peak;
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    size_t best = SIZE_MAX;
    for (size_t k = 0; k < s->cap && k < l->sites.nsites; k++)
        if (s->bytes[k] && (best == SIZE_MAX || s->bytes[k] > s->bytes[best]) &&
            !vt_contexts_site(rp, l->sites.sites[k].stack, l->sites.sites[k].thread))
            best = k;
    char buf[512];
    return best == SIZE_MAX ? NULL
                            : copy(vt_report_user_frame(rep, input, l->sites.sites[best].stack,
                                                        buf, sizeof buf));
}

/* The contexts the process made, with their cost and the frame that made
 * each (contexts.h). */
static bool add_contexts(struct vt_report *rep, struct vt_jv_process *p, size_t input)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    const struct vt_process_info *pi = proc(rep, input);
    if (!rp->ncontexts_made)
        return true;
    p->contexts = calloc(rp->ncontexts_made, sizeof *p->contexts);
    if (!p->contexts)
        return false;
    for (size_t k = 0; k < rp->ncontexts_made; k++) {
        const struct vt_context_made *m = &rp->contexts_made[k];
        struct vt_jv_context *c = &p->contexts[p->ncontexts++];
        c->device = m->device;
        c->gpu = gpu_of(rep, input, m->device);
        c->bytes = m->size;
        uint64_t origin = origin_of(pi, rp, m->begin_ns);
        c->begin_ns = (int64_t)(m->begin_ns - origin);
        c->end_ns = m->ended ? (int64_t)(m->end_ns - origin) : -1;
        char buf[512];
        c->site = copy(vt_report_user_frame(rep, input, m->stack, buf, sizeof buf));
        c->cost = copy(vt_context_cost_name(m->cost));
        if (!c->cost)
            return false;
    }
    return true;
}

struct site_source {
    struct vt_report *rep;
    size_t input;
};

static const char *site_name(void *ctx, uint64_t stack, char *buf, size_t n)
{
    struct site_source *s = ctx;
    return vt_report_user_frame(s->rep, s->input, stack, buf, n);
}

static bool add_process(struct vt_report *rep, struct vt_job_view *v, size_t i,
                        struct vt_job_timelines *timelines)
{
    const struct vt_analysis *a = rep->a;
    const struct vt_process_info *pi = proc(rep, i);
    const struct vt_replay *rp = &a->inputs[i].replay;
    struct vt_jv_process *p = vt_job_view_add_process(v);
    if (!p)
        return false;
    size_t index = v->nprocesses - 1;
    /* a symbolizer made only to name this rank's sites and contexts goes
     * once they are named: a job of a thousand ranks keeps none for each */
    bool had_symbols = rep->sym && rep->sym[i];
    p->pid = pi ? pi->pid : 0;
    p->rank = vt_report_rank(rep, i);
    p->local_rank = vt_report_local_rank(rep, i);
    p->world_size = vt_process_world_size(pi);
    p->host = strdup(pi && pi->hostname ? pi->hostname : "");
    char cmd[1024];
    p->command = strdup(vt_report_command(rep, i, cmd, sizeof cmd));
    p->devices = calloc(rp->nledgers + 1, sizeof *p->devices);
    if (!p->host || !p->command || !p->devices)
        return false;
    for (size_t k = 0; k < rp->nledgers; k++) {
        const struct vt_ledger *l = &rp->ledgers[k];
        if (l->category != VT_CAT_DEVICE || !vt_report_ledger_selected(rep, l))
            continue;
        struct vt_jv_device *d = &p->devices[p->ndevices++];
        d->device = l->device;
        d->gpu = gpu_of(rep, i, l->device);
        const struct vt_gpu *gp = vt_analysis_gpu_of(a, i, l->device);
        const struct vt_device_info *dev =
            l->device >= 0 ? vt_input_device(&a->inputs[i], (uint64_t)l->device) : NULL;
        d->capacity_bytes = dev ? dev->total_bytes : 0;
        d->gpu_name = copy(dev ? dev->name : gp ? gp->name : NULL);
        d->peak_bytes = l->peak.peak_bytes;
        struct vt_peak_contexts pc;
        if ((d->contexts_said = vt_peak_contexts_of(rp, l, &pc))) {
            d->contexts_bytes = pc.bytes;
            d->contexts_unmeasured = pc.unmeasured;
        }
        d->failed_requests = vt_ledger_failed_requests(l);
        struct vt_split split;
        vt_split_at_peak(rep, i, l, &split);
        d->parts_known = split.known;
        for (unsigned q = VT_PART_PARAMETER; q < VT_PART_COUNT_; q++)
            d->parts[q - 1] = split.known ? split.rows[vt_split_row_of_part(q)] : 0;
        d->site = peak_site(rep, i, l);
        for (size_t ph = 0; ph < l->nphases; ph++) {
            const char *name = vt_report_string(rep, i, l->phases[ph].name);
            if (name && !add_phase(p, name, &l->phases[ph]))
                return false;
        }
        if (!add_failures(rep, v, i, index, l))
            return false;
    }
    allocator_growth(p, &a->inputs[i]);
    p->visible_devices = copy(vt_process_env(pi, "CUDA_VISIBLE_DEVICES"));
    bool named = add_contexts(rep, p, i) &&
                 vt_jv_sites_of_replay(rp, sampled_total(&a->inputs[i]), site_name,
                                       &(struct site_source){rep, i}, p);
    if (rep->sym && !had_symbols) {
        vt_symbolizer_free(rep->sym[i]);
        rep->sym[i] = NULL;
    }
    if (!named)
        return false;
    if (rep->opt->select.has_device && !p->ndevices) {
        /* --device N: a process with nothing on N is not part of the view */
        vt_job_view_drop_last_process(v);
        return true;
    }
    if (timelines && i < timelines->n) {
        /* Moved, not copied: each job's view is built once (the HTML page
         * hands its views to the document's jobs[]: rep->job_views). */
        p->timeline = timelines->per_input[i];
        memset(&timelines->per_input[i], 0, sizeof timelines->per_input[i]);
    }
    return true;
}

bool vt_job_view_of_traces(struct vt_report *rep, size_t job, struct vt_job_timelines *timelines,
                           struct vt_job_view *v)
{
    const struct vt_analysis *a = rep->a;
    memset(v, 0, sizeof *v);
    v->resolution_ns = timelines ? timelines->resolution_ns : VT_SUMMARY_RESOLUTION_NS;
    v->has_timelines = timelines != NULL;
    const struct vt_process_info *p0 = NULL;
    bool ok = true;
    for (size_t i = 0; ok && i < a->ninputs; i++) {
        if (a->inputs[i].job != job || !vt_report_input_selected(rep, i))
            continue;
        if (!p0)
            p0 = proc(rep, i);
        ok = add_process(rep, v, i, timelines);
    }
    if (job < a->njobs && a->jobs[job].session)
        ok = ok && (v->session = strdup(a->jobs[job].session)) != NULL;
    const char *start = vt_process_env(p0, "VRAMTRACE_SESSION_START");
    if (start) {
        v->has_session_start = true;
        v->session_start_unix_ns = strtoull(start, NULL, 10);
    }
    v->session_host = copy(vt_process_env(p0, "VRAMTRACE_SESSION_HOST"));
    v->session_command = copy(vt_process_env(p0, "VRAMTRACE_SESSION_COMMAND"));
    if (!ok)
        vt_job_view_free(v);
    return ok;
}
