/* The largest value that fits, and how far to trust it: see fit.h. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A group's residual lowers the confidence when it holds at least this
 * share of the peak: a few bytes off no polynomial do not matter. */
#define MATTERS 0.01
#define RESIDUAL_LOW 0.01      /* a law off its points by 1% of its bytes */
#define EXTRAPOLATION_MEDIUM 4 /* the answer lies past 4x the largest value measured */

static bool fits(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                 long long v, struct vt_fit_answer *a, char *err, size_t errlen)
{
    struct vt_fit_eval ev;
    a->evaluations++;
    if (!vt_fit_eval_at(m, opt, v, &ev)) {
        snprintf(err, errlen, "%s", ev.error);
        vt_fit_eval_free(&ev);
        return false;
    }
    bool ok = ev.fits;
    vt_fit_eval_free(&ev);
    return ok;
}

static bool grows(const struct vt_fit_group *g)
{
    return g->bytes.kind != VT_LAW_CONSTANT || (!g->per_alloc && g->count.kind != VT_LAW_CONSTANT);
}

static void limit_group(const struct vt_fit_model *m, struct vt_fit_answer *a)
{
    uint64_t *parts = calloc(m->ngroups + 1, sizeof *parts);
    if (!parts)
        return;
    vt_fit_parts_at(m, a->at_next.value, a->at_next.peak_step, parts);
    for (size_t g = 0; g < m->ngroups; g++)
        if (grows(&m->groups[g]) && parts[g] > a->limit_group_bytes) {
            a->has_limit_group = true;
            a->limit_group = g;
            a->limit_group_bytes = parts[g];
        }
    free(parts);
}

static void confidence(const struct vt_fit_model *m, struct vt_fit_answer *a)
{
    const struct vt_fit_eval *ev = a->max_fits >= 1 ? &a->at_max : &a->at_next;
    uint64_t *parts = calloc(m->ngroups + 1, sizeof *parts);
    if (parts)
        vt_fit_parts_at(m, ev->value, ev->peak_step, parts);
    uint64_t peak = ev->peak ? ev->peak : 1;
    size_t partial = 0;
    a->residual = 0;
    for (size_t g = 0; g < m->ngroups; g++) {
        const struct vt_fit_group *gr = &m->groups[g];
        bool matters = !parts || (double)parts[g] >= MATTERS * (double)peak;
        if (!gr->in_template || !matters)
            continue;
        a->residual = fmax(a->residual, gr->residual);
        partial += gr->runs_seen < m->nruns;
    }
    free(parts);
    double largest = (double)m->tpl->value;
    a->extrapolation = largest > 0 && a->max_fits > 0 ? (double)a->max_fits / largest : 0;
    a->confidence = "high";
    a->why[0] = 0;
    if (a->residual > RESIDUAL_LOW) {
        a->confidence = "low";
        snprintf(a->why, sizeof a->why,
                 "a site's bytes follow no polynomial of the value (residual %.1f%%)",
                 a->residual * 100);
    } else if (a->extrapolation > EXTRAPOLATION_MEDIUM) {
        a->confidence = "medium";
        snprintf(a->why, sizeof a->why, "it extrapolates %.1fx past the largest run",
                 a->extrapolation);
    } else if (m->nruns == 2) {
        a->confidence = "medium";
        snprintf(a->why, sizeof a->why, "two runs show a line, not whether it curves");
    } else if (partial) {
        a->confidence = "medium";
        snprintf(a->why, sizeof a->why, "%zu site%s that matter%s seen in only some runs",
                 partial, partial == 1 ? "" : "s", partial == 1 ? "s is" : " are");
    }
}

bool vt_fit_search(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                   struct vt_fit_answer *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    err[0] = 0;
    /* lo fits (0: nothing known to), hi does not (or is the bound). */
    long long lo = 0, hi;
    if (!fits(m, opt, 1, a, err, errlen)) {
        if (err[0])
            return false;
        hi = 1;
    } else {
        lo = 1;
        hi = m->tpl->value > 1 ? m->tpl->value : 2;
        while (true) {
            bool ok = fits(m, opt, hi, a, err, errlen);
            if (err[0])
                return false;
            if (!ok)
                break;
            lo = hi;
            if (hi >= VT_FIT_VALUE_MAX) {
                a->unlimited = true;
                break;
            }
            hi = hi * 2 > VT_FIT_VALUE_MAX ? VT_FIT_VALUE_MAX : hi * 2;
        }
        while (!a->unlimited && hi - lo > 1) {
            long long mid = lo + (hi - lo) / 2;
            bool ok = fits(m, opt, mid, a, err, errlen);
            if (err[0])
                return false;
            if (ok)
                lo = mid;
            else
                hi = mid;
        }
    }
    a->max_fits = lo;
    bool ok = true;
    if (lo >= 1)
        ok = vt_fit_eval_at(m, opt, lo, &a->at_max);
    if (ok && !a->unlimited)
        ok = vt_fit_eval_at(m, opt, lo + 1, &a->at_next);
    if (!ok) {
        snprintf(err, errlen, "%s", a->at_max.error[0] ? a->at_max.error : a->at_next.error);
        return false;
    }
    if (!a->unlimited)
        limit_group(m, a);
    confidence(m, a);
    return true;
}

const char *vt_fit_traced(const struct vt_fit_model *m)
{
    if (m->tpl->torch_tensors)
        return "pytorch_tensors";
    return m->tpl->caching_allocator ? "pytorch_segments" : "allocations";
}

void vt_fit_answer_free(struct vt_fit_answer *a)
{
    vt_fit_eval_free(&a->at_max);
    vt_fit_eval_free(&a->at_next);
}
