/*
 * The run stage's front door: the traces read once, with the observers a
 * renderer asked for riding along the replay, into one result that the
 * renderers (report/, export/'s diff) only read. Who asks: the commands
 * (cli/), which then hand the result to a renderer; no renderer reads a
 * trace itself.
 *
 * The result:
 *   run.a          the analysis (analysis.h): per input its path, replay
 *                  (ledgers, peaks, phases, failures), job; the GPUs and
 *                  jobs; the errors; each trace's tables (input_tables.h)
 *   run.timelines  each process's device bytes over wall-clock time
 *                  (job_timelines.h), when asked for
 *   run.moment_set  each ledger's live set at one instant (moment_set.h),
 *                  when asked for
 *   run.timeline_notes  every change of each input's ledgers and every
 *                  range, noted for the HTML page's timelines
 *                  (timeline_notes.h), when asked for
 * Everything in it is read-only once vt_run_traces returns, and lives
 * until vt_run_result_free.
 */
#ifndef VRAMTRACE_RUN_RUN_TRACES_H
#define VRAMTRACE_RUN_RUN_TRACES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "job_timelines.h"
#include "moment_set.h"
#include "timeline_notes.h"

/* The observers to run along the replay; zeroed: none. */
struct vt_run_observers {
    bool job_timelines;           /* run.timelines, in columns of ... */
    uint64_t job_resolution_ns;   /* ... this (0: VT_SUMMARY_RESOLUTION_NS) */
    bool moment_set;              /* run.moment_set, at ... */
    uint64_t moment_ns;           /* ... this time since each process started */
    bool timeline_notes;          /* run.timeline_notes */
    /* The caller's own observer (an exporter's notes), asked for alone
     * (its hooks replace those above): set up for each input as
     * vt_analysis_run_with's prepare; it keeps what it notes per input
     * (inputs are replayed on threads). */
    vt_analysis_prepare_fn prepare;
    void *prepare_ctx;
};

struct vt_run_result {
    struct vt_analysis a;
    /* vt_analysis_run's status: 0 every file read to its end, 2 not */
    int status;
    /* Some files were not read in full, but others were: a renderer
     * reports the rest (status is 2 then). */
    bool partial;
    /* Nothing was read: memory for an observer ran out (said on err). */
    bool unread;
    bool has_timelines;
    struct vt_job_timelines timelines;
    bool has_moment_set;
    struct vt_moment_set moment_set;
    bool has_timeline_notes;
    struct vt_timeline_notes timeline_notes;
    vt_analysis_prepare_fn prepare; /* the caller's observer, when asked for */
    void *prepare_ctx;
};

/* Reads the traces (vt_analysis_run_with) with the observers asked for.
 * Returns run->status; 2 without reading when memory for an observer
 * ran out (said on err). Free with vt_run_result_free either way. */
int vt_run_traces(char *const *paths, size_t npaths, const struct vt_run_observers *obs,
                  struct vt_run_result *run, FILE *err);
void vt_run_result_free(struct vt_run_result *run);

#endif
