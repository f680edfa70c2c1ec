/*
 * One replay of a vt_sim_input through the allocator model with one setting
 * and one capacity, and the search for the smallest capacity that runs
 * the whole input without an allocation failure.
 */
#ifndef VRAMTRACE_SIMULATE_SIM_RUN_H
#define VRAMTRACE_SIMULATE_SIM_RUN_H

#include "caching_allocator.h"
#include "sim_input.h"

#define VT_SIM_MAX_SAMPLES 200

enum vt_sim_verdict { VT_SIM_OK, VT_SIM_FRAGMENTED, VT_SIM_EXHAUSTED, VT_SIM_START_TOO_BIG };
const char *vt_sim_verdict_name(enum vt_sim_verdict v);

struct vt_sim_sample {
    size_t first_event;           /* the bucket's first event */
    uint64_t allocated, reserved; /* the bucket's maxima */
};

struct vt_sim_result {
    enum vt_sim_verdict verdict; /* VT_SIM_OK: no failure */
    size_t fail_event;           /* index into vt_sim_input.ev */
    struct vt_cache_failure why;
    uint64_t peak_reserved, peak_allocated;
    size_t peak_reserved_event;
    uint64_t free_at_peak, largest_free_at_peak; /* at the reserved peak */
    double fragmentation_at_peak;
    struct vt_cache_stats final;
    uint64_t max_segments;
    size_t unmatched_frees, seed_failures;
    size_t failed_requests_served; /* requests that failed when recorded, served here */
    /* snapshot input: how many of the model's new segments have the size
     * of the recorded segment_alloc at the same position */
    size_t segment_sizes_matching;
    /* ... and how many allocations the model placed exactly where PyTorch
     * did (same segment - a seeded one, or the k-th new one for the k-th
     * recorded segment_alloc - and same offset) */
    size_t placements_matching;
    struct vt_sim_sample samples[VT_SIM_MAX_SAMPLES];
    size_t nsamples;
    char error[128];              /* the model ran out of host memory */
};

/* Replays in (stopping at the first failure). Returns false only on an
 * internal error (res->error). */
bool vt_sim_run(const struct vt_sim_input *in, const struct vt_alloc_config *cfg, uint64_t capacity,
                size_t nsamples, struct vt_sim_result *res);

/* Snapshot input: new segments go where the recorded segment_allocs went
 * (default true; false: the model's own increasing addresses). */
extern bool vt_sim_use_recorded_addresses;

/* The smallest capacity (a multiple of 2 MiB) with no failure, by binary
 * search between the allocated peak and the unlimited run's reserved peak.
 * (Failure is not strictly monotonic in capacity - a flush can help a
 * smaller device - so this is the boundary the search finds.) */
uint64_t vt_sim_min_capacity(const struct vt_sim_input *in, const struct vt_alloc_config *cfg);

#endif
