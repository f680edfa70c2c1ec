/*
 * Analyzing a set of traces together: one replay per trace (process); the
 * changes of their device ledgers are merged in the order of the records'
 * monotonic timestamps (then the trace's index, then file order), so that
 * processes sharing one GPU form one timeline of that GPU.
 *
 * GPUs are identified by (hostname, device UUID): CLOCK_MONOTONIC is
 * system-wide on one host, so timestamps of processes on one host compare;
 * across hosts they do not, and a UUID names one physical GPU anyway. A
 * device without a UUID record forms a GPU of its own process.
 *
 * For each GPU: the combined peak of device memory (the sum over its
 * processes' device ledgers) and each process's bytes at that instant
 * (copied on a new maximum: O(processes) per new maximum).
 */
#ifndef VRAMTRACE_ANALYZER_ANALYSIS_H
#define VRAMTRACE_ANALYZER_ANALYSIS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "input_errors.h"
#include "process_env.h"
#include "replay.h"
#include "trace_reader.h"

struct vt_analysis;
struct vt_analysis_group;

struct vt_input {
    char *path;
    struct vt_reader *reader;
    struct vt_replay replay;
    struct vt_record peek;
    int state;            /* 1: peek holds a timed record, 0 end, -1 error */
    struct vt_analysis *analysis;
    size_t index;         /* in analysis->inputs */
    /* per ledger of the replay: its GPU's index + 1; 0 not known yet, -1 none
     * (32 bits: a job's inputs are allocated at once, 8,192 of them, and a
     * GPU is a struct of the analysis, never 2^31 of them) */
    int32_t ledger_gpu[VT_LEDGERS_MAX];
    size_t job;           /* in analysis->jobs: its session; VT_NO_JOB if the
                             trace broke before its process record */
    struct vt_analysis_group *group; /* during the run: the traces merged with it */
};

#define VT_NO_JOB SIZE_MAX

/* The traces of one session (docs/internals/FORMAT.md, "Sessions"): one job. Traces
 * of different sessions are never merged onto one GPU timeline. */
struct vt_job {
    const char *session;  /* VRAMTRACE_SESSION, NULL: traces without one */
    size_t ninputs;
};

struct vt_gpu {
    bool has_uuid;
    uint8_t uuid[VT_UUID_SIZE];
    const char *hostname;
    const char *name;     /* device name from the first trace that had it */
    const char *session;  /* its processes' (they are all of one session) */
    size_t job;           /* ... whose job in analysis->jobs */
    uint64_t total_bytes; /* device capacity, 0 unknown */
    uint64_t now_bytes, peak_bytes, peak_time_ns;
    bool has_peak;
    /* Per input of its group, the only ones that can use the GPU (inputs
     * first_input .. first_input + group_inputs - 1): a job of 8,192 ranks
     * on 1,024 GPUs holds 8 entries a GPU, not 8,192. Read them through
     * vt_gpu_now_of, vt_gpu_peak_of and vt_gpu_used_by. */
    size_t first_input, group_inputs;
    uint64_t *proc_now;   /* device bytes on this GPU now */
    uint64_t *proc_peak;  /* ... at the combined peak */
    bool *proc_used;      /* ever allocated here */
    size_t *members;      /* the inputs that used it (their indices), ascending */
    size_t nmembers, members_cap;
};

static inline bool vt_gpu_used_by(const struct vt_gpu *gp, size_t input)
{
    return input - gp->first_input < gp->group_inputs && gp->proc_used[input - gp->first_input];
}

/* An input's device bytes on the GPU now / at its combined peak. */
static inline uint64_t vt_gpu_now_of(const struct vt_gpu *gp, size_t input)
{
    return vt_gpu_used_by(gp, input) ? gp->proc_now[input - gp->first_input] : 0;
}

static inline uint64_t vt_gpu_peak_of(const struct vt_gpu *gp, size_t input)
{
    return vt_gpu_used_by(gp, input) ? gp->proc_peak[input - gp->first_input] : 0;
}

