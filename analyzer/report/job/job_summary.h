/*
 * Summaries: a job's traces stay on each node's disk; `vramtrace report
 * --summary FILE` on a node writes a small JSON of its part of the job
 * (job_summary_write.c), and `vramtrace report` over the summaries of every
 * node prints the job's overview as over the traces themselves
 * (job_summary_read.c). docs/user/REPORT.md, "Summaries", is the format:
 *
 *   {"vramtrace_summary": 1, "resolution_ns": N,
 *    "jobs": [{"session", "session_start_unix_ns", "session_host",
 *              "session_command",
 *              "processes": [{"pid", "rank", "local_rank", "world_size",
 *                             "host", "command",
 *                             "devices": [{"device", "gpu_uuid", "gpu_name",
 *                                          "capacity_bytes", "peak_bytes",
 *                                          "failed_requests"}],
 *                             "phases": [{"name", "peak_bytes"}],
 *                             "sites": [{"name", "peak_bytes", "bytes_per_step",
 *                                        "from_step", "steps"}],
 *                             "timeline": {"first_column",
 *                                          "max_bytes": [...]}}],
 *              "failures": [{"process", "device", "gpu_uuid", "time_ns",
 *                            "since_start_ns", "wall_ns", "api",
 *                            "requested_bytes", "verdict", "user_frame",
 *                            "frames": ["fn (file:line)", ...]}]}]}
 */
#ifndef VRAMTRACE_REPORT_JOB_SUMMARY_H
#define VRAMTRACE_REPORT_JOB_SUMMARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "job_view.h"
#include "json_writer.h"

/* Writes the views (one per job) as one summary document. */
void vt_job_summary_write(struct vt_job_view *const *views, size_t n, uint64_t resolution_ns,
                          struct vt_json *j);

/* Whether the file's content is a summary (a JSON object whose first key
 * is "vramtrace_summary"): files are told by content, not name. */
bool vt_job_summary_is(const char *path);
/* The same of a file's first n bytes (VT_JOB_SUMMARY_HEAD of them tell),
 * read by the caller into a buffer with a NUL after them. */
#define VT_JOB_SUMMARY_HEAD 63
bool vt_job_summary_head_is(const char *head, size_t n);

/* The jobs of a set of summaries: views merged by session (the views of
 * one session from many nodes are one job), in order of first appearance. */
struct vt_job_summaries {
    struct vt_job_view **views;
    size_t n, cap;
    uint64_t resolution_ns; /* the first file's; files must agree */
    size_t repeated;        /* processes of the file read last that were read already:
                             * left out (the same process counts once) */
};

/* Reads one summary into s, keeping only the processes the filters
 * select (rank, pid: has_* false for none; device < 0: every device).
 * False with "FILE: where: what" in err (the file is then left out whole). */
struct vt_job_filter {
    bool has_rank, has_pid, has_device;
    uint64_t rank, pid;
    int64_t device;
};
bool vt_job_summaries_read(struct vt_job_summaries *s, const char *path,
                           const struct vt_job_filter *filter, char *err, size_t errlen);
void vt_job_summaries_free(struct vt_job_summaries *s);

#endif
