/* A snapshot device's allocated and reserved bytes over its trace; see
 * snapshot_series.h. */
#include "snapshot_series.h"

#include <stdlib.h>
#include <string.h>

/* Every entry has a time, none below 0, none before the previous one. */
static bool timed(const struct vt_snap_timeline *t)
{
    if (!t->nev)
        return false;
    for (size_t i = 0; i < t->nev; i++)
        if (!t->ev[i].has_time || t->ev[i].time_us < 0 ||
            (i && t->ev[i].time_us < t->ev[i - 1].time_us))
            return false;
    return true;
}

/* The x of the moment after `index` entries were applied. */
static uint64_t x_at(const struct vt_snap_series *s, const struct vt_snap_device *d, size_t index)
{
    if (index > d->tl.nev)
        index = d->tl.nev;
    if (!s->timed)
        return index;
    /* after entry index - 1; the start of the window is at the first entry's time */
    return (uint64_t)d->tl.ev[index ? index - 1 : 0].time_us;
}

/* Appends point k of c (total and its one part, in that order or swapped),
 * unless it repeats the last point. */
static void put(struct vt_snap_series *s, const struct vt_column_series *c, size_t k, bool swapped)
{
    uint64_t a = swapped ? c->parts[k] : c->total[k], r = swapped ? c->total[k] : c->parts[k];
    size_t n = s->npoints;
    if (n && s->x[n - 1] == c->t[k] && s->allocated[n - 1] == a && s->reserved[n - 1] == r)
        return;
    s->x[n] = c->t[k];
    s->allocated[n] = a;
    s->reserved[n] = r;
    s->npoints++;
}

bool vt_snap_series_build(struct vt_snap_series *s, const struct vt_snap_device *d,
                          size_t columns)
{
    memset(s, 0, sizeof *s);
    const struct vt_snap_timeline *t = &d->tl;
    s->timed = timed(t);
    vt_column_grid_init(&s->grid, x_at(s, d, 0), x_at(s, d, t->nev), columns);
    uint64_t allocated = t->initial.allocated, reserved = t->initial.reserved;
    /* each with the other as its part */
    struct vt_column_series ca, cr;
    bool ok = vt_column_series_init(&ca, &s->grid, 1, allocated, &reserved);
    ok = vt_column_series_init(&cr, &s->grid, 1, reserved, &allocated) && ok;
    size_t cap = 2 * (2 * columns + 4);
    s->x = malloc(cap * sizeof *s->x);
    s->allocated = malloc(cap * sizeof *s->allocated);
    s->reserved = malloc(cap * sizeof *s->reserved);
    if (ok && s->x && s->allocated && s->reserved) {
        for (size_t i = 0; i < t->nev; i++) {
            vt_snap_totals_step(t, &t->ev[i], &allocated, &reserved);
            uint64_t x = x_at(s, d, i + 1);
            vt_column_series_set(&ca, &s->grid, x, allocated, &reserved);
            vt_column_series_set(&cr, &s->grid, x, reserved, &allocated);
        }
        vt_column_series_finish(&ca, &s->grid);
        vt_column_series_finish(&cr, &s->grid);
        /* both lists in x order, as one */
        size_t i = 0, j = 0;
        while (i < ca.npoints || j < cr.npoints) {
            if (j == cr.npoints || (i < ca.npoints && ca.t[i] <= cr.t[j]))
                put(s, &ca, i++, false);
            else
                put(s, &cr, j++, true);
        }
    } else {
        ok = false;
    }
    vt_column_series_free(&ca);
    vt_column_series_free(&cr);
    return ok;
}

void vt_snap_series_free(struct vt_snap_series *s)
{
    free(s->x);
    free(s->allocated);
    free(s->reserved);
    memset(s, 0, sizeof *s);
}
