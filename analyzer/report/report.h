/*
 * Rendering an analysis: text for people (report_text.c) and JSON for
 * programs (report_json.c), with the helpers both share (report.c).
 * docs/user/REPORT.md describes every number.
 */
#ifndef VRAMTRACE_ANALYZER_REPORT_H
#define VRAMTRACE_ANALYZER_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis.h"
#include "input_tables.h"
#include "job_timelines.h"
#include "json_writer.h"
#include "format.h"
#include "symbolize.h"

#define VT_REPORT_MAX_TOP 1000

/* What `vramtrace report` was asked, by concern; the CLI's option table
 * (cli/cli_options.c) defines every option and fills these, and each
 * view reads only the parts it renders by. */

/* Which processes, ledgers and phase the report is about. */
struct vt_report_selection {
    const char *phase;       /* only this phase, in detail; NULL: all */
    bool has_device;
    int64_t device;
    bool has_pid;
    uint64_t pid;
    bool has_rank;           /* --rank: only the processes of this rank */
    uint64_t rank;
};

/* How the tables and stacks are laid out. */
struct vt_report_layout {
    size_t top;              /* rows of stacks per table */
    size_t text_frames;      /* frames per stack in the text report (0: all) */
    size_t width;            /* columns a text stack line may use (0: no limit) */
    bool full_stacks;        /* text: every frame, none folded, no width limit */
};

/* --at TIME or oom:N (text): each ledger's live set then, instead of its
 * peak (report_at.c). */
struct vt_report_moment {
    enum { VT_REPORT_AT_PEAK, VT_REPORT_AT_TIME, VT_REPORT_AT_OOM } at;
    uint64_t time_ns, oom;
};

struct vt_report_options {
    struct vt_report_selection select;
    struct vt_report_layout layout;
    struct vt_report_moment moment;
    struct vt_symbolize_options sym;
};

struct vt_moment_set;
struct vt_timeline_notes;

struct vt_report {
    const struct vt_analysis *a;
    const struct vt_report_options *opt;
    struct vt_symbolizer **sym;  /* per input, made on first use */
    bool one_job;                /* only the inputs of job (the text report, job by job) */
    struct vt_job_timelines *timelines; /* collected while the analysis ran, or NULL */
    /* Per job, the views already built (the HTML page's), which jobs[]
     * then prints instead of building them again; NULL: none. */
    struct vt_job_view *job_views;
    size_t job;
    /* Per input: nonzero if the HTML page details it (why: VT_DETAIL_* of
     * report_html.h); NULL: every selected input (the text and JSON
     * reports, and a page of no large job). */
    const unsigned char *detail;
    /* --at TIME: the live sets then, collected while the analysis ran */
    const struct vt_moment_set *moment_set;
    /* the HTML page: what its timelines are fed from, noted while the
     * analysis ran, or NULL */
    const struct vt_timeline_notes *timeline_notes;
    /* The allocator's view of the request told last (report_torch.c):
     * its snapshot read and its model run once, whichever views tell it;
     * freed by vt_report_free through forget_torch, which report_torch.c
     * sets when it makes one (report.c need not know it). */
    struct vt_torch_cache *torch;
    void (*forget_torch)(struct vt_report *rep);
};

void vt_report_init(struct vt_report *rep, const struct vt_analysis *a,
                    const struct vt_report_options *opt);
void vt_report_free(struct vt_report *rep);

int vt_report_text(struct vt_report *rep, FILE *out);
/* --at: a ledger's live set at that instant, as the peak's section tells
 * the peak (report_at.c); the rows' stacks written by print_sites. */
typedef void (*vt_report_sites_fn)(struct vt_report *rep, FILE *out, size_t input,
                                   const char *indent, const struct vt_site_bytes *top, size_t n);
void vt_report_at_text(struct vt_report *rep, FILE *out, size_t input, const struct vt_ledger *l,
                       struct vt_site_bytes *top, vt_report_sites_fn print_sites);
/* The whole JSON document for these traces alone (report_document.c). */
int vt_report_json(struct vt_report *rep, FILE *out);
/* The "processes" and "gpus" keys of the JSON document (rep NULL: empty
 * arrays); false if memory ran out. The document: report_document.h. */
bool vt_report_json_traces(struct vt_report *rep, struct vt_json *j);

/* ---- shared helpers ---- */

/* A failure's request (ooms[first .. end) of l) told with PyTorch's
 * allocator snapshot, when the Python bootstrap wrote one at it
 * (report_torch.c); nothing otherwise. */
struct vt_ledger;
void vt_report_torch_oom_text(struct vt_report *rep, FILE *out, size_t input,
                              const struct vt_ledger *l, size_t first, size_t end);
/* The same as the failure's "allocator_view" key: an object, or null when
 * the bootstrap left no mark at it. */
void vt_report_torch_oom_json(struct vt_report *rep, struct vt_json *j, size_t input,
                              const struct vt_ledger *l, size_t first, size_t end);

/* A failure judged from PyTorch's allocator's state at it (the OOM
 * snapshot the bootstrap wrote, read by report_torch.c): false when there
 * is none to read. */
