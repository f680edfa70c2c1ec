/*
 * The tensor-level stream `vramtrace simulate` replays through the
 * allocator model, from either
 *  - a PyTorch memory snapshot (one device's trace: alloc, free_completed,
 *    and each burst of segment_free as a cache release - empty_cache() or
 *    the allocator's own flush), starting from the state reconstructed at
 *    the trace's start (segments and live blocks at their real addresses);
 *  - a vramtrace trace taken at tensor level (backend:cudaMallocAsync or
 *    PYTORCH_NO_CUDA_MEMORY_CACHING=1): the device-memory allocations of
 *    one device and the frees that end them, matched as the report's live
 *    set matches them (retained handles, mappings, frees that name no
 *    device: sim_input.c), starting empty.
 * For snapshots it also carries the truth the model is checked against:
 * the snapshot's own reserved bytes and segment events.
 */
#ifndef VRAMTRACE_SIMULATE_SIM_INPUT_H
#define VRAMTRACE_SIMULATE_SIM_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_policy.h"
#include "snapshot_analysis.h"

enum vt_sim_event_kind {
    VT_SIM_ALLOC,
    VT_SIM_FREE,
    VT_SIM_RELEASE_CACHE,
    /* A request that failed in the recorded run (a snapshot's oom entry):
     * tried in the model, and given back at once if it is served - so a
     * run says whether that request would have fit under its settings. */
    VT_SIM_FAILED_REQUEST,
};

struct vt_sim_event {
    uint8_t kind;
    uint64_t id;           /* matches alloc and free: the real address (snapshot),
                              the index of the ALLOC in vt_sim_input.ev (trace) */
    uint64_t size;         /* requested bytes (alloc) */
    int64_t stream;
    size_t source_index;   /* trace entry / record number in the input */
    const struct vt_pickle_value *frames; /* snapshot allocs: the Python stack */
    uint64_t stack;        /* trace allocs: the stack id */
};

struct vt_sim_seed_block {
    uint64_t addr, size, requested;
};

struct vt_sim_truth {
    uint64_t peak_reserved, initial_reserved, final_reserved, peak_allocated;
    size_t segment_allocs, segment_frees, initial_segments, final_segments;
    uint64_t *segment_sizes;   /* segment_alloc sizes in trace order */
    uint64_t *segment_addrs;   /* ... and addresses */
};

struct vt_sim_input {
    const char *path;
    bool from_snapshot;
    int64_t device;
    struct vt_sim_event *ev;
    size_t nev;
    size_t nalloc, nfree, nrelease, nfailed;
    struct vt_snap_seg *seed_segments;   /* snapshot only */
    size_t nseed_segments;
    struct vt_sim_seed_block *seed_blocks;
    size_t nseed_blocks;
    bool has_recorded_cfg;
    struct vt_alloc_config recorded_cfg;  /* the snapshot's allocator_settings */
    bool has_truth;
    struct vt_sim_truth truth;
    bool segment_level;    /* trace input whose sizes look like whole segments */
    struct vt_snap_analysis *snap;        /* keeps frames alive */
};

/* Reads INPUT (a snapshot pickle or a vramtrace trace, by content). device
 * < 0: the first device with events. Returns 0, or 2 with "FILE: byte N:
 * reason" in err. */
int vt_sim_input_load(struct vt_sim_input *in, const char *path, int64_t device, char *err,
                      size_t errlen);
void vt_sim_input_free(struct vt_sim_input *in);

#endif
