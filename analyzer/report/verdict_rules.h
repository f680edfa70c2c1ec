/*
 * The verdicts a failure's own numbers cannot make alone, decided before
 * the allocator's table (report_verdict.c):
 *
 * - starved_by_cache: a request from outside PyTorch's caching allocator
 *   (NCCL, cuBLAS, cuDNN, any library or a raw cudaMalloc: a known
 *   library's frame innermost of any frame of the allocator, or no frame of
 *   the allocator and no flush-and-retry after the failure) failed while
 *   PyTorch's cache held enough reserved-but-unallocated bytes at its
 *   latest sample to make it fit: R <= F + (reserved - allocated).
 * - traced neighbours: other traced processes on the same GPU held at
 *   least what the request lacked (R - F - Ca > 0): contended, whatever
 *   the allocator's table says inside the failing process.
 */
#ifndef VRAMTRACE_REPORT_VERDICT_RULES_H
#define VRAMTRACE_REPORT_VERDICT_RULES_H

#include <stdbool.h>
#include <stddef.h>

#include "report.h"

/* Whether ooms[first] of l is starved by PyTorch's cache; *asker names
 * what asked ("NCCL (libnccl.so.2)", "a raw allocation"). */
bool vt_verdict_starved_by_cache(struct vt_report *rep, size_t input, const struct vt_oom *o,
                                 char *asker, size_t n);

/* Whether the traced neighbours held what the request lacked. */
bool vt_verdict_neighbours_contended(const struct vt_oom *o);

/* "rank 1 (pid 4242) held 646.00 MiB then, growing +8.00 MiB a step since
 * step 2 at keep (train.py:41)": the largest traced neighbour. */
void vt_verdict_neighbour_story(struct vt_report *rep, const struct vt_oom *o, char *buf,
                                size_t n);

/* The process's own growth, where it made the failure: "8.00 MiB a step
 * since step 2 at keep_for_metrics (train.py:41): 192.00 MiB of what was
 * held; the request would fit without it". False when it does not grow
 * or what it grew is less than the request needed beyond the device's
 * free bytes (R - F). */
bool vt_verdict_growth_caused(struct vt_report *rep, size_t input, const struct vt_oom *o,
                              char *buf, size_t n);

#endif