struct vt_torch_decision {
    const char *verdict;          /* "fragmented", "exhausted", "limited" */
    uint64_t largest_free_block;  /* in the pool the request was cut from */
    char story[384];              /* why, in numbers */
    char next_step[768];
};
bool vt_report_torch_decide(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                            size_t first, size_t end, struct vt_torch_decision *d);

/* The allocator's state at a failure: its OOM snapshot's, after the
 * flush (report_torch.c); NULL when the bootstrap wrote none for it. The
 * report keeps it until it tells another failure. */
struct vt_snap_state;
const struct vt_snap_state *vt_report_torch_state(struct vt_report *rep, size_t input,
                                                  const struct vt_ledger *l, size_t first,
                                                  size_t end);

/* A mark as a person reads it: the bootstrap's "oom n=0 device=0 alloc=..."
 * in words, any other mark as it was recorded (report_torch.c). */
struct vt_mark;
const char *vt_report_mark_text(struct vt_report *rep, size_t input, const struct vt_mark *mk,
                                char *buf, size_t n);

/* The path of the last snapshot the bootstrap wrote for this process's
 * device (beside the trace): an OOM's of that device, or the one at exit
 * (--torch-history), which holds every device; false when none
 * (report_torch.c). */
bool vt_report_torch_last_snapshot(struct vt_report *rep, size_t input, int64_t device,
                                   char *path, size_t n);

/* Growth step over step in tensors: the allocated bytes of PyTorch's
 * allocator at each closing of the step phase (the phase the allocator's
 * samples count steps by: the optimizer where it closed, else the forward)
 * that the history of the last snapshot (--torch-history: an OOM's or the
 * one at exit) covers, judged by the replay's own rule (phase_growth.h):
 * one rate a step, as the samples' growth. Segments grow in steps the
 * tensors do not: a leak of 1 MiB a step is seen here at every step. The
 * sites are the allocator's: blocks kept across the growing steps, by
 * Python stack. (torch/tensor_growth.c) */
#define VT_TENSOR_GROWTH_SITES 4
struct vt_snap_analysis;
struct vt_snap_site;
struct vt_tensor_growth {
    bool known;          /* a snapshot with a timed history covers closings of the step */
    size_t phase;        /* the step phase: its index in l->phases */
    size_t closings;     /* its closings inside the history's window */
    bool grows;
    struct vt_growth_result g;
    bool sites_known;
    struct vt_snap_site *sites; /* at most VT_TENSOR_GROWTH_SITES; bytes: grown a step */
    size_t nsites;
    struct vt_snap_analysis *a; /* the snapshot the sites' frames are in */
};
/* false when the process left no snapshot whose history covers its step
 * (out->known false, nothing to free); else free it with
 * vt_report_tensor_growth_free. */
bool vt_report_tensor_growth(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                             struct vt_tensor_growth *out);
void vt_report_tensor_growth_free(struct vt_tensor_growth *t);
/* PyTorch's allocator's sites (blocks by Python stack) as a JSON array of
 * {bytes, count, before_history, frames} (report_torch.c). */
void vt_report_tensor_sites_json(struct vt_json *j, const struct vt_snap_site *sites, size_t n);

/* A failure's one verdict, as every view tells it (report_verdict.c): the
 * allocator's where its state at the failure is known, else the trace's
 * (the decision table of docs/user/REPORT.md, "Verdicts"); what the trace alone
 * infers is kept beside it, with why it gave way. */
struct vt_verdict_told {
    const char *verdict;          /* the decided verdict's name */
    const char *source;           /* "allocator", "allocator_samples" or "trace" */
    char story[384];              /* why, in words and numbers */
    char next_step[768];
    bool has_largest_free;        /* known only from the allocator */
    uint64_t largest_free_block;
    const char *trace_verdict;    /* the trace's own */
    const char *trace_story;
    const char *set_aside;        /* why the trace's own gave way (NULL: it did not) */
};
/* For the request ooms[first .. end) of l. */
void vt_report_verdict(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                       size_t first, size_t end, struct vt_verdict_told *v);
/* Why the trace's own verdict gave way to the allocator's. */
#define VT_TRACE_VERDICT_REASON                                                                \
    "the driver sees whole segments: free blocks inside the allocator's cache are invisible " \
    "to it"

bool vt_report_input_selected(const struct vt_report *rep, size_t input);
/* Selected, and detailed (rep->detail): the document's processes[] and
 * the page's timelines list these. */
bool vt_report_input_detailed(const struct vt_report *rep, size_t input);
/* False, with "vramtrace report: no pid 123; pids: 5678, 5679" (or the
 * devices, or the phases) on err, when --pid, --device or --phase select
 * nothing (report_filters.c). */
bool vt_report_filters_match(const struct vt_report *rep, FILE *err);
bool vt_report_ledger_selected(const struct vt_report *rep, const struct vt_ledger *l);

/* The sites a growing phase grew by (phase_growth.h), as rows: bytes is
 * the growth per opening, count 0; at most n (report.c). */
size_t vt_report_growth_rows(const struct vt_ledger *l, const struct vt_phase_peak *p,
                             struct vt_site_bytes *rows, size_t n);

