/* A quantity over time at a screen's resolution; see column_series.h. */
#include "column_series.h"

#include <stdlib.h>
#include <string.h>

void vt_column_grid_init(struct vt_column_grid *g, uint64_t t0, uint64_t t1, size_t columns)
{
    if (columns == 0)
        columns = 1;
    if (t1 < t0)
        t1 = t0;
    g->t0 = t0;
    g->t1 = t1;
    g->columns = columns;
    uint64_t span = t1 - t0 + 1;
    g->width = span / columns + (span % columns != 0);
}

bool vt_column_series_init(struct vt_column_series *s, const struct vt_column_grid *g,
                           size_t nparts, uint64_t start_total, const uint64_t *start_parts)
{
    memset(s, 0, sizeof *s);
    s->nparts = nparts < VT_COLUMN_PARTS_MAX ? nparts : VT_COLUMN_PARTS_MAX;
    s->start_total = start_total;
    if (start_parts)
        memcpy(s->start_parts, start_parts, s->nparts * sizeof *start_parts);
    /* Two points a column, the start and the end: known in advance. */
    s->cap = 2 * g->columns + 4;
    s->t = malloc(s->cap * sizeof *s->t);
    s->total = malloc(s->cap * sizeof *s->total);
    s->parts = calloc(s->cap * (s->nparts ? s->nparts : 1), sizeof *s->parts);
    if (!s->t || !s->total || !s->parts) {
        vt_column_series_free(s);
        return false;
    }
    return true;
}

void vt_column_series_free(struct vt_column_series *s)
{
    free(s->t);
    free(s->total);
    free(s->parts);
    memset(s, 0, sizeof *s);
}

static void point(struct vt_column_series *s, uint64_t t, uint64_t total, const uint64_t *parts)
{
    if (s->npoints == s->cap)
        return; /* cannot happen: two a column, and the start and the end */
    s->t[s->npoints] = t;
    s->total[s->npoints] = total;
    memcpy(&s->parts[s->npoints * s->nparts], parts, s->nparts * sizeof *parts);
    s->npoints++;
}

/* Ends the current column: its maximum, then its last value if it came later. */
static void end_column(struct vt_column_series *s)
{
    if (!s->in_column)
        return;
    point(s, s->t_max, s->max, s->max_parts);
    if (s->now != s->max || s->t_last != s->t_max)
        point(s, s->t_last, s->now, s->now_parts);
    s->in_column = false;
}

void vt_column_series_set(struct vt_column_series *s, const struct vt_column_grid *g, uint64_t t,
                          uint64_t total, const uint64_t *parts)
{
    if (t < g->t0)
        t = g->t0;
    uint64_t column = (t - g->t0) / g->width;
    if (s->in_column && column != s->column)
        end_column(s);
    s->now = total;
    if (s->nparts)
        memcpy(s->now_parts, parts, s->nparts * sizeof *parts);
    if (!s->in_column) {
        if (s->npoints == 0) /* what it was before */
            point(s, g->t0, s->start_total, s->start_parts);
        s->in_column = true;
        s->column = column;
        s->max = total;
        s->t_max = t;
        memcpy(s->max_parts, s->now_parts, s->nparts * sizeof *parts);
    } else if (total > s->max) {
        s->max = total;
        s->t_max = t;
        memcpy(s->max_parts, s->now_parts, s->nparts * sizeof *parts);
    }
    s->t_last = t;
}

void vt_column_series_finish(struct vt_column_series *s, const struct vt_column_grid *g)
{
    end_column(s);
    if (s->npoints && s->t[s->npoints - 1] < g->t1)
        point(s, g->t1, s->now, s->now_parts);
}
