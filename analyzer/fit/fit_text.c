/* `vramtrace fit` for people: the answer first, then what sets it, the
 * peaks per phase on either side of it and the laws. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>

#include "format.h"

static const char *phase_name(const struct vt_fit_model *m, size_t slot)
{
    return slot < m->tpl->nphases ? m->tpl->phases[slot] : "(no phase)";
}

static const char *law_term(double c, const char *suffix, bool first, char *buf, size_t n)
{
    char b[32];
    uint64_t mag = (uint64_t)llround(fabs(c));
    snprintf(buf, n, "%s%s%s", first ? (c < 0 ? "-" : "") : (c < 0 ? " - " : " + "),
             vt_format_bytes(mag, b, sizeof b), suffix);
    return buf;
}

/* "12.00 MiB*batch^2 + 1.00 MiB*batch + 64.00 KiB" */
static void law_text(FILE *out, const struct vt_fit_law *l, const char *x)
{
    char s2[64], s1[64], buf[96];
    snprintf(s2, sizeof s2, "*%s^2", x);
    snprintf(s1, sizeof s1, "*%s", x);
    bool first = true;
    if (l->kind == VT_LAW_QUADRATIC && llround(l->c[2]) != 0) {
        fputs(law_term(l->c[2], s2, first, buf, sizeof buf), out);
        first = false;
    }
    if (l->kind >= VT_LAW_LINEAR && llround(l->c[1]) != 0) {
        fputs(law_term(l->c[1], s1, first, buf, sizeof buf), out);
        first = false;
    }
    if (first || llround(l->c[0]) != 0)
        fputs(law_term(l->c[0], "", first, buf, sizeof buf), out);
}

static const char *phase_of_alloc(const struct vt_fit_model *m, size_t alloc)
{
    uint32_t p = m->tpl->allocs[alloc].phase;
    return p == VT_FIT_NO_PHASE ? NULL : m->tpl->phases[p];
}

static void failure_line(FILE *out, const struct vt_fit_model *m, const struct vt_fit_eval *ev)
{
    char b1[32], b2[32];
    const char *phase = phase_of_alloc(m, ev->fail_alloc);
    fprintf(out, "  at %s=%lld %s fails: %s asks %s with %s in use%s\n", m->tpl->name,
            ev->value, phase ? phase : "(no phase)",
            m->groups[m->group_of[ev->fail_alloc]].shown,
            vt_format_bytes(ev->fail_request, b1, sizeof b1),
            vt_format_bytes(ev->fail_in_use, b2, sizeof b2),
            ev->fail_fragmented ? " (enough is free in the cache, not in one piece)" : "");
}

static void limit_line(FILE *out, const struct vt_fit_model *m, const struct vt_fit_answer *a)
{
    if (a->has_limit_group) {
        const struct vt_fit_group *g = &m->groups[a->limit_group];
        char b[32];
        fprintf(out, "  set by: %s's %s, %s at %s=%lld (%s)\n", g->phase ? g->phase : "(no phase)",
                g->shown, vt_format_bytes(a->limit_group_bytes, b, sizeof b), m->tpl->name,
                a->at_next.value, vt_fit_law_name(g->bytes.kind));
    }
    failure_line(out, m, &a->at_next);
}

static void phase_table(FILE *out, const struct vt_fit_model *m, const struct vt_fit_eval *a,
                        const struct vt_fit_eval *b)
{
    char h1[64], h2[64], b1[32], b2[32];
    snprintf(h1, sizeof h1, "%s=%lld", m->tpl->name, a->value);
    snprintf(h2, sizeof h2, "%s=%lld", m->tpl->name, b ? b->value : 0);
    fprintf(out, "  predicted peak per phase  %14s", h1);
    if (b)
        fprintf(out, "  %14s", h2);
    fputc('\n', out);
    for (size_t p = 0; p < a->nphase_peaks; p++) {
        if (!a->phase_peak[p] && (!b || !b->phase_peak[p]))
            continue;
        fprintf(out, "    %-24s %14s", phase_name(m, p),
                vt_format_bytes(a->phase_peak[p], b1, sizeof b1));
        if (b) {
            bool fails_here = !b->fits && (m->tpl->allocs[b->fail_alloc].phase == p ||
                                           (m->tpl->allocs[b->fail_alloc].phase ==
                                                VT_FIT_NO_PHASE &&
                                            p == m->tpl->nphases));
            fprintf(out, "  %14s%s", vt_format_bytes(b->phase_peak[p], b2, sizeof b2),
                    fails_here ? "  fails here" : "");
        }
        fputc('\n', out);
    }
}

static int by_bytes_desc(const void *x, const void *y)
{
    const uint64_t *a = x, *b = y; /* {bytes, group} */
    return (a[0] < b[0]) - (a[0] > b[0]);
}

