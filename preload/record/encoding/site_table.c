/* Allocation sites, found by hash. See site_table.h. */
#include "site_table.h"

#include <stdlib.h>
#include <string.h>

/* One hash an event, on the writer thread: three multiplies. Stack and
 * thread tell nearly all sites apart; the other fields are few and small
 * (op, kind, device, api ids), and result and aux are 0 but for failures
 * and a few kinds. */
static uint64_t site_hash(const struct vt_site_fields *s)
{
    uint64_t h = (s->stack ^ s->thread << 40) * 0x9e3779b97f4a7c15ull;
    h ^= (s->api ^ s->label << 16 ^ (uint64_t)s->op << 32 ^ (uint64_t)s->kind << 40 ^
          s->device1 << 48) * 0xbf58476d1ce4e5b9ull;
    h ^= (s->result ^ s->aux) * 0x94d049bb133111ebull;
    return h ^ h >> 32;
}

/* The slot of s, or of the empty slot where it would go. */
static size_t find_slot(const struct vt_site_table *t, const struct vt_site_fields *s, uint64_t h)
{
    size_t mask = t->nslots - 1, i = (size_t)h & mask;
    while (t->slots[i] != 0 && !vt_site_equal(&t->sites[t->slots[i]], s))
        i = (i + 1) & mask;
    return i;
}

static bool rehash(struct vt_site_table *t)
{
    size_t nslots = t->nslots ? 2 * t->nslots : 1024;
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return false;
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    for (size_t id = 1; id <= t->n; id++) {
        const struct vt_site_fields *s = &t->sites[id];
        t->slots[find_slot(t, s, site_hash(s))] = (uint32_t)id;
    }
    return true;
}

uint64_t vt_site_table_find(struct vt_site_table *t, const struct vt_site_fields *s, bool *added)
{
    *added = false;
    /* at most half full: probes stay short */
    if (2 * (t->n + 1) > t->nslots && !rehash(t))
        return 0;
    uint64_t h = site_hash(s);
    size_t slot = find_slot(t, s, h);
    if (t->slots[slot] != 0) {
        t->cache[vt_site_cache_slot(s)] = t->slots[slot];
        return t->slots[slot];
    }
    if (t->n + 1 >= t->cap) {
        if (t->n + 1 > UINT32_MAX - 1)
            return 0;
        size_t cap = t->cap ? 2 * t->cap : 256;
        struct vt_site_fields *e = realloc(t->sites, cap * sizeof *e);
        if (!e)
            return 0;
        t->sites = e;
        t->cap = cap;
    }
    uint64_t id = ++t->n;
    t->sites[id] = *s;
    t->slots[slot] = (uint32_t)id;
    t->cache[vt_site_cache_slot(s)] = (uint32_t)id;
    *added = true;
    return id;
}

void vt_site_table_free(struct vt_site_table *t)
{
    free(t->sites);
    free(t->slots);
    memset(t, 0, sizeof *t);
}