/* Calls fn for each frame of a stack, innermost first, skipping the
 * tracer's own frames (libvramtrace.so); stops after max frames (0: all).
 * Returns the number of frames delivered. */
size_t vt_report_frames(struct vt_report *rep, size_t input, uint64_t stack, size_t max,
                        vt_frame_fn fn, void *ctx);

/* A stack of the report's, for the walks of stack_where.h (a vt_stack_walk
 * over vt_report_frames): vt_report_stack_walk(&(struct vt_report_stack){rep,
 * input, stack}, fn, ctx). */
struct vt_report_stack {
    struct vt_report *rep;
    size_t input;
    uint64_t stack;
};
size_t vt_report_stack_walk(void *src, vt_frame_fn fn, void *ctx);

/* The program's own innermost frame of a stack, "grow_kv_cache
 * (train.c:175)": the name every view gives the site (stack_where.h,
 * vt_stack_site_frame); NULL if none is known. */
const char *vt_report_user_frame(struct vt_report *rep, size_t input, uint64_t stack, char *buf,
                                 size_t n);
/* Whether a stack of the input can have Python frames as the report walks
 * them (vt_stack_frames_may_be_python): where not, nothing looks for them. */
bool vt_report_may_have_python(struct vt_report *rep, size_t input);
/* A thread's name ("main", "pt_autograd_0"...) or "thread N". */
const char *vt_report_thread_name(const struct vt_report *rep, size_t input, uint64_t thread,
                                  char *buf, size_t n);
/* The phase name for a string id (NULL if 0). */
const char *vt_report_string(const struct vt_report *rep, size_t input, uint64_t id);
/* A monotonic instant of the process as Unix-epoch microseconds, as
 * PyTorch's history stamps time_us; false without the process's two
 * clocks. */
bool vt_report_wall_us(const struct vt_process_info *p, uint64_t mono_ns, int64_t *out);
/* The rank and the local rank of a process (vt_process_rank), -1 if none. */
long vt_report_rank(const struct vt_report *rep, size_t input);
long vt_report_local_rank(const struct vt_report *rep, size_t input);

/* ---- the job (report_job.c, job_view.h) ---- */

/* The first thing a report over many ranks says: the ranks x GPUs table
 * (peak, capacity, failed requests), which rank failed first in time and
 * which followed, the spread of the ranks' peaks and of each phase's. It is
 * printed from a job view (job_view.h): of the traces here, or of the
 * summaries of a job's nodes (job_summary.h). */
struct vt_job_view;


/* The view of job `job` of the traces, as the report's filters select it
 * (timelines: copied into the view; NULL: none). False if memory ran out. */
bool vt_job_view_of_traces(struct vt_report *rep, size_t job, struct vt_job_timelines *timelines,
                           struct vt_job_view *v);
/* "=== job K of N: session ID on HOST: COMMAND ===" (job counts from 0). */
void vt_job_header_text(FILE *out, size_t job, size_t njobs, const char *session,
                        const char *host, const char *command);
/* Whether a job is worth its overview: several processes, or ranks. */
bool vt_job_worth_overview(const struct vt_report *rep, size_t job);
/* The overview, from the traces or from a view; filtered: --rank,
 * --pid or --device chose the processes (no "N of M ranks traced" note then). */
void vt_job_overview_text(struct vt_report *rep, FILE *out, size_t job);
void vt_job_view_text(const struct vt_job_view *v, bool filtered, FILE *out);
/* The "jobs" key of the JSON document, from the traces (rep NULL: an
 * empty array) or from views. */
void vt_jobs_json(struct vt_report *rep, struct vt_json *j);
void vt_job_views_json(struct vt_job_view *const *views, size_t n, struct vt_json *j);
/* A job's "session", "session_start_unix_ns", "session_host" and
 * "session_command" keys (the report's jobs[] and the summaries). */
void vt_job_session_json(const struct vt_job_view *v, struct vt_json *j);
/* argv joined by spaces into buf (or the exe path). */
const char *vt_report_command(const struct vt_report *rep, size_t input, char *buf, size_t n);
/* The numbers of an allocation failure in one line (report_oom.c); prev is
 * the ledger's previous failure (NULL if none). */
const char *vt_oom_narrative(const struct vt_oom *o, const struct vt_oom *prev, char *buf,
                             size_t n);
/* What to do about a failure judged verdict (its own, or the one the
 * report decided), in one or two sentences with its numbers
 * (report_oom.c). */
const char *vt_oom_next_step(struct vt_report *rep, size_t input, const struct vt_oom *o,
                             enum vt_verdict verdict, char *buf, size_t n);
/* How the program saw a failure's code: the runtime's name where a runtime
 * call asked, and the driver's ("cudaErrorMemoryAllocation from
 * CUDA_ERROR_OUT_OF_MEMORY"), or "error N" for a code no list knows. */
const char *vt_oom_error_name(const struct vt_oom *o, char *buf, size_t n);
/* Seconds since the process's first event, "+1.234s". */
const char *vt_format_reltime(const struct vt_report *rep, size_t input, uint64_t t, char *buf,
                              size_t n);

#endif
