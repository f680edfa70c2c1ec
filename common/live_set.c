/* The live set's table; see live_set.h. */
#include "live_set.h"

#include <stdlib.h>

void vt_live_set_init(struct vt_live_set *s)
{
    s->slots = NULL;
    s->cap = 0;
    s->shift = 32;
    s->load_inverse = VT_LIVE_LOAD_INVERSE;
    s->count = 0;
}

void vt_live_set_free(struct vt_live_set *s)
{
    unsigned load_inverse = s->load_inverse;
    free(s->slots);
    vt_live_set_init(s);
    s->load_inverse = load_inverse; /* a set freed and used again keeps its load */
}

static bool grow(struct vt_live_set *s)
{
    size_t ncap = s->cap ? s->cap * 2 : 16;
    if (ncap > (size_t)1 << 32)
        return false; /* the hash has 32 bits */
    struct vt_live *n = calloc(ncap, sizeof *n);
    if (!n)
        return false;
    unsigned nshift = s->shift - 1;
    if (!s->cap)
        nshift = 28; /* 16 slots */
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slots[i].refs)
            continue;
        size_t j = s->slots[i].hash >> nshift;
        while (n[j].refs)
            j = (j + 1) & (ncap - 1);
        n[j] = s->slots[i];
    }
    free(s->slots);
    s->slots = n;
    s->cap = ncap;
    s->shift = nshift;
    return true;
}

bool vt_live_set_reserve(struct vt_live_set *s, size_t count)
{
    if (s->cap)
        return true;
    size_t cap = 16;
    unsigned shift = 28; /* 16 slots, as grow makes them */
    while (count > cap / s->load_inverse) {
        if (cap >= (size_t)1 << 32)
            return false; /* the hash has 32 bits */
        cap *= 2;
        shift--;
    }
    struct vt_live *n = calloc(cap, sizeof *n);
    if (!n)
        return false;
    s->slots = n;
    s->cap = cap;
    s->shift = shift;
    return true;
}

struct vt_live *vt_live_insert_grow(struct vt_live_set *s, uint8_t kind, uint64_t addr)
{
    if (!grow(s))
        return NULL;
    return vt_live_insert(s, vt_live_lookup(s, kind, addr), kind, addr);
}