struct vt_analysis {
    struct vt_input *inputs;
    size_t ninputs;
    struct vt_gpu *gpus;
    size_t ngpus, gpus_cap;
    struct vt_pair_map gpu_of;  /* (input, device + 1) -> gpu index */
    bool out_of_memory;
    struct vt_job *jobs;  /* in order of first appearance among the inputs */
    size_t njobs;
    struct vt_analysis_group *groups; /* during the run (analysis.c) */
    size_t ngroups, *group_order;
    size_t nfiles;        /* the files the arguments stood for */
    size_t skipped;       /* of them, not read in full: unreadable, not a trace, corrupt */
    size_t not_read;      /* of the inputs, those not read at all: their group needed
                             more files open at once than the limit allows */
    struct vt_input_errors errors; /* every file's error: a few said, all kept */
    /* The stack nodes the traces have in common, kept once (stack_share.h);
     * NULL for one trace. */
    struct vt_stack_share *stacks;
    /* The fewest allocations the live set of a rank of the last group
     * replayed had room for: the live sets of the next group's ranks are
     * made that big at once (a job's ranks are alike). */
    size_t live_hint;
};

/* Opens every path (a directory stands for the *.vtrace files in it, in
 * name order) and runs the merged replay.
 *
 * Traces that cannot share a GPU (another host or session: the process
 * record's, read from each trace's head first) are independent groups,
 * replayed on a pool of threads. A group of several traces has a crew: the
 * threads that replay its traces together (group_merge.h: each trace on
 * its own in windows of time, their GPU notes merged), one for every 4
 * traces, up to every thread. A group takes its crew's threads before it
 * starts, so a big group runs alone on all of them and small ones side by
 * side: memory holds the groups in flight, and more threads bring no more
 * of them. How many
 * threads: thread_count.h (the CPUs free of other work, 1 for small work;
 * VRAMTRACE_ANALYZER_THREADS=N sets it; 1: everything on the calling
 * thread, no read-ahead either).
 * A group's chunk buffers are freed when it ends, so memory holds the
 * groups in flight, not every trace's. The figures are the same for any
 * number of threads.
 *
 * Open files likewise: each file is opened once to check its preamble and
 * closed (vt_reader_suspend), its head read on a thread (one file open per
 * thread), and opened again only while its group is replayed. A group needs
 * all its files at once (its traces are merged record by record); the
 * groups in flight share the room the soft RLIMIT_NOFILE leaves (less the
 * files open and 16 spare), a group waiting for others to end if it must.
 * If the biggest groups in flight need more, the soft limit is raised
 * toward the hard one first (for this process only). A group bigger than
 * all of the room (thousands of ranks on one host, one session) is not
 * read: one line names its host, session, size, the limit and the
 * `ulimit -n` that would do, and its files count as skipped (a->not_read
 * too). A file deleted or replaced between the first look and its group's
 * replay is that file's error (below).
 *
 * Returns 0 if every file was read to its end (truncated files included),
 * 2 if a file could not be opened (or opened again) or is corrupt, or a
 * group was not read; each file's problem is printed to err as
 * "vramtrace: FILE: byte N: reason". On return the analysis holds what was
 * read either way: the files that could be opened, a corrupt one up to its
 * error (a->skipped counts the files not read in full). */
int vt_analysis_run(struct vt_analysis *a, char *const *paths, size_t npaths, FILE *err);
/* The same, calling prepare(ctx, in) for each input once its replay is set
 * up and before any record is fed: a consumer sets the replay's on_live and
 * on_range hooks there (the HTML report's timeline, run/timeline.h). */
typedef void (*vt_analysis_prepare_fn)(void *ctx, struct vt_input *in);
int vt_analysis_run_with(struct vt_analysis *a, char *const *paths, size_t npaths, FILE *err,
                         vt_analysis_prepare_fn prepare, void *ctx);
void vt_analysis_free(struct vt_analysis *a);

/* The GPU a ledger's device belongs to (NULL if none). */
const struct vt_gpu *vt_analysis_gpu_of(const struct vt_analysis *a, size_t input, int64_t device);

#endif
