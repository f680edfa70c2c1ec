/*
 * The live-set rule: what each memory event does to the allocations live
 * in a process. One implementation, followed by the two that count a
 * process's memory: the analyzer's replay (analyzer/replay/replay.c, behind
 * every report, export, diff and `top`) and the tracer's line at exit
 * (preload/record/writer/exit_line.c), so that the peak the line says is the
 * report's (docs/user/REPORT.md, "The live set").
 *
 *  - A successful ALLOC makes (kind, address-or-handle) live with its size.
 *    A size-0 ALLOC of a key that is live is one more reference to it
 *    (cuMemRetainAllocationHandle); an ALLOC of another size at a live key
 *    replaces it (a free the tracer did not see, or an address the driver
 *    reused): the old allocation ends there.
 *  - A FREE ends its key's last reference (its own size is ignored:
 *    cuMemFree does not know it); a key not live in its own kind is looked
 *    for in the other kinds of its category (a graph allocation freed with
 *    cuMemFreeAsync, say). A stream-ordered free counts when it is issued.
 *  - A failed call, ALLOC or FREE, changes nothing.
 *  - A mapping (VA_MAP ALLOC, aux = the VMM handle) of a live handle is one
 *    more reference to it, ended by its unmap (VA_MAP FREE, which names only
 *    the address) or by a new mapping over the same address: a handle
 *    released while mapped holds its physical memory until then.
 *
 * The rule changes the live set and says what happened; what follows from
 * it (ledgers, sites, failures, peaks) is the caller's. The hot steps are
 * inline: the replay takes one per event.
 *
 * In common/ (common/README.md): compiled into the recorder
 * (preload/record) and the analyzer's replay stage.
 */
#ifndef VRAMTRACE_COMMON_LIVE_RULE_H
#define VRAMTRACE_COMMON_LIVE_RULE_H

#include <stdbool.h>
#include <stdint.h>

#include "live_set.h"
#include "pair_map.h"
#include "vramtrace/trace_format.h"

struct vt_live_rule {
    struct vt_live_set live;     /* (kind, addr) -> what is live there */
    struct vt_pair_map mappings; /* (VA_MAP address, 0) -> VMM handle */
};

void vt_live_rule_init(struct vt_live_rule *r);
void vt_live_rule_free(struct vt_live_rule *r);

/* ---- ALLOC: two steps, so that a caller can do its own work between the
 * rule's decision and the change (the replay finds the ledger and records a
 * failure there) ---- */

enum vt_live_alloc_step {
    VT_LIVE_RETAINED, /* one more reference to a live key: done */
    VT_LIVE_FAILED,   /* a failed call: nothing changes */
    VT_LIVE_TAKES,    /* *slot is where it goes: vt_live_rule_take */
};

/* What an ALLOC of (kind, addr, size) that returned result does. *slot:
 * the live entry it replaces or the empty slot it takes; valid until the
 * live set next changes. */
static inline enum vt_live_alloc_step vt_live_rule_alloc(struct vt_live_rule *r, uint8_t kind,
                                                        uint64_t addr, uint64_t size,
                                                        uint64_t result, struct vt_live **slot)
{
    struct vt_live *e = vt_live_lookup(&r->live, kind, addr);
    if (e && e->refs && result == 0 && size == 0) {
        e->refs++; /* a retained handle */
        return VT_LIVE_RETAINED;
    }
    if (result != 0)
        return VT_LIVE_FAILED;
    *slot = e;
    return VT_LIVE_TAKES;
}

/* Makes (kind, addr) live with size and one reference at the slot
 * vt_live_rule_alloc gave. Returns the entry (site and ledger are the
 * caller's to set), or NULL when out of memory. If a live allocation was
 * there, *replaced is set and *ended is a copy of it: it has ended. */
static inline struct vt_live *vt_live_rule_take(struct vt_live_rule *r, struct vt_live *slot,
                                                uint8_t kind, uint64_t addr, uint64_t size,
                                                bool *replaced, struct vt_live *ended)
{
    *replaced = slot && slot->refs;
    if (*replaced) {
        *ended = *slot;
        slot->refs = 1;
    } else if (!(slot = vt_live_insert(&r->live, slot, kind, addr))) {
        return NULL;
    }
    slot->size = size;
    return slot;
}

/* ---- FREE ---- */

enum vt_live_free_step {
    VT_LIVE_FREE_FAILED,    /* a failed call: nothing changes */
    VT_LIVE_FREE_REF,       /* one reference less; others remain */
    VT_LIVE_FREE_ENDED,     /* *ended: a copy of the allocation that ended */
    VT_LIVE_FREE_UNMATCHED, /* nothing live there */
};

/* Looks for (kind, addr) in the other kinds of kind's category and removes
 * it (out of line: rare). */
bool vt_live_rule_take_other_kind(struct vt_live_rule *r, uint8_t kind, uint64_t addr,
                                  struct vt_live *ended);

static inline enum vt_live_free_step vt_live_rule_free_event(struct vt_live_rule *r, uint8_t kind,
                                                             uint64_t addr, uint64_t result,
                                                             struct vt_live *ended)
{
    if (result != 0)
        return VT_LIVE_FREE_FAILED;
    struct vt_live *e = vt_live_lookup(&r->live, kind, addr);
    if (e && e->refs) {
        if (e->refs > 1) {
            e->refs--;
            return VT_LIVE_FREE_REF;
        }
        *ended = *e;
        vt_live_remove(&r->live, e);
        return VT_LIVE_FREE_ENDED;
    }
    return vt_live_rule_take_other_kind(r, kind, addr, ended) ? VT_LIVE_FREE_ENDED
                                                              : VT_LIVE_FREE_UNMATCHED;
}

/* ---- mappings ---- */

/* A VA_MAP event (op, the mapped address, aux = the handle). Returns true
 * when it ended an allocation (a released handle's last mapping went):
 * *ended is a copy of it. *out_of_memory is set when the mapping could not
 * be remembered. */
bool vt_live_rule_map(struct vt_live_rule *r, uint8_t op, uint64_t addr, uint64_t handle,
                      uint64_t result, struct vt_live *ended, bool *out_of_memory);

#endif
