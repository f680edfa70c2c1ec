/*
 * `vramtrace report` over any mix of inputs: traces, replayed together as
 * one job, and PyTorch memory snapshots, each analysed on its own. Text for
 * people; for programs one JSON document whatever the inputs
 * (docs/report.schema.json):
 *
 *   {"vramtrace_report": 2, "inputs": [...], "processes": [...],
 *    "gpus": [...], "snapshots": [...]}
 */
#ifndef VRAMTRACE_REPORT_REPORT_DOCUMENT_H
#define VRAMTRACE_REPORT_REPORT_DOCUMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"
#include "run_traces.h"

/* The version of the JSON document: bumped when a key changes meaning or
 * goes; new keys do not bump it. */
#define VT_REPORT_JSON_VERSION 2

struct vt_report_inputs {
    char *const *traces;
    size_t ntraces;
    char *const *snapshots;
    size_t nsnapshots;
};

/* The exit status of a report that was written, but without some of its
 * traces: unreadable, empty, not a trace, or corrupt part-way (each named
 * on err with the reason; a corrupt one is reported up to the error). */
#define VT_REPORT_PARTIAL 3

/* Writes the report of the traces' run (run_traces.h: read by the
 * caller, with the live sets at --at TIME for the text report and the job
 * timelines for JSON; NULL when there are no traces) and of the snapshots
 * of in (in->traces: the run's paths, as the JSON document lists them).
 * Returns 0; VT_REPORT_PARTIAL when traces were skipped but others were
 * read; or 2 when no trace could be read, a snapshot could not (said on
 * err as "vramtrace: FILE: byte N: reason"; nothing is printed then) or a
 * filter selects nothing. */
int vt_report_document(struct vt_run_result *run, const struct vt_report_inputs *in,
                       const struct vt_report_options *opt, bool json, FILE *out, FILE *err);

enum vt_report_format { VT_REPORT_TEXT, VT_REPORT_JSON, VT_REPORT_HTML };

/* The same report as one self-contained HTML page written to path
 * (report_html.h; docs/user/REPORT.md, "HTML report"; the run with the job
 * timelines). The caller checks vt_report_html_available first, before
 * reading anything. */
int vt_report_document_html(struct vt_run_result *run, const struct vt_report_inputs *in,
                            const struct vt_report_options *opt, const char *path, FILE *err);

/* After an analysis of traces: each truncated trace named on err, and,
 * when some were not read in full (partial) and status is 0, that said
 * ("... the WHAT covers the rest") and VT_REPORT_PARTIAL returned; else
 * status. */
struct vt_analysis;
int vt_report_traces_said(const struct vt_analysis *a, bool partial, int status, const char *what,
                          FILE *err);

/* `report --summary PATH` (job_summary.h): this node's part of each job
 * from the traces' run (with the job timelines, in the summary's columns),
 * to path ("-": stdout). The same exit statuses as vt_report_document. */
int vt_report_write_summary(struct vt_run_result *run, const struct vt_report_options *opt,
                            const char *path, FILE *err);
/* The job report over summaries (text, JSON, or with html non-NULL the
 * page written there: report_html.h); a summary that cannot be read is
 * named on err and left out (VT_REPORT_PARTIAL); 2 if none could be, the
 * filters select nothing, or (html) the build has no chart libraries. */
int vt_report_summaries(char *const *paths, size_t npaths, const struct vt_report_options *opt,
                        bool json, const char *html, FILE *out, FILE *err);

#endif
