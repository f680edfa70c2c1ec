/*
 * A process's call sites for the job's divergence (divergence.h): its
 * stacks named, their bytes at the peak summed by name, and the growth a
 * step of each as the replay measured it. Only the sites that can tell a
 * departure are kept (a share of the peak, or growth), so a summary stays
 * small whatever the number of stacks.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <stdlib.h>
#include <string.h>

#include "divergence.h"
#include "growth_rule.h"
#include "grow_array.h"


struct named {
    char *name;
    uint64_t peak_bytes, per_step, from_step, steps;
    uint64_t closings; /* of the phase the growth was measured at (the finer, the more) */
};

struct collect {
    struct named *v;
    size_t n, cap;
    vt_jv_site_namer name;
    void *ctx;
    bool failed;
};

static struct named *add(struct collect *c, uint64_t stack)
{
    char buf[512];
    const char *name = c->name(c->ctx, stack, buf, sizeof buf);
    if (!name || c->failed)
        return NULL;
    if (!vt_grow_array((void **)&c->v, &c->cap, c->n + 1, sizeof *c->v) ||
        !(c->v[c->n].name = strdup(name))) {
        c->failed = true;
        return NULL;
    }
    struct named *x = &c->v[c->n++];
    x->peak_bytes = x->per_step = x->from_step = x->steps = x->closings = 0;
    return x;
}

/* A growth of a site measured at a phase of `closings` closings. */
static void add_growth(struct collect *c, uint64_t stack, uint64_t per_step,
                       const struct vt_growth_result *r)
{
    struct named *x = add(c, stack);
    if (x)
        *x = (struct named){x->name, 0, per_step, r->from_opening, r->openings, r->closings};
}

static void phase_growth(struct collect *c, const struct vt_ledger *l)
{
    for (size_t k = 0; k < l->nphases; k++) {
        struct vt_growth_result r;
        if (!vt_growth_of(&l->phases[k].growth, &r))
            continue;
        /* every stack that grew: a site spread over many grows by all */
        size_t cap = l->sites.nsites ? l->sites.nsites : 1;
        struct vt_growth_site *grown = malloc(cap * sizeof *grown);
        if (!grown) {
            c->failed = true;
            return;
        }
        size_t n = vt_growth_sites(&l->phases[k].growth, grown, cap);
        for (size_t s = 0; s < n; s++)
            add_growth(c, l->sites.sites[grown[s].site].stack, grown[s].per_opening, &r);
        free(grown);
    }
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

/* Two growths of one measurement (the same phase's openings): a site's
 * stacks, whose growths add up. */
static bool same_growth(const struct named *x, const struct named *y)
{
    return x->per_step && y->per_step && x->closings == y->closings &&
           x->from_step == y->from_step && x->steps == y->steps;
}

/* The growth that tells a site's step: the finest phase's (most closings),
 * then the largest. */
static bool better_growth(const struct named *x, const struct named *than)
{
    if (x->closings != than->closings)
        return x->closings > than->closings;
    return x->per_step > than->per_step;
}

/* Every stack of a ledger's peak named: a site's bytes are all its
 * stacks', however many and however small each (a cut before the sum by
 * name would leave out a site spread over many stacks). The contexts'
 * sites are no call sites of the program's allocations (the job's
 * contexts tell them). */
static void name_peak_stacks(struct collect *c, const struct vt_replay *rp,
                             const struct vt_ledger *l)
{
    const struct vt_peak_state *s = &l->peak;
    uint32_t n = l->sites.nsites < s->cap ? l->sites.nsites : (uint32_t)s->cap;
    for (uint32_t i = 0; i < n; i++) {
        if (!s->bytes[i] ||
            vt_contexts_site(rp, l->sites.sites[i].stack, l->sites.sites[i].thread))
            continue;
        struct named *x = add(c, l->sites.sites[i].stack);
        if (x)
            x->peak_bytes = s->bytes[i];
    }
}

bool vt_jv_sites_of_replay(const struct vt_replay *rp, uint64_t device_total,
                           vt_jv_site_namer name, void *ctx, struct vt_jv_process *p)
{
    struct collect c = {.name = name, .ctx = ctx};
    uint64_t peak = 0;
    for (size_t k = 0; k < rp->nledgers; k++) {
        const struct vt_ledger *l = &rp->ledgers[k];
        if (l->category != VT_CAT_DEVICE)
            continue;
        if (l->peak.peak_bytes > peak)
            peak = l->peak.peak_bytes;
        name_peak_stacks(&c, rp, l);
    }
    /* the one rule for growth a step (growth_rule.h): the allocator's
     * where it was sampled, else the phases' */
    struct vt_growth_told told;
    if (vt_growth_told_of(rp, device_total, &told)) {
        for (size_t s = 0; s < told.nsites; s++)
            add_growth(&c, told.sites[s].stack, told.sites[s].bytes, &told.r);
    } else {
        for (size_t k = 0; k < rp->nledgers; k++)
            if (rp->ledgers[k].category == VT_CAT_DEVICE)
                phase_growth(&c, &rp->ledgers[k]);
    }
    if (c.n)
        qsort(c.v, c.n, sizeof *c.v, by_name);
    /* merged by name: bytes summed, the growth that tells the step (its
     * stacks' growths of that measurement summed) */
    size_t m = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (m && !strcmp(c.v[m - 1].name, c.v[i].name)) {
            struct named *x = &c.v[m - 1];
            x->peak_bytes += c.v[i].peak_bytes;
            if (same_growth(&c.v[i], x)) {
                x->per_step += c.v[i].per_step;
            } else if (better_growth(&c.v[i], x)) {
                x->per_step = c.v[i].per_step;
                x->from_step = c.v[i].from_step;
                x->steps = c.v[i].steps;
                x->closings = c.v[i].closings;
            }
            free(c.v[i].name);
            continue;
        }
        c.v[m++] = c.v[i];
    }
    p->sites = calloc(m + 1, sizeof *p->sites);
    bool ok = !c.failed && p->sites;
    for (size_t i = 0; i < m; i++) {
        struct named *x = &c.v[i];
        bool kept = ok && (x->per_step || x->peak_bytes * 1000 >= peak * VT_JV_SITE_KEEP_PERMILLE);
        if (!kept) {
            free(x->name);
            continue;
        }
        p->sites[p->nsites++] = (struct vt_jv_site){x->name, x->peak_bytes, x->per_step,
                                                    x->from_step, x->steps};
    }
    free(c.v);
    return ok;
}

void vt_jv_sites_json(struct vt_json *j, const struct vt_jv_process *p)
{
    vt_json_key(j, "sites");
    vt_json_begin_array(j);
    for (size_t k = 0; k < p->nsites; k++) {
        const struct vt_jv_site *s = &p->sites[k];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", s->name);
        vt_json_kv_uint(j, "peak_bytes", s->peak_bytes);
        vt_json_kv_uint(j, "bytes_per_step", s->bytes_per_step);
        vt_json_kv_uint(j, "from_step", s->from_step);
        vt_json_kv_uint(j, "steps", s->steps);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}
