/* The live-set rule's steps that are not on every event's path; see
 * live_rule.h. */
#include "live_rule.h"

void vt_live_rule_init(struct vt_live_rule *r)
{
    vt_live_set_init(&r->live);
    vt_pair_map_init(&r->mappings);
}

void vt_live_rule_free(struct vt_live_rule *r)
{
    vt_live_set_free(&r->live);
    vt_pair_map_free(&r->mappings);
}

bool vt_live_rule_take_other_kind(struct vt_live_rule *r, uint8_t kind, uint64_t addr,
                                  struct vt_live *ended)
{
    enum vt_category cat = vt_kind_category(kind);
    for (unsigned k = 1; k < VT_KIND_COUNT_; k++) {
        if (k == kind || vt_kind_category(k) != cat)
            continue;
        struct vt_live *e = vt_live_lookup(&r->live, (uint8_t)k, addr);
        if (e && e->refs) {
            *ended = *e;
            vt_live_remove(&r->live, e);
            return true;
        }
    }
    return false;
}

/* The mapping at addr goes (an unmap, or a new mapping over it): one
 * reference less to its handle; the last one ends the handle's memory. */
static bool unmap_at(struct vt_live_rule *r, uint64_t addr, struct vt_live *ended)
{
    uint64_t handle;
    if (!vt_pair_map_remove(&r->mappings, addr, 0, &handle))
        return false;
    struct vt_live *e = vt_live_lookup(&r->live, VT_KIND_VMM_PHYSICAL, handle);
    if (!e || !e->refs)
        return false;
    if (e->refs > 1) {
        e->refs--;
        return false;
    }
    /* released while mapped: this unmap is when the memory really goes */
    *ended = *e;
    vt_live_remove(&r->live, e);
    return true;
}

bool vt_live_rule_map(struct vt_live_rule *r, uint8_t op, uint64_t addr, uint64_t handle,
                      uint64_t result, struct vt_live *ended, bool *out_of_memory)
{
    if (result != 0)
        return false;
    bool ends = unmap_at(r, addr, ended);
    if (op == VT_OP_FREE)
        return ends;
    struct vt_live *e = vt_live_lookup(&r->live, VT_KIND_VMM_PHYSICAL, handle);
    if (!e || !e->refs)
        return ends; /* a handle created before tracing: nothing to hold */
    if (!vt_pair_map_put(&r->mappings, addr, 0, handle)) {
        *out_of_memory = true;
        return ends;
    }
    e->refs++;
    return ends;
}
