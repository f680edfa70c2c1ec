/*
 * A snapshot device's allocated and reserved bytes over its trace, at a
 * screen's resolution: the timeline the HTML report draws for a snapshot
 * (docs/internals/REPORT_INTERNALS.md, "HTML report"). The trace's entries are replayed from
 * the reconstructed start of the window with the analysis's own rule
 * (vt_snap_totals_step), and each total is downsampled by
 * common/column_series.h, so each series' maximum is the analysis's peak
 * (peak_allocated_bytes, peak_reserved_bytes), at its first instant. Each
 * carries the other total as its part, so the two lists of points merge
 * into one where both totals are exact at every point (allocated never
 * drawn above reserved where the trace has it below).
 *
 * x: the entry's time_us when every entry has one and they never go back,
 * else the count of entries applied (0: the start of the window, i + 1:
 * after entry i), the analysis's peak_*_index.
 */
#ifndef VRAMTRACE_SNAPSHOT_SNAPSHOT_SERIES_H
#define VRAMTRACE_SNAPSHOT_SNAPSHOT_SERIES_H

#include "column_series.h"
#include "snapshot_analysis.h"

struct vt_snap_series {
    bool timed;                    /* x is time_us, else entries applied */
    struct vt_column_grid grid;    /* t0, t1: the first and last x */
    /* the points of both, in x order: x[i], allocated[i], reserved[i] */
    uint64_t *x, *allocated, *reserved;
    size_t npoints;
};

/* The series of device d in `columns` columns. false: out of memory (free
 * it either way). */
bool vt_snap_series_build(struct vt_snap_series *s, const struct vt_snap_device *d,
                          size_t columns);
void vt_snap_series_free(struct vt_snap_series *s);

#endif
