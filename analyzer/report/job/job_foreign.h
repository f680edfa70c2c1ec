/*
 * A rank that made a context or allocated on a GPU that is not its own
 * (docs/user/LAUNCHERS.md, "A rank on another rank's GPU"): the stray
 * context every rank leaves on GPU 0 when it touches CUDA before
 * torch.cuda.set_device, a checkpoint loaded without map_location.
 *
 * A process's own GPU, in this order: the one CUDA_VISIBLE_DEVICES shows
 * it when it shows one; its LOCAL_RANK's ordinal where it used that
 * ordinal; else the device it allocated most on (its largest peak). Told
 * from the job view alone, so a report over node summaries tells the same.
 * GPUs are named as the machine numbers them where CUDA_VISIBLE_DEVICES is
 * a list of numbers (ordinal k is its k-th entry), else by the process's
 * ordinal.
 */
#ifndef VRAMTRACE_REPORT_JOB_FOREIGN_H
#define VRAMTRACE_REPORT_JOB_FOREIGN_H

#include <stdio.h>

#include "job_view.h"

struct vt_json;
/* The findings as text lines (none: nothing printed), and as the job's
 * JSON key "foreign" (an array, empty when none), the processes in order
 * (vt_job_figures.order: by rank, host, pid, whatever the source). */
void vt_job_foreign_text(const struct vt_job_view *v, const size_t *order, FILE *out);
void vt_job_foreign_json(const struct vt_job_view *v, const size_t *order, struct vt_json *j);
/* Under a failure's line: what other ranks held on the failing GPU then
 * (their contexts live at the failure, their allocations' peaks). */
void vt_job_foreign_failure_text(const struct vt_job_view *v, const size_t *order,
                                 const struct vt_jv_failure *x, FILE *out);
/* The same lines, each handed to line without indent or newline (the
 * page's first failure says them too). */
typedef void (*vt_job_line_fn)(void *ctx, const char *line);
void vt_job_foreign_failure_lines(const struct vt_job_view *v, const size_t *order,
                                  const struct vt_jv_failure *x, vt_job_line_fn line, void *ctx);

#endif
