/*
 * Where a group's merge (group_merge.h) hands its notes: the GPU totals,
 * told each device ledger's changes and failures in the group's time
 * order (analysis.c keeps them).
 */
#ifndef VRAMTRACE_ANALYZER_GPU_FEED_H
#define VRAMTRACE_ANALYZER_GPU_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_input;

/* What the GPU totals do with a trace's device ledgers, in the group's
 * time order. The replays' on_change and on_oom are the merge's while it
 * runs (and the ledgers' gpu pointers must stay NULL: every change of a
 * device ledger then goes through on_change). */
struct vt_gpu_feed {
    /* ledger's total changed by delta (a decrease wraps) at time_ns */
    void (*change)(void *ctx, struct vt_input *in, size_t ledger, uint64_t delta,
                   uint64_t time_ns);
    /* a device allocation of ledger failed: its ooms[oom] */
    void (*oom)(void *ctx, struct vt_input *in, size_t ledger, size_t oom);
    /* ledger's GPU: > 0 one of the group's (GPUs are told apart only by
     * these numbers), 0 not known yet, < 0 none (its changes and failures
     * touch no GPU). NULL: notes are merged across all GPUs at once. */
    long (*gpu_of)(void *ctx, const struct vt_input *in, size_t ledger);
    /* the total and the peak so far of ledger's GPU (gpu_of > 0); false:
     * not known. NULL: every note is merged in order (notes_merge.c,
     * "slices of a window where a GPU cannot reach a new peak"). */
    bool (*totals)(void *ctx, const struct vt_input *in, size_t ledger, uint64_t *now,
                   uint64_t *peak);
    void *ctx;
};

#endif
