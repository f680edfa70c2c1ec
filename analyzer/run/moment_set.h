/*
 * Every ledger's live set at one instant of each process (`vramtrace
 * report --at TIME`): TIME counted from the process's start as the report
 * counts it (its first event when the start is unknown), the live set
 * after the last event at or before it - as `export --at TIME` takes it.
 *
 * Hooked into the analysis (vt_analysis_run_with's prepare): at each
 * change of a ledger up to the instant, that ledger's state is brought
 * to now (peak_tracker.h: a walk of the changes since the previous one,
 * O(1) amortized); past the instant nothing is done.
 */
#ifndef VRAMTRACE_RUN_MOMENT_SET_H
#define VRAMTRACE_RUN_MOMENT_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "replay.h"

struct vt_moment_set_input {
    struct vt_peak_state states[VT_LEDGERS_MAX]; /* per ledger of the replay */
    vt_live_fn prev;          /* the hook this one chains to */
    void *prev_ctx;
    const struct vt_moment_set *at;
};

struct vt_moment_set {
    uint64_t time_ns;         /* since the process started */
    struct vt_moment_set_input *inputs;
    size_t ninputs;
};

/* Room for n inputs; false when out of memory. */
bool vt_moment_set_init(struct vt_moment_set *at, size_t ninputs, uint64_t time_ns);
void vt_moment_set_free(struct vt_moment_set *at);
/* A vt_analysis_prepare_fn (ctx: the struct vt_moment_set). */
void vt_moment_set_prepare(void *ctx, struct vt_input *in);
/* The ledger's live set at the instant: NULL if nothing of it was live
 * then (no change of it at or before the instant). */
const struct vt_peak_state *vt_moment_set_ledger(const struct vt_moment_set *at, size_t input,
                                                 const struct vt_replay *rp,
                                                 const struct vt_ledger *l);
/* The instant as a time of the trace (ns), and whether the trace reaches it. */
uint64_t vt_moment_set_origin(const struct vt_replay *rp);
bool vt_moment_set_reached(const struct vt_moment_set *at, const struct vt_replay *rp);

#endif