static void laws(FILE *out, const struct vt_fit_model *m, long long at, size_t step)
{
    uint64_t *parts = calloc(m->ngroups + 1, sizeof *parts);
    uint64_t (*order)[2] = calloc(m->ngroups + 1, sizeof *order);
    if (!parts || !order) {
        free(parts), free(order);
        return;
    }
    vt_fit_parts_at(m, at, step, parts);
    for (size_t g = 0; g < m->ngroups; g++)
        order[g][0] = parts[g], order[g][1] = g;
    qsort(order, m->ngroups, sizeof *order, by_bytes_desc);
    fprintf(out, "laws, by what each site holds at the peak of %s=%lld:\n", m->tpl->name, at);
    char b[32];
    for (size_t k = 0; k < m->ngroups; k++) {
        const struct vt_fit_group *g = &m->groups[order[k][1]];
        if (!g->in_template)
            continue;
        fprintf(out, "  %10s  %-9s %s  [%s]  ", vt_format_bytes(order[k][0], b, sizeof b),
                vt_fit_law_name(g->bytes.kind), g->shown, g->phase ? g->phase : "no phase");
        law_text(out, &g->bytes, m->tpl->name);
        if (!g->per_alloc)
            fprintf(out, " (its count: %s)", vt_fit_law_name(g->count.kind));
        if (g->residual > 0)
            fprintf(out, " (residual %.1f%%)", g->residual * 100);
        if (g->runs_seen < m->nruns)
            fprintf(out, " (seen in %zu of %zu runs)", g->runs_seen, m->nruns);
        fputc('\n', out);
    }
    for (size_t g = 0; g < m->ngroups; g++)
        if (!m->groups[g].in_template)
            fprintf(out, "  not in the largest run, seen in %zu of %zu runs: %s [%s]\n",
                    m->groups[g].runs_seen, m->nruns, m->groups[g].shown,
                    m->groups[g].phase ? m->groups[g].phase : "no phase");
    free(parts), free(order);
}

static void header(FILE *out, const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                   const struct vt_fit_output *o)
{
    char b1[32], b2[32], b3[32];
    fprintf(out, "vramtrace fit: %s from %zu runs (", m->tpl->name, m->nruns);
    for (size_t r = 0; r < m->nruns; r++)
        fprintf(out, "%s%lld", r ? ", " : "", m->runs[r].value);
    fprintf(out, "), device %lld, %s\n", (long long)m->tpl->device,
            opt->model ? "through PyTorch's caching allocator's model"
                       : "on the ledger's rules (the bytes the program asked for)");
    if (o->capacity_given)
        fprintf(out, "  capacity %s (--capacity)\n", vt_format_bytes(opt->capacity, b1, sizeof b1));
    else if (m->tpl->has_free_at_context)
        fprintf(out, "  capacity %s: what the device had free once the process's first context "
                     "on it existed (of %s; --capacity to say otherwise)\n",
                vt_format_bytes(opt->capacity, b1, sizeof b1),
                vt_format_bytes(m->tpl->device_total, b2, sizeof b2));
    else
        fprintf(out, "  capacity %s: the device's %s less its contexts' %s%s\n",
                vt_format_bytes(opt->capacity, b1, sizeof b1),
                vt_format_bytes(m->tpl->device_total, b2, sizeof b2),
                vt_format_bytes(m->tpl->context_bytes, b3, sizeof b3),
                m->tpl->contexts_unmeasured ? " (a context was not measured: --capacity says "
                                              "what the process really had)"
                                            : "");
    if (opt->model) {
        char cfg[256];
        vt_alloc_config_format(&opt->cfg, cfg, sizeof cfg);
        fprintf(out, "  allocator settings: %s (--allocator %s%s)\n", cfg,
                o->allocator ? o->allocator : "recorded",
                m->tpl->torch_tensors ? "; traced with PYTORCH_NO_CUDA_MEMORY_CACHING=1" : "");
    } else if (m->tpl->caching_allocator) {
        fputs("  note: these are the segments of PyTorch's caching allocator, not its tensors;\n"
              "  trace with PYTORCH_NO_CUDA_MEMORY_CACHING=1 to fit the tensors through its model\n",
              out);
    }
}

void vt_fit_write_text(FILE *out, const struct vt_fit_model *m,
                       const struct vt_fit_replay_options *opt, const struct vt_fit_output *o,
                       const struct vt_fit_answer *a, const struct vt_fit_eval *at)
{
    header(out, m, opt, o);
    const char *x = m->tpl->name;
    if (at) {
        char b1[32], b2[32];
        fprintf(out, "at %s=%lld: predicted peak %s", x, at->value,
                vt_format_bytes(at->peak, b1, sizeof b1));
        if (opt->model)
            fprintf(out, " reserved (%s in tensors)",
                    vt_format_bytes(at->peak_allocated, b2, sizeof b2));
        fprintf(out, ", %s\n", at->fits ? "fits" : "does not fit");
        if (!at->fits)
            failure_line(out, m, at);
        phase_table(out, m, at, NULL);
        laws(out, m, at->value, at->peak_step);
        return;
    }
    if (a->unlimited) {
        fprintf(out, "every %s up to %lld fits: nothing that grows with it limits it\n", x,
                (long long)VT_FIT_VALUE_MAX);
        laws(out, m, m->tpl->value, m->tpl->nsteps);
        return;
    }
    if (a->max_fits == 0)
        fprintf(out, "not even %s=1 fits", x);
    else
        fprintf(out, "the largest %s that fits: %lld", x, a->max_fits);
    fprintf(out, " (confidence %s%s%s)\n", a->confidence, a->why[0] ? ": " : "", a->why);
    limit_line(out, m, a);
    phase_table(out, m, a->max_fits >= 1 ? &a->at_max : &a->at_next,
                a->max_fits >= 1 ? &a->at_next : NULL);
    const struct vt_fit_eval *ev = a->max_fits >= 1 ? &a->at_max : &a->at_next;
    laws(out, m, ev->value, ev->peak_step);
}
