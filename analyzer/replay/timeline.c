/* A process's memory over time at a screen's resolution; see timeline.h. */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

void vt_timeline_init(struct vt_timeline *tl, uint64_t t0, uint64_t t1, size_t buckets)
{
    memset(tl, 0, sizeof *tl);
    if (buckets == 0)
        buckets = 1;
    if (t1 < t0)
        t1 = t0;
    tl->t0 = t0;
    tl->t1 = t1;
    tl->buckets = buckets;
    uint64_t span = t1 - t0 + 1;
    tl->bucket_ns = span / buckets + (span % buckets != 0);
}

void vt_timeline_free(struct vt_timeline *tl)
{
    for (size_t i = 0; i < tl->nseries; i++) {
        struct vt_timeline_series *s = &tl->series[i];
        free(s->t);
        free(s->total);
        free(s->site_bytes);
        free(s->slot_of);
    }
    free(tl->series);
    for (size_t i = 0; i < tl->nphases; i++)
        free(tl->phases[i].spans);
    free(tl->phases);
    memset(tl, 0, sizeof *tl);
}

bool vt_timeline_add_series(struct vt_timeline *tl, int64_t device, enum vt_category category,
                            const struct vt_timeline_site *sites, size_t nsites)
{
    struct vt_timeline_series *grown = realloc(tl->series, (tl->nseries + 1) * sizeof *grown);
    if (!grown)
        return false;
    tl->series = grown;
    struct vt_timeline_series *s = &tl->series[tl->nseries];
    memset(s, 0, sizeof *s);
    s->device = device;
    s->category = category;
    s->nsites = nsites < VT_TIMELINE_SITES ? nsites : VT_TIMELINE_SITES;
    memcpy(s->sites, sites, s->nsites * sizeof *sites);
    /* Two points a column, the start and the end: known in advance. */
    s->cap = 2 * tl->buckets + 4;
    s->t = malloc(s->cap * sizeof *s->t);
    s->total = malloc(s->cap * sizeof *s->total);
    s->site_bytes = calloc(s->cap * (s->nsites ? s->nsites : 1), sizeof *s->site_bytes);
    if (!s->t || !s->total || !s->site_bytes) {
        free(s->t);
        free(s->total);
        free(s->site_bytes);
        return false;
    }
    tl->nseries++;
    return true;
}

static void point(struct vt_timeline_series *s, uint64_t t, uint64_t total, const uint64_t *sites)
{
    if (s->npoints == s->cap)
        return; /* cannot happen: two a column, and the start and the end */
    s->t[s->npoints] = t;
    s->total[s->npoints] = total;
    memcpy(&s->site_bytes[s->npoints * s->nsites], sites, s->nsites * sizeof *sites);
    s->npoints++;
}

/* Ends the current column: its maximum, then its last value if it came later. */
static void end_bucket(struct vt_timeline_series *s)
{
    if (!s->in_bucket)
        return;
    point(s, s->t_max, s->max, s->max_sites);
    if (s->now != s->max || s->t_last != s->t_max)
        point(s, s->t_last, s->now, s->cur);
    s->in_bucket = false;
}

static struct vt_timeline_series *series_for(struct vt_timeline *tl, const struct vt_replay *rp,
                                             const struct vt_ledger *l)
{
    size_t li = (size_t)(l - rp->ledgers);
    if (li >= VT_LEDGERS_MAX)
        return NULL;
    long k = tl->series_of[li];
    if (k == 0) {
        k = -1;
        for (size_t i = 0; i < tl->nseries; i++)
            if (tl->series[i].device == l->device && tl->series[i].category == l->category) {
                k = (long)i + 1;
                break;
            }
        tl->series_of[li] = k;
    }
    return k > 0 ? &tl->series[k - 1] : NULL;
}

