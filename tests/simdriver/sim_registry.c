/* A sorted array of non-overlapping address ranges: exact removal by base
 * address and "which allocation contains this pointer" by binary search
 * (cuPointerGetAttribute, cuMemGetAddressRange need the latter). */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

struct vtsim_registry vtsim_allocations;

/* Index of the first range whose addr > key. */
static size_t upper_bound(const struct vtsim_registry *r, uint64_t key)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->v[mid].addr <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int vtsim_reg_add(struct vtsim_registry *r, const struct vtsim_range *range)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        struct vtsim_range *v = realloc(r->v, cap * sizeof *v);
        if (!v)
            return -1;
        r->v = v;
        r->cap = cap;
    }
    size_t at = upper_bound(r, range->addr);
    memmove(&r->v[at + 1], &r->v[at], (r->n - at) * sizeof *r->v);
    r->v[at] = *range;
    r->n++;
    return 0;
}

int vtsim_reg_remove(struct vtsim_registry *r, uint64_t addr, struct vtsim_range *out)
{
    size_t at = upper_bound(r, addr);
    if (at == 0 || r->v[at - 1].addr != addr)
        return -1;
    at--;
    if (out)
        *out = r->v[at];
    memmove(&r->v[at], &r->v[at + 1], (r->n - at - 1) * sizeof *r->v);
    r->n--;
    return 0;
}

struct vtsim_range *vtsim_reg_find(struct vtsim_registry *r, uint64_t addr)
{
    size_t at = upper_bound(r, addr);
    if (at == 0)
        return NULL;
    struct vtsim_range *c = &r->v[at - 1];
    uint64_t extent = c->size ? c->size : 1;
    return addr - c->addr < extent ? c : NULL;
}

void vtsim_reg_clear(struct vtsim_registry *r)
{
    r->n = 0;
}

const char *vtsim_kind_name(int kind)
{
    static const char *const names[] = {
        [VTSIM_KIND_DEVICE] = "device", [VTSIM_KIND_PITCH] = "pitch",
        [VTSIM_KIND_MANAGED] = "managed", [VTSIM_KIND_ASYNC] = "async",
        [VTSIM_KIND_ARRAY] = "array", [VTSIM_KIND_HOST] = "host",
        [VTSIM_KIND_REGISTERED] = "registered", [VTSIM_KIND_VA] = "va",
        [VTSIM_KIND_MAP] = "map",
    };
    return kind >= 0 && kind < (int)(sizeof names / sizeof names[0]) ? names[kind] : "?";
}
