/* A process's contexts: live, made, and what each cost (contexts.h). */
#include "contexts.h"

#include "grow_array.h"
#include "replay.h"
#include "vramtrace/trace_format.h"

const char *vt_context_cost_name(enum vt_context_cost c)
{
    switch (c) {
    case VT_CONTEXT_COST_FREE_DROP:
        return "free-memory drop";
    case VT_CONTEXT_COST_NVML:
        return "NVML";
    case VT_CONTEXT_COST_NOT_MEASURED:
        break;
    }
    return "not measured";
}

static long find_live(const struct vt_replay *rp, uint64_t handle)
{
    for (size_t i = 0; i < rp->ncontexts; i++)
        if (rp->contexts[i].handle == handle)
            return (long)i;
    return -1;
}

/* NVML's bytes of the process on the device, less what its allocations
 * (allocated_bytes) and its other contexts of known cost held there now:
 * the new context's. */
static uint64_t nvml_cost(const struct vt_replay *rp, int64_t device, uint64_t process_bytes,
                          uint64_t allocated_bytes)
{
    uint64_t held = allocated_bytes;
    for (size_t i = 0; i < rp->ncontexts; i++)
        if (rp->contexts[i].device == device)
            held += rp->contexts[i].size;
    return process_bytes > held ? process_bytes - held : 0;
}

static const struct vt_context_made *context_made(struct vt_replay *rp, const struct vt_replay_mem *ev,
                         const struct vt_record *rec, uint64_t allocated_bytes)
{
    struct vt_context_made m = {
        .handle = ev->addr, .device = ev->device, .size = ev->size, .stack = ev->stack,
        .thread = ev->thread, .begin_ns = ev->time_ns,
        .cost = ev->size ? VT_CONTEXT_COST_FREE_DROP : VT_CONTEXT_COST_NOT_MEASURED,
    };
    /* version 6: the device figures, each + 1 (0: not had) */
    uint64_t free1 = rec ? rec->u.mem.free_bytes : 0, used1 = rec ? rec->u.mem.total_bytes : 0;
    if (free1) {
        m.has_free_after = true;
        m.free_after = free1 - 1;
    }
    if (!m.size && used1) {
        m.size = nvml_cost(rp, ev->device, used1 - 1, allocated_bytes);
        m.cost = m.size ? VT_CONTEXT_COST_NVML : VT_CONTEXT_COST_NOT_MEASURED;
    }
    if (!vt_grow_array((void **)&rp->contexts, &rp->contexts_cap, rp->ncontexts + 1,
                       sizeof *rp->contexts) ||
        !vt_grow_array((void **)&rp->contexts_made, &rp->contexts_made_cap,
                       rp->ncontexts_made + 1, sizeof *rp->contexts_made)) {
        rp->out_of_memory = true;
        return NULL;
    }
    rp->contexts_made[rp->ncontexts_made] = m;
    rp->contexts[rp->ncontexts++] = (struct vt_context_entry){
        ev->addr, ev->device, m.size, 1, (uint32_t)rp->ncontexts_made,
    };
    return &rp->contexts_made[rp->ncontexts_made++];
}

const struct vt_context_made *vt_contexts_event(struct vt_replay *rp,
                                                const struct vt_replay_mem *ev,
                                                const struct vt_record *rec,
                                                uint64_t allocated_bytes)
{
    if (ev->addr == 0)
        return NULL;
    long i = find_live(rp, ev->addr);
    if (ev->op == VT_OP_FREE) {
        /* a primary release, or cuCtxDestroy (which names no device) */
        if (i < 0 || --rp->contexts[i].refs != 0)
            return NULL;
        struct vt_context_made *m = &rp->contexts_made[rp->contexts[i].made];
        m->ended = true;
        m->end_ns = ev->time_ns;
        rp->contexts[i] = rp->contexts[--rp->ncontexts];
        return m;
    }
    if (i >= 0) { /* another retain of a live primary context */
        rp->contexts[i].refs++;
        return NULL;
    }
    return context_made(rp, ev, rec, allocated_bytes);
}

bool vt_contexts_site(const struct vt_replay *rp, uint64_t stack, uint64_t thread)
{
    for (size_t i = 0; i < rp->ncontexts_made; i++) {
        const struct vt_context_made *m = &rp->contexts_made[i];
        if (m->size && m->stack == stack && m->thread == thread)
            return true;
    }
    return false;
}

uint32_t vt_contexts_unmeasured(const struct vt_replay *rp, int64_t device)
{
    uint32_t n = 0;
    for (size_t i = 0; i < rp->ncontexts_made; i++)
        n += rp->contexts_made[i].device == device && rp->contexts_made[i].size == 0;
    return n;
}

bool vt_contexts_first_free(const struct vt_replay *rp, int64_t device, uint64_t *free_bytes)
{
    for (size_t i = 0; i < rp->ncontexts_made; i++) {
        const struct vt_context_made *m = &rp->contexts_made[i];
        if (m->device == device && m->has_free_after) {
            *free_bytes = m->free_after;
            return true;
        }
    }
    return false;
}