/* The slot of a ledger's site among the tracked ones, -1 if untracked. */
static int slot_of(struct vt_timeline *tl, struct vt_timeline_series *s, const struct vt_ledger *l,
                   uint32_t site)
{
    if (site >= s->nslot_of) {
        size_t cap = s->nslot_of ? s->nslot_of : 64;
        while (cap <= site)
            cap *= 2;
        uint8_t *grown = realloc(s->slot_of, cap);
        if (!grown) {
            tl->out_of_memory = true;
            return -1;
        }
        memset(grown + s->nslot_of, 0, cap - s->nslot_of);
        s->slot_of = grown;
        s->nslot_of = cap;
    }
    if (!s->slot_of[site]) {
        s->slot_of[site] = 1;
        for (size_t k = 0; k < s->nsites; k++)
            if (s->sites[k].stack == l->sites.sites[site].stack &&
                s->sites[k].thread == l->sites.sites[site].thread)
                s->slot_of[site] = (uint8_t)(2 + k);
    }
    return (int)s->slot_of[site] - 2;
}

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct vt_timeline *tl = ctx;
    struct vt_timeline_series *s = series_for(tl, rp, l);
    if (!s)
        return;
    uint64_t t = rp->last_time_ns < tl->t0 ? tl->t0 : rp->last_time_ns;
    uint64_t bucket = (t - tl->t0) / tl->bucket_ns;
    if (s->in_bucket && bucket != s->bucket)
        end_bucket(s);
    int k = slot_of(tl, s, l, e->site);
    if (k >= 0)
        s->cur[k] += begins ? e->size : (uint64_t)0 - e->size;
    s->now = l->sites.total_bytes;
    if (!s->in_bucket) {
        if (s->npoints == 0) /* the ledger starts empty */
            point(s, tl->t0, 0, (const uint64_t[VT_TIMELINE_SITES]){0});
        s->in_bucket = true;
        s->bucket = bucket;
        s->max = s->now;
        s->t_max = t;
        memcpy(s->max_sites, s->cur, sizeof s->cur);
    } else if (s->now > s->max) {
        s->max = s->now;
        s->t_max = t;
        memcpy(s->max_sites, s->cur, sizeof s->cur);
    }
    s->t_last = t;
}

static void on_range(void *ctx, struct vt_replay *rp, uint64_t name, uint64_t time_ns, bool opens)
{
    (void)rp;
    struct vt_timeline *tl = ctx;
    struct vt_timeline_phase *p = NULL;
    for (size_t i = 0; i < tl->nphases; i++) /* few names */
        if (tl->phases[i].name == name)
            p = &tl->phases[i];
    if (!p) {
        if (!opens)
            return;
        if (!vt_grow_array((void **)&tl->phases, &tl->phases_cap, tl->nphases + 1,
                           sizeof *tl->phases)) {
            tl->out_of_memory = true;
            return;
        }
        p = &tl->phases[tl->nphases++];
        memset(p, 0, sizeof *p);
        p->name = name;
    }
    uint64_t t = time_ns < tl->t0 ? tl->t0 : time_ns;
    if (opens) {
        if (p->open++)
            return;
        /* Less than a column after the previous span: the same span. */
        if (p->nspans && t - p->spans[2 * p->nspans - 1] < tl->bucket_ns)
            return;
        size_t cap2 = p->cap;
        if (!vt_grow_array((void **)&p->spans, &cap2, 2 * (p->nspans + 1), sizeof *p->spans)) {
            tl->out_of_memory = true;
            p->open--;
            return;
        }
        p->cap = cap2;
        p->spans[2 * p->nspans] = t;
        p->spans[2 * p->nspans + 1] = t;
        p->nspans++;
    } else {
        if (p->open == 0)
            return;
        if (--p->open == 0 && p->nspans)
            p->spans[2 * p->nspans - 1] = t;
    }
}

void vt_timeline_attach(struct vt_timeline *tl, struct vt_replay *rp)
{
    rp->on_live = on_live;
    rp->on_live_ctx = tl;
    rp->on_range = on_range;
    rp->on_range_ctx = tl;
}

void vt_timeline_finish(struct vt_timeline *tl)
{
    for (size_t i = 0; i < tl->nseries; i++) {
        struct vt_timeline_series *s = &tl->series[i];
        end_bucket(s);
        if (s->npoints && s->t[s->npoints - 1] < tl->t1)
            point(s, tl->t1, s->now, s->cur);
    }
    for (size_t i = 0; i < tl->nphases; i++) {
        struct vt_timeline_phase *p = &tl->phases[i];
        if (p->open && p->nspans)
            p->spans[2 * p->nspans - 1] = tl->t1;
    }
}
