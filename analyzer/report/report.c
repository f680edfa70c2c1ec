/* Helpers shared by the text and JSON reports; see report.h. */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame_class.h"
#include "stack_where.h"

void vt_report_init(struct vt_report *rep, const struct vt_analysis *a,
                    const struct vt_report_options *opt)
{
    /* every job (the text report sets one_job job by job) */
    *rep = (struct vt_report){.a = a, .opt = opt};
    rep->sym = calloc(a->ninputs ? a->ninputs : 1, sizeof *rep->sym);
}

void vt_report_free(struct vt_report *rep)
{
    for (size_t i = 0; rep->sym && i < rep->a->ninputs; i++)
        vt_symbolizer_free(rep->sym[i]);
    free(rep->sym);
    rep->sym = NULL;
    if (rep->forget_torch)
        rep->forget_torch(rep);
}

bool vt_report_input_selected(const struct vt_report *rep, size_t input)
{
    if (rep->a->inputs[input].job == VT_NO_JOB) /* nothing read: named on stderr */
        return false;
    if (rep->one_job && rep->a->inputs[input].job != rep->job)
        return false;
    if (rep->opt->select.has_rank && vt_report_rank(rep, input) != (long)rep->opt->select.rank)
        return false;
    if (!rep->opt->select.has_pid)
        return true;
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    return p && p->pid == rep->opt->select.pid;
}

bool vt_report_input_detailed(const struct vt_report *rep, size_t input)
{
    return vt_report_input_selected(rep, input) && (!rep->detail || rep->detail[input]);
}

bool vt_report_ledger_selected(const struct vt_report *rep, const struct vt_ledger *l)
{
    return !rep->opt->select.has_device || l->device == rep->opt->select.device;
}

/* The input's symbolizer, made at its first use; NULL: addresses only. */
static struct vt_symbolizer *symbolizer_of(struct vt_report *rep, size_t input)
{
    if (rep->sym && !rep->sym[input])
        rep->sym[input] = vt_input_symbolizer_new(&rep->a->inputs[input], &rep->opt->sym);
    return rep->sym ? rep->sym[input] : NULL;
}

size_t vt_report_frames(struct vt_report *rep, size_t input, uint64_t stack, size_t max,
                        vt_frame_fn fn, void *ctx)
{
    struct vt_symbolizer *sym = symbolizer_of(rep, input);
    return vt_input_stack_frames(&rep->a->inputs[input], sym, stack, max, fn, ctx);
}

const char *vt_report_thread_name(const struct vt_report *rep, size_t input, uint64_t thread,
                                  char *buf, size_t n)
{
    const struct vt_thread_info *t = vt_input_thread(&rep->a->inputs[input], thread);
    if (t && t->name && t->name[0])
        return t->name;
    if (t)
        snprintf(buf, n, "tid %" PRIu64, t->os_tid);
    else
        snprintf(buf, n, "thread %" PRIu64, thread);
    return buf;
}

const char *vt_report_string(const struct vt_report *rep, size_t input, uint64_t id)
{
    return vt_input_string(&rep->a->inputs[input], id);
}

long vt_report_rank(const struct vt_report *rep, size_t input)
{
    return vt_process_rank(vt_input_process(&rep->a->inputs[input]));
}

long vt_report_local_rank(const struct vt_report *rep, size_t input)
{
    return vt_process_local_rank(vt_input_process(&rep->a->inputs[input]));
}

const char *vt_report_command(const struct vt_report *rep, size_t input, char *buf, size_t n)
{
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    buf[0] = '\0';
    if (!p)
        return buf;
    size_t used = 0;
    for (uint64_t i = 0; i < p->argc && used + 1 < n; i++) {
        int k = snprintf(buf + used, n - used, "%s%s", i ? " " : "", p->argv[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    if (!buf[0] && p->exe)
        snprintf(buf, n, "%s", p->exe);
    return buf;
}

const char *vt_format_reltime(const struct vt_report *rep, size_t input, uint64_t t, char *buf,
                              size_t n)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    /* Relative to the process start when known, else to its first event. */
    uint64_t origin = p && p->start_mono_ns && p->start_mono_ns <= t ? p->start_mono_ns
                                                                      : rp->first_time_ns;
    return vt_format_seconds(t >= origin ? (int64_t)(t - origin) : -(int64_t)(origin - t), buf, n);
}


size_t vt_report_stack_walk(void *src, vt_frame_fn fn, void *ctx)
{
    struct vt_report_stack *s = src;
    return vt_report_frames(s->rep, s->input, s->stack, 0, fn, ctx);
}

bool vt_report_may_have_python(struct vt_report *rep, size_t input)
{
    return vt_input_frames_may_be_python(&rep->a->inputs[input], symbolizer_of(rep, input));
}

const char *vt_report_user_frame(struct vt_report *rep, size_t input, uint64_t stack, char *buf,
                                 size_t n)
{
    /* a site is named by a frame with a function's name: a job of
     * thousands of ranks without symbols or Python walks no stack here */
    if (!vt_input_frames_may_be_named(&rep->a->inputs[input], symbolizer_of(rep, input)))
        return NULL;
    struct vt_report_stack s = {rep, input, stack};
    return vt_stack_site_frame(vt_report_stack_walk, &s, buf, n);
}

size_t vt_report_growth_rows(const struct vt_ledger *l, const struct vt_phase_peak *p,
                             struct vt_site_bytes *rows, size_t n)
{
    struct vt_growth_site sites[VT_REPORT_MAX_TOP];
    size_t m = vt_growth_sites(&p->growth, sites, n < VT_REPORT_MAX_TOP ? n : VT_REPORT_MAX_TOP);
    for (size_t k = 0; k < m; k++) {
        const struct vt_site *s = &l->sites.sites[sites[k].site];
        rows[k] = (struct vt_site_bytes){s->stack, s->thread, sites[k].per_opening, 0};
    }
    return m;
}

bool vt_report_wall_us(const struct vt_process_info *p, uint64_t mono_ns, int64_t *out)
{
    if (!p || !p->start_realtime_ns || !p->start_mono_ns)
        return false;
    *out = ((int64_t)p->start_realtime_ns + ((int64_t)mono_ns - (int64_t)p->start_mono_ns)) / 1000;
    return true;
}
