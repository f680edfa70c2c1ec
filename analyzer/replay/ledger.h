/*
 * A ledger: the live bytes of one process in one (device, category), with
 * its peak, its phase peaks and its allocation failures. The replay
 * (replay.h) keeps one per pair it sees; the phase bookkeeping
 * (replay_phases.h) and the GPU merge (analysis.h) work on them.
 */
#ifndef VRAMTRACE_REPLAY_LEDGER_H
#define VRAMTRACE_REPLAY_LEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pair_map.h"
#include "peak_tracker.h"
#include "phase_growth.h"
#include "trace_reader.h"

struct vt_oom; /* replay.h */

struct vt_phase_peak {
    uint64_t name;        /* string id */
    uint64_t opened;      /* ranges of this name opened in the process, however
                           * early (set when the replay ends) */
    bool open_at_exit;    /* a range of it was still open at the end */
    struct vt_peak_state state;
    struct vt_growth growth; /* the ledger's bytes at its closings (phase_growth.h) */
};

/*
 * Open phase names whose peak since their mark is the same, in one ledger:
 * a run of consecutive marks (from first_mark to the next level's). See
 * replay_phases.c.
 */
struct vt_phase_level {
    uint64_t first_mark;   /* the oldest mark of the run (marks count up) */
    uint64_t value;        /* the ledger's largest total since each member's mark */
    uint64_t seq;          /* the ledger's change number when it was reached */
    struct vt_peak_state *state; /* the ledger then; NULL: reached when the
                                  * members opened, already offered to them */
    uint32_t members;      /* open names in the run */
};

struct vt_ledger {
    int64_t device;       /* ordinal, -1 unknown */
    enum vt_category category;
    struct vt_ledger_sites sites;
    struct vt_peak_state peak;
    uint64_t kind_bytes[VT_KIND_COUNT_];
    /* Of the live bytes, the process's contexts of measured cost on the
     * device (contexts.h), now and at the peak. */
    uint64_t context_bytes, peak_context_bytes;
    uint64_t allocs, frees, failed_allocs;
    struct vt_phase_peak *phases;  /* in the order they were first seen */
    size_t nphases, phases_cap;
    struct vt_pair_map phase_index; /* (name, 0) -> index in phases */
    struct vt_phase_level *levels;  /* oldest first: values never increase */
    size_t nlevels, levels_cap, empty_levels;
    struct vt_peak_state *spare_states[4]; /* released by levels, for reuse */
    size_t nspare_states;
    bool phase_records_made;       /* open names have records (first allocation) */
    uint64_t growth_copied;        /* words of sites the phases' growth copied */
    struct vt_oom *ooms;
    size_t nooms, ooms_cap;
    long pending_oom;     /* index of the failure whose window is open, -1 */
    /* A device ledger's place in the GPU merge (analysis.c), set by on_change
     * when it places the ledger; until then now is NULL. The replay then adds
     * each change itself (no call per event) and calls on_device_peak only
     * when the GPU's total passes its peak. */
    struct {
        uint64_t *now;        /* the GPU's device bytes, every process's */
        const uint64_t *peak; /* their maximum so far */
        uint64_t *share;      /* this process's part of *now */
    } gpu;
};

/* The phase peak of a name in a ledger, NULL if that phase never opened
 * (replay_phases.c). */
const struct vt_phase_peak *vt_ledger_phase(const struct vt_ledger *l, uint64_t name);

#endif
