/* A run synthesized at one value and replayed: see fit.h. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "caching_allocator.h"

/* Bytes never negative, whole, and rounded up: a law that predicts 1.2
 * bytes asks for 2. */
static uint64_t whole_bytes(double b)
{
    if (!(b > 0))
        return 0;
    if (b >= 1.8e19)
        return UINT64_MAX / 4;
    return (uint64_t)ceil(b - 1e-6);
}

/* How many copies of a template allocation the run at value makes, and
 * each one's size. A group whose count changed spreads its count over its
 * template allocations evenly: the j-th of n gets the copies between
 * floor(j c / n) and floor((j + 1) c / n), made and ended where it is. */
static void size_of(const struct vt_fit_model *m, size_t a, double v, uint64_t *copies,
                    uint64_t *size)
{
    const struct vt_fit_group *g = &m->groups[m->group_of[a]];
    if (g->per_alloc) {
        *copies = 1;
        *size = whole_bytes(vt_fit_law_at(&m->law[a], v));
        return;
    }
    uint64_t c = whole_bytes(vt_fit_law_at(&g->count, v));
    uint64_t n = g->template_count, j = m->ordinal[a];
    *copies = (j + 1) * c / n - j * c / n;
    double mean = vt_fit_law_at(&g->mean, v);
    double tpl = (double)m->tpl->allocs[a].size;
    *size = g->template_mean > 0 ? whole_bytes(tpl * mean / g->template_mean) : whole_bytes(tpl);
}

static size_t phase_slot(const struct vt_fit_model *m, size_t a)
{
    uint32_t p = m->tpl->allocs[a].phase;
    return p == VT_FIT_NO_PHASE ? m->tpl->nphases : p;
}

static bool start(const struct vt_fit_model *m, long long value, struct vt_fit_eval *ev)
{
    memset(ev, 0, sizeof *ev);
    ev->value = value;
    ev->fits = true;
    ev->nphase_peaks = m->tpl->nphases + 1;
    ev->phase_peak = calloc(ev->nphase_peaks, sizeof *ev->phase_peak);
    if (!ev->phase_peak)
        snprintf(ev->error, sizeof ev->error, "out of memory");
    return ev->phase_peak != NULL;
}

/* On the ledger's rules: live bytes, the sum of what is allocated. */
static bool eval_ledger(const struct vt_fit_model *m, uint64_t capacity, struct vt_fit_eval *ev)
{
    const struct vt_fit_run *t = m->tpl;
    uint64_t *bytes = malloc((t->nallocs + 1) * sizeof *bytes);
    if (!bytes) {
        snprintf(ev->error, sizeof ev->error, "out of memory");
        return false;
    }
    for (size_t a = 0; a < t->nallocs; a++) {
        uint64_t copies, size;
        size_of(m, a, (double)ev->value, &copies, &size);
        bytes[a] = copies * size;
    }
    uint64_t live = 0;
    for (size_t s = 0; s < t->nsteps; s++) {
        uint32_t a = t->steps[s].alloc & ~VT_FIT_ENDS;
        if (t->steps[s].alloc & VT_FIT_ENDS) {
            live -= bytes[a];
            continue;
        }
        live += bytes[a];
        if (capacity && live > capacity && ev->fits) {
            ev->fits = false;
            ev->fail_alloc = a;
            ev->fail_request = bytes[a];
            ev->fail_in_use = live - bytes[a];
            ev->peak_step = s;
        }
        size_t p = phase_slot(m, a);
        if (live > ev->phase_peak[p])
            ev->phase_peak[p] = live;
        if (live > ev->peak) {
            ev->peak = live;
            if (ev->fits)
                ev->peak_step = s;
        }
    }
    ev->peak_allocated = ev->peak;
    free(bytes);
    return true;
}

/* Through the caching allocator's model: reserved bytes, segments and
 * all, and a request fails as PyTorch's would (after its flush). */
static bool eval_model(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                       struct vt_fit_eval *ev)
{
    const struct vt_fit_run *t = m->tpl;
    size_t *first = malloc((t->nallocs + 1) * sizeof *first);
    uint64_t *size = malloc((t->nallocs + 1) * sizeof *size);
    size_t total = 0;
    bool ok = first && size;
    for (size_t a = 0; ok && a < t->nallocs; a++) {
        uint64_t copies;
        size_of(m, a, (double)ev->value, &copies, &size[a]);
        first[a] = total;
        total += copies;
    }
    if (ok)
        first[t->nallocs] = total;
    struct vt_cache_block **blocks = ok ? calloc(total + 1, sizeof *blocks) : NULL;
    struct vt_cache_model cm;
    if (!blocks || !vt_cache_init(&cm, &opt->cfg, opt->capacity)) {
        free(first), free(size), free(blocks);
        snprintf(ev->error, sizeof ev->error, "out of memory");
        return false;
    }
    for (size_t s = 0; s < t->nsteps && ev->fits; s++) {
        uint32_t a = t->steps[s].alloc & ~VT_FIT_ENDS;
        if (t->steps[s].alloc & VT_FIT_ENDS) {
            for (size_t k = first[a]; k < first[a + 1]; k++)
                if (blocks[k])
                    vt_cache_free(&cm, blocks[k]);
            continue;
        }
        for (size_t k = first[a]; k < first[a + 1] && ev->fits; k++) {
            if (size[a] == 0)
                continue;
            struct vt_cache_failure why;
            uint64_t in_use = cm.st.reserved;
            blocks[k] = vt_cache_malloc(&cm, size[a], 0, &why);
            if (!blocks[k]) {
                if (cm.error[0]) {
                    snprintf(ev->error, sizeof ev->error, "%s", cm.error);
                    break;
                }
                ev->fits = false;
                ev->fail_alloc = a;
                ev->fail_request = size[a];
                ev->fail_in_use = in_use;
                ev->fail_fragmented = why.free_cached >= why.rounded;
                ev->peak_step = s;
            }
        }
        size_t p = phase_slot(m, a);
        if (cm.st.reserved > ev->phase_peak[p])
            ev->phase_peak[p] = cm.st.reserved;
        if (cm.st.reserved > ev->peak) {
            ev->peak = cm.st.reserved;
            if (ev->fits)
                ev->peak_step = s;
        }
        if (cm.st.allocated > ev->peak_allocated)
            ev->peak_allocated = cm.st.allocated;
    }
    vt_cache_destroy(&cm);
    free(first), free(size), free(blocks);
    return ev->error[0] == 0;
}

bool vt_fit_eval_at(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                    long long value, struct vt_fit_eval *ev)
{
    if (!start(m, value, ev))
        return false;
    return opt->model ? eval_model(m, opt, ev) : eval_ledger(m, opt->capacity, ev);
}

void vt_fit_eval_free(struct vt_fit_eval *ev)
{
    free(ev->phase_peak);
    memset(ev, 0, sizeof *ev);
}

bool vt_fit_parts_at(const struct vt_fit_model *m, long long value, size_t step, uint64_t *out)
{
    const struct vt_fit_run *t = m->tpl;
    memset(out, 0, m->ngroups * sizeof *out);
    for (size_t s = 0; s <= step && s < t->nsteps; s++) {
        uint32_t a = t->steps[s].alloc & ~VT_FIT_ENDS;
        uint64_t copies, size;
        size_of(m, a, (double)value, &copies, &size);
        if (t->steps[s].alloc & VT_FIT_ENDS)
            out[m->group_of[a]] -= copies * size;
        else
            out[m->group_of[a]] += copies * size;
    }
    return true;
}
