/*
 * The rank that diverged (docs/user/REPORT.md, "Divergence"): in a job of
 * three or more ranks, each call site's bytes at a rank's peak and its
 * growth a step, compared with the median rank's. A rank departs at a site
 * when its bytes there are more than VT_DIVERGENCE_PERCENT above the
 * median rank's and at least VT_DIVERGENCE_FLOOR_PERCENT of the median
 * device peak (F), its own device peak at least F above the median's (a
 * rank that holds a site at another moment of its step holds no more for
 * it), or when it grows a step more than VT_DIVERGENCE_PERCENT
 * faster than the median rank and what it grew so beyond it reaches that
 * floor: ranks whose sizes differ by a few percent (sequence lengths,
 * shards) depart nowhere.
 *
 * Sites are compared by name (vt_stack_site_frame, the one naming rule),
 * so ranks whose stacks differ in addresses agree; a site's growth is the
 * one the replay measures (phase_growth.h; PyTorch's allocator's where the
 * bootstrap sampled it, growth_rule.h). The figures ride in the job view
 * (struct vt_jv_site), so a report over summaries says what the traces say.
 */
#ifndef VRAMTRACE_REPORT_DIVERGENCE_H
#define VRAMTRACE_REPORT_DIVERGENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job_view.h"
#include "json_writer.h"
#include "replay.h"

#define VT_DIVERGENCE_PERCENT 10
#define VT_DIVERGENCE_FLOOR_PERCENT 2
/* Sites a process keeps in its view: those holding at least this share of
 * its device peak (permille), and those that grow. Half the floor, so a
 * site left out of one rank's view is far below what a departure needs. */
#define VT_JV_SITE_KEEP_PERMILLE 10
/* A few ranks more than the median rank, each named in the text. */
#define VT_DIVERGENCE_SHOWN 8

/* ---- a process's sites (job_sites.c) ---- */

/* The name of a stack, as every view names its site; NULL if none. */
typedef const char *(*vt_jv_site_namer)(void *ctx, uint64_t stack, char *buf, size_t n);
/* The sites of one replayed process into p->sites (sorted by name):
 * bytes summed by name over its device ledgers at their peaks (all of
 * them, whatever --device shows: a summary holds them so), growth per
 * step from its growing phases and its allocator's samples;
 * device_total: the capacity of the device the allocator was sampled on
 * (0: unknown). False if memory ran out. */
bool vt_jv_sites_of_replay(const struct vt_replay *rp, uint64_t device_total,
                           vt_jv_site_namer name, void *ctx, struct vt_jv_process *p);
/* A process's "sites" key of a summary. */
void vt_jv_sites_json(struct vt_json *j, const struct vt_jv_process *p);

/* ---- the rule (divergence.c) ---- */

struct vt_divergence {
    size_t process;              /* index in the view's processes */
    const char *site;            /* the process's site's name */
    uint64_t bytes_above_median; /* at its peak, beyond the median rank's */
    uint64_t bytes_per_step;     /* beyond the median rank's; 0: not by growth */
    uint64_t from_step;          /* where that growth began; 0: not by growth */
};

struct vt_divergences {
    struct vt_divergence *d;     /* in the overview's order of ranks, then most first */
    size_t n;
    uint64_t floor_bytes;        /* VT_DIVERGENCE_FLOOR_PERCENT of the median device peak */
};

/* The departures of a view (order: f->order); false if memory ran out. */
bool vt_divergences_of(const struct vt_job_view *v, const struct vt_job_figures *f,
                       struct vt_divergences *out);
void vt_divergences_free(struct vt_divergences *d);
/* "rank 5 (pid 4242) diverges: +24.00 MiB a step from step 40 at
 * cache_batch (data.py:17), 960.00 MiB above the median rank at its peak";
 * "rank 0 (pid 41) diverges: +1.50 GiB above the median rank at its peak,
 * at gather_outputs (train.py:60)". Returns buf. */
const char *vt_divergence_say(const struct vt_job_view *v, const struct vt_divergence *d,
                              char *buf, size_t n);
/* The job overview's lines, and the job's "divergence" key. */
void vt_divergence_text(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out);
void vt_divergence_json(const struct vt_job_view *v, const struct vt_job_figures *f,
                        struct vt_json *j);

#endif
