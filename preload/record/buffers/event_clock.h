/*
 * The event clock: what a hook stamps an event with, and how the writer
 * turns that stamp into the trace's CLOCK_MONOTONIC nanoseconds.
 *
 * clock_gettime(CLOCK_MONOTONIC) costs ~45 ns per call on a VM, a third of
 * the hook's budget; rdtsc costs ~24. So when the TSC can stand in for
 * the monotonic clock (vt_clock_setup: x86-64 and the kernel's clocksource
 * is the TSC, which means the kernel checked that it is invariant and
 * synchronised across CPUs - CLOCK_MONOTONIC is itself computed from it),
 * hooks store raw TSC ticks and the writer converts them. Otherwise
 * (another architecture or clocksource, VRAMTRACE_CLOCK=monotonic) ticks
 * ARE monotonic nanoseconds and conversion is the identity.
 *
 * Conversion needs no TSC frequency: the writer takes a calibration point
 * (ticks and monotonic ns read back to back) at start and at every round,
 * and converts an event by linear interpolation between the two points
 * that bracket it - exact at each point, monotone in the ticks, and
 * between two points off by no more than the change of CLOCK_MONOTONIC's
 * own rate within that interval (the kernel's NTP slewing: nanoseconds
 * normally, at most 500 ppm of the interval if the rate is stepped).
 * writer.c makes each round's cutoff the newest point's ticks, so every
 * event it writes lies between two of its points (the last two, or an
 * earlier round's for an event a round held back behind a pending free).
 */
#ifndef VRAMTRACE_PRELOAD_EVENT_CLOCK_H
#define VRAMTRACE_PRELOAD_EVENT_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* 1: ticks are the TSC; 0: ticks are CLOCK_MONOTONIC ns. Changed only by
 * vt_clock_setup while nothing is recorded. */
extern atomic_int vt_clock_tsc;

/* Decides the clock from VRAMTRACE_CLOCK's value: "auto" (the TSC when the
 * kernel's clocksource is tsc), "tsc" (the TSC on any x86-64, on the
 * user's word that it is synchronised), "monotonic". A bad value says so
 * on stderr and counts as auto; verbose says which clock is in effect.
 * Call before recording starts. */
void vt_clock_setup(const char *choice, bool verbose);
/* "tsc" or "monotonic": the clock in effect. */
const char *vt_clock_name(void);

static inline uint64_t vt_clock_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The hook's stamp. Plain rdtsc may execute a little before the
 * instructions that precede it; thread_buffer.c uses it only where that
 * cannot move an event across the writer's cutoff (see vt_tb_begin). */
static inline uint64_t vt_clock_ticks(void)
{
#if defined(__x86_64__)
    if (atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed)) {
        uint32_t lo, hi;
        __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
        return (uint64_t)hi << 32 | lo;
    }
#endif
    return vt_clock_monotonic_ns();
}

/* A stamp read only after every earlier instruction has completed (what
 * the vDSO's clock_gettime does too): after a lock the hook waited for,
 * the stamp is later than everything the lock's holder did before. */
static inline uint64_t vt_clock_ticks_ordered(void)
{
#if defined(__x86_64__)
    if (atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed)) {
        uint32_t lo, hi;
        __asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
        return (uint64_t)hi << 32 | lo;
    }
#endif
    return vt_clock_monotonic_ns();
}

/* A moment in both clocks. */
struct vt_clock_point {
    uint64_t ticks;
    uint64_t ns; /* CLOCK_MONOTONIC */
};

/* Now, in both clocks (the writer; a few clock reads, no lock: fine in
 * the emergency flush too). The ticks are read before and after the ns,
 * ordered, best of three tries; they are no later than the moment the call
 * returns, so they serve as the writer's cutoff. */
struct vt_clock_point vt_clock_calibrate(void);

/* The line between two points, its slope divided out once: a writer's
 * round converts all its events between the same two points, and a
 * 128-bit division per event was most of the conversion's cost. */
struct vt_clock_line {
    struct vt_clock_point lo, hi;
    uint64_t span_ticks, span_ns; /* 0, 0: degenerate (every tick -> an end) */
    uint64_t whole, frac;         /* span_ns / span_ticks as whole + frac / 2^64,
                                   * frac rounded down */
};

void vt_clock_line_init(struct vt_clock_line *l, struct vt_clock_point lo,
                        struct vt_clock_point hi);

/* ticks as ns by linear interpolation between lo and hi (lo earlier),
 * floor(dt * span_ns / span_ticks) exactly, clamped to [lo.ns, hi.ns]
 * outside them; exact at both points, never decreasing in ticks, no
 * division by zero when lo.ticks == hi.ticks. */
uint64_t vt_clock_line_ns(const struct vt_clock_line *l, uint64_t ticks);

/* The same for one conversion. */
uint64_t vt_clock_interpolate(struct vt_clock_point lo, struct vt_clock_point hi,
                              uint64_t ticks);

/* The ns between two stamps from <= to at the line's rate: to may lie past
 * hi (a free that returned after the round's point), where
 * vt_clock_line_ns would clamp. The difference itself without the TSC; 0
 * for a degenerate line. */
uint64_t vt_clock_line_span_ns(const struct vt_clock_line *l, uint64_t from, uint64_t to);

/* An event's stamp as CLOCK_MONOTONIC ns: vt_clock_line_ns with the TSC,
 * the stamp itself without. */
static inline uint64_t vt_clock_to_ns(const struct vt_clock_line *l, uint64_t ticks)
{
    if (!atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed))
        return ticks;
    return vt_clock_line_ns(l, ticks);
}

#endif
