/*
 * `vramtrace report --html FILE`: one self-contained page (docs/user/REPORT.md,
 * "HTML report"). The page inlines the chart libraries and its own script
 * (html_assets.h), the report's JSON document (docs/report.schema.json)
 * and, for traces, a timeline per process and ledger downsampled in C to a
 * screen's resolution (run/timeline.h), in a second replay of the
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

/* A job of more processes than VT_REPORT_HTML_PROCESSES (ranks, usually)
 * is detailed on the page only in part: the sections of a process (its
 * live sets and flame graphs, its timelines) cost up to about 0.8 MB each,
 * so that a job of 1024 ranks made a page of 840 MB that no browser
 * opens. Such a job's page details its processes with failed allocations
 * (at most VT_REPORT_HTML_DETAILED, the first failures in time first), the
 * one with the largest and the one with the smallest device peak, and the
 * first ranks while fewer than VT_REPORT_HTML_DETAILED are detailed: 4 to
 * 6 processes, a page of about 5 MB at most. The rest appear in its job
 * section (heatmap, table) only, and the page says how many and how to see
 * one (--rank, --pid: a page of one process). */
#define VT_REPORT_HTML_PROCESSES 16
#define VT_REPORT_HTML_DETAILED 4

/* Why a process is detailed (vt_report.detail; bits). */
enum {
    VT_DETAIL_ALL = 1,      /* its job is no larger than VT_REPORT_HTML_PROCESSES */
    VT_DETAIL_FAILED = 2,   /* an allocation failed */
    VT_DETAIL_LARGEST = 4,  /* the largest device peak of its job */
    VT_DETAIL_SMALLEST = 8, /* the smallest */
    VT_DETAIL_FIRST = 16,   /* among the first ranks */
};

/* Whether this build has the page (meson option html, with the chart
 * libraries: analyzer/report/html/meson.build). */
bool vt_report_html_built(void);
/* True if this build has the page; else says so on err, and where the
 * same figures are (no path of the machine that built it). */
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

/* The page's job block (report_job_html.c, docs/internals/REPORT_INTERNALS.md):
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

/* Marks in detail[] (per input of rep) the processes of job `job` (its
 * view v) that the page details, with why (VT_DETAIL_*), and 0 for its
 * others; returns how many are not detailed (0: the job is small enough
 * for all). */
size_t vt_job_page_detail(const struct vt_report *rep, size_t job, const struct vt_job_view *v,
                          unsigned char *detail);

#endif
