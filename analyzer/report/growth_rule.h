/*
 * One rule for what grows step over step in a process, for every view
 * (text, JSON, the page, the job view, summaries, `top`): the caching
 * allocator's own figures at the step's closings where the bootstrap
 * sampled them (replay/allocator_samples.h) - a leak where the allocated
 * bytes grow, the cache where only the reserved ones do - with the trace's
 * sites that grew meanwhile and when the device fills at that rate. A
 * process without samples has no allocator-level growth; its phases'
 * growth across openings (phase_growth.h) is told as before.
 */
#ifndef VRAMTRACE_REPORT_GROWTH_RULE_H
#define VRAMTRACE_REPORT_GROWTH_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

#define VT_GROWTH_TOLD_SITES 4

struct vt_growth_told {
    const char *level;        /* "allocated" (a leak) or "reserved" (the cache grows) */
    const char *step_phase;   /* the phase whose closings are the steps */
    struct vt_growth_result r; /* per_opening: bytes a step; from_opening: the step it begins */
    uint64_t total_bytes;     /* grown over the run: r.last_bytes - r.first_bytes */
    struct vt_site_bytes sites[VT_GROWTH_TOLD_SITES]; /* bytes: a step's growth */
    size_t nsites;
    bool sites_dropped;
    bool fills;               /* the device's capacity is known and the rate fills it */
    uint64_t fills_at_step;   /* the step (counted as from_opening is) it fills at */
    uint64_t fills_in_ns;     /* from the latest step, at the measured step time (0: unknown) */
    uint64_t step_ns;         /* the measured step time (0: unknown) */
    const struct vt_growth *grown; /* the figure that grew: its closings' times (vt_growth_times) */
};

/* The growth of a replay's samples; false when nothing grows (or no
 * samples). The forecast needs the sampled device's capacity, from the
 * trace's device record (device_total 0: unknown, no forecast). */
bool vt_growth_told_of(const struct vt_replay *rp, uint64_t device_total,
                       struct vt_growth_told *g);

#endif
