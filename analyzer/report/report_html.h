/*
 * `vramtrace report --html FILE`: one self-contained page (docs/REPORT.md,
 * "HTML report"). The page inlines the chart libraries and its own script
 * (html_assets.h), the report's JSON document (docs/report.schema.json)
 * and, for traces, a timeline per process and ledger downsampled in C to a
 * screen's resolution (replay/timeline.h), in a second replay of the
 * traces: the first chose the sites each timeline follows (the top ones at
 * the ledger's peak); for snapshots, each device's allocated and reserved
 * bytes over its trace, downsampled the same way
 * (snapshot/snapshot_series.h).
 *
 * Nothing on the page is fetched: a Content-Security-Policy of
 * default-src 'none' forbids it, so the page opens offline anywhere.
 */
#ifndef VRAMTRACE_REPORT_REPORT_HTML_H
#define VRAMTRACE_REPORT_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"
#include "snapshot_analysis.h"

/* Sites per table in the page's document: its flame graphs draw them all
 * (the rest of a total is one "other sites" frame). */
#define VT_REPORT_HTML_TOP 100

/* True if this build has the chart libraries; else says on err what is
 * missing and how to install it. */
bool vt_report_html_available(FILE *err);

/* Writes the page to path (through a temporary file renamed at the end:
 * never a half-written page): doc is the JSON document (len bytes,
 * compact), rep the traces' report (NULL: none), whose traces are
 * replayed again for the timelines; snaps the snapshots' analyses, in the
 * document's order (their devices selected by opt's --device);
 * table_rows: the rows of its tables of stacks (--top); views: the jobs
 * the page draws a job section for (heatmap, table, failures), index[k]
 * being views[k]'s place in the document's jobs[]. Returns 0, or 2 (said
 * on err). */
struct vt_job_view;
int vt_report_html(struct vt_report *rep, const struct vt_snap_analysis *snaps, size_t nsnaps,
                   const struct vt_report_options *opt, const char *doc, size_t len,
                   size_t table_rows, struct vt_job_view *const *views, const size_t *index,
                   size_t nviews, const char *path, FILE *err);

/* The page's job block (report_job_html.c, docs/REPORT.md "HTML report"):
 *   {"vramtrace_job_page": 1, "jobs": [{"job", "resolution_ns", "timed",
 *     "first_column", "merge", "columns", "rows": [{"pid", "rank", "local_rank",
 *     "host", "devices": [...], "first", "bytes": [...]}],
 *     "idle_processes", "marks": [{"row", "column", "since_start_ns",
 *     "device"}]}]}
 * Rows: the processes with device memory, by rank; marks: the failures in
 * time order (jobs[].first_failure, then following_failures). A column of
 * the page is `merge` columns of the timeline (their largest value), so
 * that a page has at most 1200 columns and, past 250 rows, 300,000 cells
 * (64 columns at least). */
struct vt_json;
void vt_job_page_json(struct vt_job_view *const *views, const size_t *index, size_t n,
                      struct vt_json *j);

#endif
