/*
 * The phase half of a replay (replay_phases.c): which names are open, and
 * per ledger the largest total while each was open. Internal to replay.c.
 */
#ifndef VRAMTRACE_ANALYZER_REPLAY_PHASES_H
#define VRAMTRACE_ANALYZER_REPLAY_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* A range of this name opened / ended (any thread, any kind of range). */
void vt_phases_open(struct vt_replay *rp, uint64_t name, uint64_t time_ns);
void vt_phases_close(struct vt_replay *rp, uint64_t name);
/* A ledger was just created (the names open now are open in it too). */
void vt_phases_new_ledger(struct vt_replay *rp, struct vt_ledger *l);
/* An allocation: if the total exceeds the newest level, the levels below it
 * merge (the slow path is out of line: most allocations only compare). */
void vt_phases_raise(struct vt_replay *rp, struct vt_ledger *l, uint64_t time_ns);
static inline void vt_phases_after_alloc(struct vt_replay *rp, struct vt_ledger *l,
                                         uint64_t time_ns)
{
    if (l->nlevels && l->sites.total_bytes > l->levels[l->nlevels - 1].value)
        vt_phases_raise(rp, l, time_ns);
}
/* End of the data: the records of names still open get their peaks. */
void vt_phases_finish(struct vt_replay *rp);
void vt_phases_free_ledger(struct vt_ledger *l);

/* Grows a dynamic array to hold n+1 elements (replay.c). */
bool vt_replay_reserve(void **arr, size_t *cap, size_t n, size_t elem);

#endif
