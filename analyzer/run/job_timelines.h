/*
 * Each process's device bytes over wall-clock time, in columns of a
 * resolution aligned on the Unix epoch: an observer of the run (its
 * prepare hook sets each replay's on_live), for the job views of the
 * reports (report/job/job_view.h) and the per-node summaries. Wall-clock,
 * not monotonic: the processes of a job run on several hosts, whose
 * monotonic clocks do not compare.
 */
#ifndef VRAMTRACE_RUN_JOB_TIMELINES_H
#define VRAMTRACE_RUN_JOB_TIMELINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

/* The timeline's column, by default: ten seconds of wall-clock time (a
 * ten-hour run: 3,600 numbers a rank). */
#define VT_SUMMARY_RESOLUTION_NS 10000000000ull
/* Columns a job's timeline spans at most (job_view.c says why). */
#define VT_JOB_COLUMNS_MAX ((uint64_t)1 << 20)

/* The process's device bytes (all its devices) over wall-clock time, in
 * columns of the view's resolution aligned on the Unix epoch (column k
 * covers [k * resolution, (k + 1) * resolution)): the largest total each
 * column saw. Columns before the first change are absent; a column in
 * which nothing changed holds the total it started with. */
struct vt_jv_timeline {
    uint64_t first;          /* the first column's number */
    uint64_t *max_bytes;
    size_t n, cap;
    /* while it is built (job_timelines.c) */
    uint64_t now;            /* the total now */
    uint64_t column_end;     /* wall ns where the last column ends */
    int64_t wall_offset;     /* the process's monotonic ns -> Unix epoch ns */
    bool has_offset;
};

/* Notes the process's device total at wall-clock time wall_ns. */
bool vt_jv_timeline_note(struct vt_jv_timeline *tl, uint64_t resolution_ns, uint64_t wall_ns,
                         uint64_t bytes);

/* Each process's device bytes over wall-clock time, collected while the
 * analysis runs (vt_job_timelines_prepare is a vt_analysis_prepare_fn):
 * the timelines of the job views and of the summaries. */
struct vt_job_timelines {
    struct vt_jv_timeline *per_input;
    size_t n;
    uint64_t resolution_ns;
};
bool vt_job_timelines_init(struct vt_job_timelines *t, size_t ninputs, uint64_t resolution_ns);
void vt_job_timelines_prepare(void *ctx, struct vt_input *in);
void vt_job_timelines_free(struct vt_job_timelines *t);

#endif
