/* Matching runs by call site and phase, and fitting each group's laws:
 * see fit.h. */
#include "fit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pair_map.h"

#define MAX_RUNS 64

static uint64_t hash_text(const char *a, const char *b)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *s = a; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ 0x1f) * 1099511628211ull;
    for (const char *s = b ? b : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | (b == NULL); /* no phase is not a phase named "" */
}

static bool same_phase(const char *a, const char *b)
{
    return a == b || (a && b && strcmp(a, b) == 0);
}

/* The group of (site key, phase): found by the text's hash, probing on
 * the rare collision. */
struct groups {
    struct vt_fit_group *v;
    size_t n, cap;
    struct vt_pair_map index;  /* (hash, probe) -> group */
};

static long group_of(struct groups *g, const struct vt_fit_site *site, const char *phase)
{
    uint64_t h = hash_text(site->key, phase), probe = 0;
    for (const uint64_t *idx; (idx = vt_pair_map_get(&g->index, h, probe)) != NULL; probe++)
        if (strcmp(g->v[*idx].key, site->key) == 0 && same_phase(g->v[*idx].phase, phase))
            return (long)*idx;
    if (g->n == g->cap) {
        size_t cap = g->cap ? g->cap * 2 : 64;
        void *p = realloc(g->v, cap * sizeof *g->v);
        if (!p)
            return -1;
        g->v = p, g->cap = cap;
    }
    if (!vt_pair_map_put(&g->index, h, probe, g->n))
        return -1;
    g->v[g->n] = (struct vt_fit_group){.key = site->key, .shown = site->shown, .phase = phase};
    return (long)g->n++;
}

static int by_value(const void *a, const void *b)
{
    const struct vt_fit_run *x = a, *y = b;
    return (x->value > y->value) - (x->value < y->value);
}

/* Each run's allocations by group: per run, the group of each
 * allocation, and per group its allocations in order (offsets into list). */
struct run_groups {
    uint32_t *group_of;   /* alloc -> group */
    size_t *start;        /* group -> first in list (ngroups + 1) */
    uint32_t *list;       /* alloc indexes grouped, in order */
};

static bool sort_by_group(struct run_groups *rg, const struct vt_fit_run *run, size_t ngroups)
{
    rg->start = calloc(ngroups + 2, sizeof *rg->start);
    rg->list = malloc((run->nallocs + 1) * sizeof *rg->list);
    if (!rg->start || !rg->list)
        return false;
    for (size_t i = 0; i < run->nallocs; i++)
        rg->start[rg->group_of[i] + 2]++;
    for (size_t g = 2; g < ngroups + 2; g++)
        rg->start[g] += rg->start[g - 1];
    for (size_t i = 0; i < run->nallocs; i++)
        rg->list[rg->start[rg->group_of[i] + 1]++] = (uint32_t)i;
    return true; /* start[g]..start[g + 1]: group g's */
}

static size_t count_in(const struct run_groups *rg, size_t g)
{
    return rg->start[g + 1] - rg->start[g];
}

static bool fit_group(struct vt_fit_model *m, struct run_groups *rg, size_t g)
{
    struct vt_fit_group *gr = &m->groups[g];
    double x[MAX_RUNS], bytes[MAX_RUNS], count[MAX_RUNS], mean[MAX_RUNS];
    size_t n = 0, tpl_count = count_in(&rg[m->nruns - 1], g);
    gr->per_alloc = true;
    for (size_t r = 0; r < m->nruns; r++) {
        size_t c = count_in(&rg[r], g);
        if (c == 0)
            continue;
        uint64_t sum = 0;
        for (size_t k = rg[r].start[g]; k < rg[r].start[g + 1]; k++)
            sum += m->runs[r].allocs[rg[r].list[k]].size;
        x[n] = (double)m->runs[r].value;
        bytes[n] = (double)sum;
        count[n] = (double)c;
        mean[n] = (double)sum / (double)c;
        gr->per_alloc &= c == tpl_count;
        n++;
    }
    gr->runs_seen = n;
    gr->in_template = tpl_count > 0;
    gr->template_count = tpl_count;
    vt_fit_law_fit(x, bytes, n, &gr->bytes);
    vt_fit_law_fit(x, count, n, &gr->count);
    vt_fit_law_fit(x, mean, n, &gr->mean);
    gr->residual = gr->bytes.residual;
    if (!gr->in_template)
        return true;
    gr->template_mean = mean[n - 1];
    if (!gr->per_alloc) {
        gr->residual = fmax(gr->residual, fmax(gr->count.residual, gr->mean.residual));
        return true;
    }
    /* The k-th allocation of the group in every run. */
    const struct run_groups *trg = &rg[m->nruns - 1];
    for (size_t k = 0; k < tpl_count; k++) {
        double y[MAX_RUNS];
        size_t j = 0;
        for (size_t r = 0; r < m->nruns; r++)
            if (count_in(&rg[r], g))
                y[j++] = (double)m->runs[r].allocs[rg[r].list[rg[r].start[g] + k]].size;
        uint32_t a = trg->list[trg->start[g] + k];
        vt_fit_law_fit(x, y, n, &m->law[a]);
        gr->residual = fmax(gr->residual, m->law[a].residual);
    }
    return true;
}

