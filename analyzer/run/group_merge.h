/*
 * The merged pass over one group of traces (traces that may share a GPU:
 * one host, one session; analysis.c makes the groups).
 *
 * Each trace's replay depends only on its own records, in file order; only
 * the GPU totals (the combined peak, each process's bytes at it, which
 * GPU a ledger joins first, the other processes' bytes at a failure) need
 * the group's records in one time order. So the pass goes in windows of
 * time: each trace is replayed on its own up to the window's end, a run
 * of records at a time (its live set stays in the cache, and the reader's
 * batches are fed whole), and notes what its device ledgers did - a change
 * of a ledger's total, a failed allocation - in a small queue. Then the
 * notes of every trace are merged by (time, trace index, file order), the
 * order a record-by-record merge of the traces gives, and handed to the
 * GPU totals - GPU by GPU once each trace's notes are on one GPU, and
 * there in slices of the window's time: where the GPU's total plus each
 * trace's highest running sum within a slice stays within its peak and no
 * note is a failure, the order cannot change a figure and each trace's
 * notes go as one change (group_merge.c, "slices"); so do they where no
 * note lowers the total (a new peak at the slice's last rise, every trace
 * at its sum: hand_rising); a slice that fails both is cut in parts, each
 * tried the same way. The window's end
 * adapts so that a window holds about
 * VT_MERGE_WINDOW_EVENTS events a trace; a trace whose queue fills first
 * ends the window at its next record, so the queues stay bounded
 * (VT_MERGE_NOTES_MAX notes a trace) whatever the timestamps.
 *
 * A trace that reaches its end gives back its chunk buffer and its live
 * set at once (its notes may wait for the window's merge; neither is read
 * again), so that the others' notes take their room.
 *
 * With several threads, the traces of a window are replayed on them (a
 * trace on one thread at a time); the notes are merged on the caller's.
 * The figures are the same for any number of threads.
 *
 * Timestamps that go backwards within a trace (the writer never writes
 * them) still give one deterministic order, not necessarily the
 * record-by-record merge's.
 */
#ifndef VRAMTRACE_ANALYZER_GROUP_MERGE_H
#define VRAMTRACE_ANALYZER_GROUP_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"

#define VT_MERGE_WINDOW_EVENTS 32768
#define VT_MERGE_NOTES_MAX 65536

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
     * not known. NULL: every note is merged in order (group_merge.c,
     * "slices of a window where a GPU cannot reach a new peak"). */
    bool (*totals)(void *ctx, const struct vt_input *in, size_t ledger, uint64_t *now,
                   uint64_t *peak);
    void *ctx;
};

/* Replays the n traces (in index order) to their ends or errors (each
 * in->state says which) on up to nthreads threads. false: out of memory
 * before anything was read. */
bool vt_group_merge(struct vt_input *const *inputs, size_t n, size_t nthreads,
                    const struct vt_gpu_feed *feed);

#endif
