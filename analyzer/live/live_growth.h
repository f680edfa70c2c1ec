/*
 * Growth per step, live: the device bytes a process holds each time a
 * repeating phase closes (its last open range ends), and whether they
 * climb from step to step - the slow leak that ends in an out-of-memory
 * error hours later.
 *
 * The phase that repeats most is the step. Its closings are followed as
 * they come (no history kept): the latest value, and the run of closings
 * whose values never fell, from its first. Growth is reported where that
 * run holds at least three closings and rose: (last - first) / (closings
 * in the run - 1) per step.
 */
#ifndef VRAMTRACE_LIVE_LIVE_GROWTH_H
#define VRAMTRACE_LIVE_LIVE_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Closings at least (the report's "at least three openings"). */
#define VT_LIVE_GROWTH_MIN_STEPS 3

/* One phase name of a process. */
struct vt_live_phase {
    uint64_t name;            /* string id in the process's trace */
    uint64_t open;            /* its ranges open now */
    uint64_t opened_order;    /* when it last opened from closed (counts up): the
                                 open phase with the largest is the innermost */
    uint64_t closings;        /* times it closed */
    uint64_t last_bytes;      /* device bytes at its latest closing */
    uint64_t run_first_bytes; /* ... at the first closing of the run that never fell */
    uint64_t run_closings;    /* closings in that run */
};

/* The phase closed with the process holding device_bytes. */
void vt_live_phase_closed(struct vt_live_phase *ph, uint64_t device_bytes);

struct vt_live_growth {
    bool has_step;            /* a phase repeated VT_LIVE_GROWTH_MIN_STEPS times */
    uint64_t step_name;       /* its string id */
    uint64_t steps;           /* its closings */
    int64_t per_step;         /* bytes per step; 0: not growing */
};

/* TODO(issue 24): this must become the report's "growth across steps"
 * (analyzer/replay/, being written at the same time) once it lands: the
 * same definition, one computation, called here instead of this one. */
struct vt_live_growth vt_live_growth_per_step(const struct vt_live_phase *phases, size_t n);

#endif