static int fail(char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s", what);
    return 2;
}

static int check_runs(struct vt_fit_run *runs, size_t nruns, char *err, size_t errlen)
{
    if (nruns < 2)
        return fail(err, errlen, "fit wants two or more runs that differ in one parameter");
    if (nruns > MAX_RUNS)
        return fail(err, errlen, "fit takes at most 64 runs");
    for (size_t r = 1; r < nruns; r++) {
        if (strcmp(runs[r].name, runs[0].name) != 0) {
            snprintf(err, errlen, "the runs name two parameters, %s and %s: fit varies one",
                     runs[0].name, runs[r].name);
            return 2;
        }
        if (runs[r].value == runs[r - 1].value) {
            snprintf(err, errlen, "two runs have %s=%lld: the runs must differ in %s",
                     runs[r].name, runs[r].value, runs[r].name);
            return 2;
        }
    }
    return 0;
}

/* Runs of other programs share no call site with the largest run. */
static int check_same_program(const struct vt_fit_model *m, struct run_groups *rg, char *err,
                              size_t errlen)
{
    for (size_t r = 0; r + 1 < m->nruns; r++) {
        bool shared = false;
        for (size_t g = 0; g < m->ngroups && !shared; g++)
            shared = count_in(&rg[r], g) && count_in(&rg[m->nruns - 1], g);
        if (!shared) {
            snprintf(err, errlen,
                     "%s=%lld (%s) and %s=%lld (%s) share no call site: not the same program",
                     m->runs[r].name, m->runs[r].value, m->runs[r].path, m->tpl->name,
                     m->tpl->value, m->tpl->path);
            return 2;
        }
    }
    return 0;
}

int vt_fit_model_build(struct vt_fit_model *m, struct vt_fit_run *runs, size_t nruns, char *err,
                       size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->runs = runs;
    m->nruns = nruns;
    qsort(runs, nruns, sizeof *runs, by_value);
    int rc = check_runs(runs, nruns, err, errlen);
    if (rc)
        return rc;
    m->tpl = &runs[nruns - 1];
    struct groups gs = {0};
    vt_pair_map_init(&gs.index);
    struct run_groups rg[MAX_RUNS] = {{0}};
    rc = fail(err, errlen, "out of memory");
    bool ok = true;
    /* The template's groups first: their numbers are its order. */
    for (size_t ri = nruns; ok && ri-- > 0;) {
        const struct vt_fit_run *run = &runs[ri];
        ok = (rg[ri].group_of = malloc((run->nallocs + 1) * sizeof *rg[ri].group_of)) != NULL;
        /* The run's (site, phase) pairs are few: their texts are looked
         * up once each. */
        struct vt_pair_map seen;
        vt_pair_map_init(&seen);
        for (size_t i = 0; ok && i < run->nallocs; i++) {
            const struct vt_fit_alloc *a = &run->allocs[i];
            const uint64_t *known = vt_pair_map_get(&seen, a->site, a->phase);
            long g = known ? (long)*known
                           : group_of(&gs, &run->sites[a->site],
                                      a->phase == VT_FIT_NO_PHASE ? NULL : run->phases[a->phase]);
            ok = g >= 0 && (known || vt_pair_map_put(&seen, a->site, a->phase, (uint64_t)g));
            rg[ri].group_of[i] = (uint32_t)g;
        }
        vt_pair_map_free(&seen);
    }
    m->groups = gs.v;
    m->ngroups = gs.n;
    for (size_t r = 0; ok && r < nruns; r++)
        ok = sort_by_group(&rg[r], &runs[r], m->ngroups);
    if (ok) {
        rc = check_same_program(m, rg, err, errlen);
        ok = rc == 0;
    }
    size_t nt = m->tpl->nallocs;
    if (ok) {
        m->group_of = rg[nruns - 1].group_of;
        rg[nruns - 1].group_of = NULL;
        m->ordinal = calloc(nt + 1, sizeof *m->ordinal);
        m->law = calloc(nt + 1, sizeof *m->law);
        ok = m->ordinal && m->law;
        if (!ok)
            rc = fail(err, errlen, "out of memory");
    }
    if (ok) {
        const struct run_groups *t = &rg[nruns - 1];
        for (size_t g = 0; g < m->ngroups; g++)
            for (size_t k = t->start[g]; k < t->start[g + 1]; k++)
                m->ordinal[t->list[k]] = (uint32_t)(k - t->start[g]);
        for (size_t g = 0; g < m->ngroups; g++)
            fit_group(m, rg, g);
        rc = 0;
    }
    for (size_t r = 0; r < nruns; r++) {
        free(rg[r].group_of);
        free(rg[r].start);
        free(rg[r].list);
    }
    vt_pair_map_free(&gs.index);
    return rc;
}

void vt_fit_model_free(struct vt_fit_model *m)
{
    for (size_t r = 0; r < m->nruns; r++)
        vt_fit_run_free(&m->runs[r]);
    free(m->groups);
    free(m->group_of);
    free(m->ordinal);
    free(m->law);
    memset(m, 0, sizeof *m);
}
