/*
 * A quantity over time, downsampled to a screen's resolution as it is fed:
 * the series the HTML report draws (docs/internals/REPORT_INTERNALS.md, "HTML report"), for a
 * trace's ledgers (run/timeline.c) and a snapshot's allocated and
 * reserved bytes (snapshot/snapshot_series.c: snapshot/ may not use
 * replay/, so the downsampler lives here).
 *
 * The span [t0, t1] (any unit: ns, us, trace entries) is cut into `columns`
 * equal columns (about one pixel each). Each column that saw a value keeps
 * two points: its maximum (the first instant the total reached it, with
 * the parts then) and its last value (after its last change), so nothing a
 * pixel could show is lost and the maximum is exact: the column holding
 * the series' peak has the peak's value at the peak's first instant. The
 * total may carry up to VT_COLUMN_PARTS_MAX parts (a ledger's top sites),
 * recorded beside it at both points.
 *
 * O(1) per value (O(parts) to copy them), at most 2 x columns + 2 points:
 * memory never grows with the input's length.
 */
#ifndef VRAMTRACE_COMMON_COLUMN_SERIES_H
#define VRAMTRACE_COMMON_COLUMN_SERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_COLUMN_PARTS_MAX 8

struct vt_column_grid {
    uint64_t t0, t1;   /* the span */
    uint64_t width;    /* of a column, >= 1 */
    size_t columns;
};

/* [t0, t1] in `columns` columns (at least 1; t1 < t0 is read as t0). */
void vt_column_grid_init(struct vt_column_grid *g, uint64_t t0, uint64_t t1, size_t columns);

struct vt_column_series {
    size_t nparts;
    /* the points, in time order: t[i], total[i], parts[i * nparts + k] */
    uint64_t *t, *total, *parts;
    size_t npoints, cap;
    /* while it runs */
    uint64_t start_total, start_parts[VT_COLUMN_PARTS_MAX]; /* before the first value */
    uint64_t now, now_parts[VT_COLUMN_PARTS_MAX];
    uint64_t column, t_last;
    bool in_column;
    uint64_t max, t_max, max_parts[VT_COLUMN_PARTS_MAX];
};

/* An empty series on grid g, whose totals carry nparts parts (at most
 * VT_COLUMN_PARTS_MAX; more are ignored). Its first value is preceded by a
 * point at t0 with start_total and start_parts (NULL: zeros): what it was
 * before anything was fed. false: out of memory (nothing to free). */
bool vt_column_series_init(struct vt_column_series *s, const struct vt_column_grid *g,
                           size_t nparts, uint64_t start_total, const uint64_t *start_parts);
void vt_column_series_free(struct vt_column_series *s);

/* The value from time t on (t never less than the previous one's; below
 * t0 counts as t0): the total and its nparts parts (NULL if none). */
void vt_column_series_set(struct vt_column_series *s, const struct vt_column_grid *g, uint64_t t,
                          uint64_t total, const uint64_t *parts);

/* Ends the last column, and adds a point at t1 with the last value if the
 * series has points and its last is earlier. */
void vt_column_series_finish(struct vt_column_series *s, const struct vt_column_grid *g);

#endif
