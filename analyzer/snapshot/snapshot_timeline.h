/*
 * One device of a snapshot as a timeline. The trace is a ring buffer that
 * usually starts mid-run, so the state at its start is reconstructed from
 * the final state (the snapshot's segments and blocks) minus the trace's
 * deltas, walking the trace backwards:
 *   alloc(addr)           -> the block did not exist before
 *   free_completed(addr)  -> the block was live before (with that size)
 *   segment_alloc(addr)   -> the segment did not exist before
 *   segment_free(addr)    -> it did
 *   segment_map/unmap     -> reserved bytes change by that size
 * A block counts as allocated from its alloc to its free_completed (the
 * allocator can only reuse it then; with record_stream that is later than
 * free_requested). Old traces without free_completed use free_requested.
 *
 * vt_snap_state_at() replays the events [0, upto) from that start, giving
 * the live blocks and segments at any moment.
 */
#ifndef VRAMTRACE_SNAPSHOT_SNAPSHOT_TIMELINE_H
#define VRAMTRACE_SNAPSHOT_SNAPSHOT_TIMELINE_H

#include "snapshot.h"

/* A segment of 2 MiB is a small-pool segment (large ones are >= 10 MiB). */
#define VT_SNAP_SMALL_SEGMENT ((uint64_t)2 << 20)

struct vt_snap_live {
    uint64_t addr, requested;
    int64_t stream;
    const struct vt_pickle_value
        *frames;                    /* the alloc's stack; NULL if allocated before the trace */
    bool before_window;             /* allocated before the first trace entry */
};

struct vt_snap_seg {
    uint64_t addr, size;
    int64_t stream;
    bool is_small, is_expandable;
};

struct vt_snap_state {
    struct vt_snap_live *live;
    size_t nlive;
    struct vt_snap_seg *segs;
    size_t nsegs;
    uint64_t allocated;  /* sum of requested sizes of live blocks */
    uint64_t reserved;   /* segment bytes (mapped bytes for expandable ones) */
};

struct vt_snap_timeline {
    const struct vt_snapshot *snap;
    int64_t device;
    const struct vt_snap_event *ev;
    size_t nev;
    bool free_on_request;          /* no free_completed in this trace */
    struct vt_snap_state initial;  /* before ev[0] */
    uint64_t final_allocated, final_reserved;
    size_t inconsistencies;        /* events that contradict the reconstruction */
};

/* Builds the start state of one device. Returns false when out of memory. */
bool vt_snap_timeline_init(struct vt_snap_timeline *t, const struct vt_snapshot *s, int64_t device);
void vt_snap_timeline_free(struct vt_snap_timeline *t);

/* Does event e end a block's life (free_completed, or free_requested in
 * traces without free_completed)? */
bool vt_snap_timeline_is_free(const struct vt_snap_timeline *t, const struct vt_snap_event *e);

/* The allocated and reserved totals after event e, from those before it:
 * an alloc adds its size to allocated, a free (as above) takes it away, a
 * segment_alloc or segment_map adds to reserved, a segment_free or
 * segment_unmap takes away (never below 0). The one rule for the walk of
 * the analysis (its peaks) and the HTML report's series. */
void vt_snap_totals_step(const struct vt_snap_timeline *t, const struct vt_snap_event *e,
                         uint64_t *allocated, uint64_t *reserved);

/* The state after applying events [0, upto). Blocks and segments sorted by
 * address. Returns false when out of memory. */
bool vt_snap_state_at(const struct vt_snap_timeline *t, size_t upto, struct vt_snap_state *out);
void vt_snap_state_free(struct vt_snap_state *s);

/* The devices of a snapshot: every index of device_traces, and every
 * device that has segments. Returns the count written to out (<= max). */
size_t vt_snap_devices(const struct vt_snapshot *s, int64_t *out, size_t max);

#endif
