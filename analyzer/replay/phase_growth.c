/*
 * Growth across openings (phase_growth.h). At each closing the ledger's
 * total says whether this opening ended higher than the one before. The
 * sites are copied only where they can matter: at a closing that starts a
 * run (it did not rise) - the sites' state the growth is measured from -
 * and at each closing of a run already long enough to report. A budget
 * bounds the copies of a ledger (a phase closed a million times over
 * thousands of sites); past it, or out of memory, the sites are dropped
 * and said to be: the figures stay.
 */
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "phase_growth.h"

static bool copy_sites(uint64_t **dst, size_t *cap, uint32_t *n,
                       const struct vt_ledger_sites *sites, uint64_t *copied)
{
    if (*copied + sites->nsites > VT_GROWTH_COPY_BUDGET)
        return false;
    *copied += sites->nsites;
    if (!vt_grow_array((void **)dst, cap, sites->nsites ? sites->nsites : 1, sizeof **dst))
        return false;
    for (uint32_t i = 0; i < sites->nsites; i++)
        (*dst)[i] = sites->sites[i].bytes;
    *n = sites->nsites;
    return true;
}

/* The rule itself: one more closing at total v; whether it rose. */
static bool step(struct vt_growth *g, uint64_t v)
{
    bool rose = g->closings && v > g->last_bytes;
    g->closings++;
    g->last_bytes = v;
    if (rose) {
        g->rises++;
    } else {
        g->rises = 0;
        g->run_start = g->closings;
        g->run_start_bytes = v;
    }
    return rose;
}

void vt_growth_close(struct vt_growth *g, const struct vt_ledger_sites *sites, uint64_t *copied,
                     uint64_t time_ns)
{
    if (!g->close_ns && !g->closings)
        g->close_ns = malloc(VT_GROWTH_TIMES * sizeof *g->close_ns);
    if (g->close_ns)
        g->close_ns[g->closings % VT_GROWTH_TIMES] = time_ns;
    bool rose = step(g, sites->total_bytes);
    if (g->sites_dropped)
        return;
    if (!rose)
        g->sites_dropped =
            !copy_sites(&g->start_sites, &g->start_cap, &g->nstart_sites, sites, copied);
    else if (g->rises >= VT_GROWTH_MIN_RISES)
        g->sites_dropped =
            !copy_sites(&g->last_sites, &g->last_cap, &g->nlast_sites, sites, copied);
}

void vt_growth_free(struct vt_growth *g)
{
    free(g->close_ns);
    free(g->start_sites);
    free(g->last_sites);
    memset(g, 0, sizeof *g);
}

bool vt_growth_of(const struct vt_growth *g, struct vt_growth_result *r)
{
    memset(r, 0, sizeof *r);
    if (g->rises < VT_GROWTH_MIN_RISES)
        return false;
    r->openings = g->rises;
    r->from_opening = g->run_start + 1;
    r->closings = g->closings;
    r->first_bytes = g->run_start_bytes;
    r->last_bytes = g->last_bytes;
    r->per_opening = (g->last_bytes - g->run_start_bytes) / g->rises;
    return true;
}

size_t vt_growth_times(const struct vt_growth *g, uint64_t *out)
{
    if (!g->close_ns)
        return 0;
    size_t n = g->closings < VT_GROWTH_TIMES ? (size_t)g->closings : VT_GROWTH_TIMES;
    for (size_t k = 0; k < n; k++)
        out[k] = g->close_ns[(g->closings - n + k) % VT_GROWTH_TIMES];
    return n;
}

bool vt_growth_of_series(const uint64_t *totals, size_t n, struct vt_growth_result *r)
{
    struct vt_growth g = {0};
    for (size_t k = 0; k < n; k++)
        step(&g, totals[k]);
    return vt_growth_of(&g, r);
}

static int by_growth(const void *a, const void *b)
{
    const struct vt_growth_site *x = a, *y = b;
    if (x->per_opening != y->per_opening)
        return x->per_opening < y->per_opening ? 1 : -1;
    return x->site < y->site ? -1 : x->site > y->site;
}

size_t vt_growth_sites(const struct vt_growth *g, struct vt_growth_site *out, size_t n)
{
    if (g->rises < VT_GROWTH_MIN_RISES || g->sites_dropped || !n)
        return 0;
    struct vt_growth_site *all = malloc((g->nlast_sites ? g->nlast_sites : 1) * sizeof *all);
    if (!all)
        return 0;
    size_t k = 0;
    for (uint32_t i = 0; i < g->nlast_sites; i++) {
        uint64_t before = i < g->nstart_sites ? g->start_sites[i] : 0;
        if (g->last_sites[i] > before)
            all[k++] = (struct vt_growth_site){i, (g->last_sites[i] - before) / g->rises};
    }
    qsort(all, k, sizeof *all, by_growth);
    size_t m = k < n ? k : n;
    memcpy(out, all, m * sizeof *out);
    free(all);
    return m;
}
