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
 * notes go as one change (notes_merge.c, "slices"); so do they where no
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
#include "gpu_feed.h"

#define VT_MERGE_WINDOW_EVENTS 32768
#define VT_MERGE_NOTES_MAX 65536

/* Replays the n traces (in index order) to their ends or errors (each
 * in->state says which) on up to nthreads threads. false: out of memory
 * before anything was read. */
bool vt_group_merge(struct vt_input *const *inputs, size_t n, size_t nthreads,
                    const struct vt_gpu_feed *feed);

#endif
