/*
 * A process's CUDA contexts as the replay sees them: the live ones (a
 * primary context one entry, a reference per retain), and every context
 * the process ever made, with its stack, thread, life and cost, for the
 * views that name them (the job's contexts on a GPU that is not the rank's
 * own). A context of measured cost counts in its device's ledger from its
 * creation to its last release (replay.c), as the driver holds it: the
 * ledger's peaks, timelines and GPU totals are what nvidia-smi shows. One
 * whose cost was not measured counts in none, and every view that shows a
 * peak says how many were left out (vt_contexts_unmeasured).
 *
 * A context's cost, in the order it is had:
 *   - the drop of the driver's free memory across the call that created it
 *     (the tracer's size; docs/internals/HOOKS.md);
 *   - where that could not be measured (a process's first context: no
 *     current context to ask), NVML's count of the process's bytes on the
 *     device asked once the context existed (format version 6), less what
 *     the process's own allocations and its other contexts of known cost
 *     held there at that moment - the replay's live set then;
 *   - else not measured: 0, and every view says "cost not measured".
 * A context's creation also carries the device's free bytes once it
 * existed (version 6): the first of a device is what the process had
 * for itself there (fit's default capacity).
 */
#ifndef VRAMTRACE_ANALYZER_CONTEXTS_H
#define VRAMTRACE_ANALYZER_CONTEXTS_H

#include <stdbool.h>
#include <stdint.h>

enum vt_context_cost {
    VT_CONTEXT_COST_NOT_MEASURED = 0,
    VT_CONTEXT_COST_FREE_DROP = 1, /* the driver's free memory across the call */
    VT_CONTEXT_COST_NVML = 2,      /* NVML's process bytes less its allocations */
};
/* "not measured", "free-memory drop", "NVML" */
const char *vt_context_cost_name(enum vt_context_cost c);

/* A context the process made (retains of a live primary context are not
 * new contexts). */
struct vt_context_made {
    uint64_t handle;
    int64_t device;
    uint64_t size;             /* its cost, 0 when not measured */
    enum vt_context_cost cost;
    uint64_t stack, thread;    /* of the call that made it */
    uint64_t begin_ns, end_ns; /* end_ns: when its last reference went (ended) */
    bool ended;
    bool has_free_after;
    uint64_t free_after;       /* the device's free bytes once it existed */
};

/* A live context: its record in the list of those made. */
struct vt_context_entry {
    uint64_t handle;
    int64_t device;
    uint64_t size;        /* its cost, 0: not measured */
    uint32_t refs;
    uint32_t made;        /* index in vt_replay.contexts_made */
};

struct vt_replay;
struct vt_replay_mem;
struct vt_record;
/* A context event (kind VT_KIND_CONTEXT) that succeeded; rec: its whole
 * record where the reader gave one (the version 6 figures), else NULL;
 * allocated_bytes: what the process's allocations held on the event's
 * device then (the replay's device ledger less its contexts), which NVML's
 * figure includes. Returns the context made or ended by it (its entry in
 * vt_replay.contexts_made), NULL for a retain or release of a live one or
 * an event that names none: what the device ledger gains or loses. */
const struct vt_context_made *vt_contexts_event(struct vt_replay *rp,
                                                const struct vt_replay_mem *ev,
                                                const struct vt_record *rec,
                                                uint64_t allocated_bytes);
/* Whether a ledger's site (stack, thread) is a context's of measured
 * cost: its bytes are a context's, its count 0 (a context's call is never
 * an allocation's: another call, another stack). */
bool vt_contexts_site(const struct vt_replay *rp, uint64_t stack, uint64_t thread);
/* Contexts the process made on the device whose cost was not measured
 * (counted in no ledger). */
uint32_t vt_contexts_unmeasured(const struct vt_replay *rp, int64_t device);
/* The device's free bytes once the process's first context on it existed;
 * false if no context of it recorded them. */
bool vt_contexts_first_free(const struct vt_replay *rp, int64_t device, uint64_t *free_bytes);

#endif
