/*
 * A job as its overview tells it (docs/user/REPORT.md, "The job"), whatever it
 * was read from: the traces themselves (job_view_traces.c) or the per-node
 * summaries `report --summary` writes (job_summary_read.c). One renderer
 * (report_job.c) prints both, so a report over the summaries of a job's
 * nodes is the report over its traces, figure for figure.
 *
 * Everything a view holds is its own (strings copied), so views of many
 * files can be merged (vt_job_view_merge) and the sources freed.
 */
#ifndef VRAMTRACE_REPORT_JOB_VIEW_H
#define VRAMTRACE_REPORT_JOB_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "job_timelines.h"
#include "trace_reader.h" /* VT_UUID_SIZE */

/* The summary format's version (docs/user/REPORT.md, "Summaries"). */
#define VT_SUMMARY_VERSION 1
/* Frames kept of a failure's stack (innermost first, the tracer's own left out). */
#define VT_JOB_FRAMES_MAX 32

struct vt_jv_gpu_id {
    bool has_uuid;
    uint8_t uuid[VT_UUID_SIZE];
};

/* One device ordinal of a process: its largest device-memory ledger there. */
struct vt_jv_device {
    int64_t device;
    struct vt_jv_gpu_id gpu;
    char *gpu_name;
    uint64_t capacity_bytes; /* 0: unknown */
    uint64_t peak_bytes;
    uint64_t failed_requests;
    /* What the peak is made of (parts_split.h, segment level): parameters,
     * buffers, gradients, optimizer state (enum vt_part - 1); parts_known
     * false: no census (or a summary older than parts). */
    bool parts_known;
    uint64_t parts[VT_PART_COUNT_ - 1];
    /* the program's frame of the largest site at the peak, NULL: none */
    char *site;
    /* Of the peak, the process's CUDA contexts there (peak_contexts.h);
     * contexts_said false: the source cannot tell (an older trace or
     * summary), and nothing is said. */
    bool contexts_said;
    uint64_t contexts_bytes;
    uint32_t contexts_unmeasured;
};

/* A context the process made (analyzer/replay/contexts.h). */
struct vt_jv_context {
    int64_t device;
    struct vt_jv_gpu_id gpu;
    uint64_t bytes;          /* its cost; 0 where cost says "not measured" */
    char *cost;              /* how it was had: vt_context_cost_name */
    int64_t begin_ns;        /* since the process started */
    int64_t end_ns;          /* since the process started; -1: to its exit */
    char *site;              /* the program's frame that made it, NULL: none */
};

/* A phase's peak of device bytes in one process (the largest over its
 * devices). */
struct vt_jv_phase {
    char *name;
    uint64_t peak_bytes;
    /* What it grew by per opening, from which opening (docs/user/REPORT.md,
     * "Growth across openings"); 0: it does not grow. */
    uint64_t growth_per_opening, growth_from_opening;
};

/* A call site of one process, named as every view names a site
 * (stack_where.h), for the job's divergence (divergence.h). */
struct vt_jv_site {
    char *name;
    uint64_t peak_bytes;      /* live at the process's device peaks */
    uint64_t bytes_per_step;  /* its growth a step (0: it does not grow) */
    uint64_t from_step, steps; /* the step the growth began at, and how many it lasted */
};

struct vt_jv_process {
    uint64_t pid;
    long rank, local_rank, world_size; /* -1: not said */
    char *host;
    char *command;
    struct vt_jv_device *devices;
    size_t ndevices;
    struct vt_jv_phase *phases;
    size_t nphases;
    struct vt_jv_timeline timeline;
    struct vt_jv_context *contexts;
    size_t ncontexts;
    char *visible_devices;   /* CUDA_VISIBLE_DEVICES, NULL: not set */
    struct vt_jv_site *sites; /* divergence.h: the sites that can tell it */
    size_t nsites;
};

struct vt_jv_failure {
    size_t process;          /* index in the view's processes */
    int64_t device;
    struct vt_jv_gpu_id gpu;
    uint64_t time_ns;        /* the process's monotonic clock */
    int64_t since_start_ns;  /* since the process started (or its first event) */
    uint64_t wall_ns;        /* Unix epoch ns, from the process's clocks */
    char *api;               /* "cudaMalloc", NULL: unknown */
    uint64_t requested_bytes;
    char *verdict;
    char *user_frame;        /* the program's own innermost frame, NULL: none */
    char **frames;           /* innermost first */
    size_t nframes;
};

