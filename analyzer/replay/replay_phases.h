/*
 * The phase half of a replay: which names are open, and per ledger the
 * largest total while each was open (replay_phases.c explains how). The
 * replay (replay.c) calls it; it knows ledgers, not the replay.
 * Functions that allocate return false when memory ran out (the replay
 * then reports itself incomplete).
 */
#ifndef VRAMTRACE_REPLAY_REPLAY_PHASES_H
#define VRAMTRACE_REPLAY_REPLAY_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "pair_map.h"

/* The names open now in one process. */
struct vt_open_phases {
    struct vt_open_name {
        uint64_t name;   /* string id */
        uint64_t count;  /* its ranges open now */
        uint64_t mark;   /* when it opened from closed (marks count up) */
    } *names;
    size_t n, cap;
    struct vt_pair_map index;  /* (name, 0) -> index in names */
    struct vt_pair_map opened; /* (name, 0) -> ranges of it opened so far */
    uint64_t marks_made;       /* the last mark given (0: none yet) */
};

void vt_open_phases_init(struct vt_open_phases *ph);
/* The name open longest (the oldest mark) and the one opened last (the
 * newest), 0 when none is open: a failure's outermost and innermost phase
 * where its thread pushed none. */
uint64_t vt_open_phases_outermost(const struct vt_open_phases *ph);
uint64_t vt_open_phases_innermost(const struct vt_open_phases *ph);
void vt_open_phases_free(struct vt_open_phases *ph);

/* A range of this name opened / ended (any thread, any kind of range);
 * every ledger of the process is visited. */
bool vt_phases_open(struct vt_open_phases *ph, struct vt_ledger *ledgers, size_t nledgers,
                    uint64_t name, uint64_t time_ns);
bool vt_phases_close(struct vt_open_phases *ph, struct vt_ledger *ledgers, size_t nledgers,
                     uint64_t name, uint64_t time_ns);
/* A ledger was just created (the names open now are open in it too). */
bool vt_phases_new_ledger(const struct vt_open_phases *ph, struct vt_ledger *l);
/* An allocation: if the total exceeds the newest level, the levels below it
 * merge (the slow path is out of line: most allocations only compare). */
bool vt_phases_raise(const struct vt_open_phases *ph, struct vt_ledger *l, uint64_t time_ns);
static inline bool vt_phases_after_alloc(const struct vt_open_phases *ph, struct vt_ledger *l,
                                         uint64_t time_ns)
{
    if (l->nlevels && l->sites.total_bytes > l->levels[l->nlevels - 1].value)
        return vt_phases_raise(ph, l, time_ns);
    return true;
}
/* End of the data: the records of names still open get their peaks, and
 * every record its process-wide count of openings. */
bool vt_phases_finish(const struct vt_open_phases *ph, struct vt_ledger *ledgers,
                      size_t nledgers);
void vt_phases_free_ledger(struct vt_ledger *l);

#endif
