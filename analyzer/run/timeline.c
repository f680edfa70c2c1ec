/* A process's memory over time at a screen's resolution; see timeline.h. */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

void vt_timeline_init(struct vt_timeline *tl, uint64_t t0, uint64_t t1, size_t buckets)
{
    memset(tl, 0, sizeof *tl);
    vt_column_grid_init(&tl->grid, t0, t1, buckets);
}

void vt_timeline_free(struct vt_timeline *tl)
{
    for (size_t i = 0; i < tl->nseries; i++) {
        vt_column_series_free(&tl->series[i].cols);
        free(tl->series[i].slot_of);
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
    if (s->nsites)
        memcpy(s->sites, sites, s->nsites * sizeof *sites);
    /* the ledger starts empty */
    if (!vt_column_series_init(&s->cols, &tl->grid, s->nsites, 0, NULL))
        return false;
    tl->nseries++;
    return true;
}

static struct vt_timeline_series *series_for(struct vt_timeline *tl, size_t li,
                                             const struct vt_ledger *l)
{
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

void vt_timeline_change(struct vt_timeline *tl, const struct vt_ledger *l, size_t li,
                        const struct vt_timeline_change *c)
{
    struct vt_timeline_series *s = series_for(tl, li, l);
    if (!s)
        return;
    int k = slot_of(tl, s, l, c->site);
    if (k >= 0)
        s->cur[k] += c->begins ? c->size : (uint64_t)0 - c->size;
    vt_column_series_set(&s->cols, &tl->grid, c->time_ns, c->total_bytes, s->cur);
}

void vt_timeline_range(struct vt_timeline *tl, uint64_t name, uint64_t time_ns, bool opens)
{
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
    uint64_t t = time_ns < tl->grid.t0 ? tl->grid.t0 : time_ns;
    if (opens) {
        if (p->open++)
            return;
        /* Less than a column after the previous span: the same span. */
        if (p->nspans && t - p->spans[2 * p->nspans - 1] < tl->grid.width)
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

void vt_timeline_finish(struct vt_timeline *tl)
{
    for (size_t i = 0; i < tl->nseries; i++)
        vt_column_series_finish(&tl->series[i].cols, &tl->grid);
    for (size_t i = 0; i < tl->nphases; i++) {
        struct vt_timeline_phase *p = &tl->phases[i];
        if (p->open && p->nspans)
            p->spans[2 * p->nspans - 1] = tl->grid.t1;
    }
}