struct vt_job_view {
    char *session;           /* NULL: traces of no session */
    bool has_session_start;
    uint64_t session_start_unix_ns;
    char *session_host, *session_command;
    uint64_t resolution_ns;  /* of the timelines */
    bool has_timelines;      /* the source computed them */
    struct vt_jv_process *processes;
    size_t nprocesses, processes_cap;
    struct vt_jv_failure *failures;
    size_t nfailures, failures_cap;
};

/* The figures the overview prints, derived from a view. */
#define VT_JOB_FOLLOWERS_MAX 64
#define VT_JOB_PHASES_MAX 16
struct vt_job_figures {
    size_t processes, holders;    /* of them with device memory */
    size_t ranks, hosts, gpus;
    long world_size;              /* -1: not said */
    size_t *order;                /* processes by rank, then host, then pid */
    size_t *failures;             /* failures by wall-clock time */
    /* device peaks of the holders (each its largest device) */
    uint64_t largest, smallest, median;
    size_t largest_process, smallest_process;
    struct vt_job_phase_figure {
        const char *name;
        size_t processes;
        uint64_t largest, median, smallest;
        size_t largest_process, smallest_process;
    } phases[VT_JOB_PHASES_MAX];
    size_t nphases, more_phases;
    /* the largest process's bytes per timeline column, from first_column */
    uint64_t first_column;
    uint64_t *column_max;
    size_t ncolumns;
};

/* A device's "parts" key (summaries and the job's JSON): null, or the
 * bytes under vt_jv_part_keys; (job_view.c). */
extern const char *const vt_jv_part_keys[VT_PART_COUNT_ - 1];
struct vt_json;
void vt_jv_parts_json(struct vt_json *j, const struct vt_jv_device *d);
/* A device's "contexts_bytes" and "contexts_unmeasured" where it says them
 * (summaries and the job's JSON); nothing otherwise (job_view.c). */
void vt_jv_contexts_json(struct vt_json *j, const struct vt_jv_device *d);

void vt_job_view_free(struct vt_job_view *v);
/* Moves src's processes and failures into dst (same session); src is left
 * empty. False if memory ran out. */
bool vt_job_view_merge(struct vt_job_view *dst, struct vt_job_view *src);
/* Leaves out of v the processes known already has (the same host and pid
 * in the same session: a summary read twice, or a copy of it), with their
 * failures; how many. */
size_t vt_job_view_drop_known(const struct vt_job_view *known, struct vt_job_view *v);
/* A new process / failure at the end of the view, zeroed (ranks -1); NULL
 * if memory ran out. */
struct vt_jv_process *vt_job_view_add_process(struct vt_job_view *v);
struct vt_jv_failure *vt_job_view_add_failure(struct vt_job_view *v);
/* Frees the last process / failure and takes it off the view. */
void vt_job_view_drop_last_process(struct vt_job_view *v);
void vt_job_view_drop_last_failure(struct vt_job_view *v);
/* The median of n sorted values, the mean of the middle two rounded down
 * when n is even. */
uint64_t vt_jv_median(const uint64_t *v, size_t n);
/* The process's largest device peak; false if it held no device memory. */
bool vt_jv_process_peak(const struct vt_jv_process *p, uint64_t *peak);
/* The figures of a view; false if memory ran out. Free with
 * vt_job_figures_free. */
bool vt_job_figures_of(const struct vt_job_view *v, struct vt_job_figures *f);
void vt_job_figures_free(struct vt_job_figures *f);
/* "GPU-1a2b3c4d" (the UUID's first 8 hex digits), "?" without one. */
const char *vt_jv_gpu_short(const struct vt_jv_gpu_id *g, char *buf, size_t n);
/* The UUID as 32 hex digits, and back (false: not one). */
void vt_jv_gpu_hex(const struct vt_jv_gpu_id *g, char out[2 * VT_UUID_SIZE + 1]);
bool vt_jv_gpu_parse(const char *hex, struct vt_jv_gpu_id *g);

#endif
