/* Open-addressing pair -> value map; see pair_map.h. */
#include "pair_map.h"

#include <stddef.h>
#include <stdlib.h>

void vt_pair_map_init(struct vt_pair_map *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

void vt_pair_map_free(struct vt_pair_map *m)
{
    free(m->slots);
    vt_pair_map_init(m);
}

static struct vt_pair_slot *find(const struct vt_pair_map *m, uint64_t a, uint64_t b)
{
    uint64_t *value = vt_pair_map_get(m, a, b);
    return value ? (struct vt_pair_slot *)(void *)((char *)value -
                                                   offsetof(struct vt_pair_slot, value))
                 : NULL;
}

static void insert_new(struct vt_pair_slot *slots, size_t cap, struct vt_pair_slot entry)
{
    size_t mask = cap - 1;
    size_t i = entry.hash & mask;
    while (slots[i].used)
        i = (i + 1) & mask;
    slots[i] = entry;
}

static bool rehash(struct vt_pair_map *m, size_t ncap)
{
    struct vt_pair_slot *n = calloc(ncap, sizeof *n);
    if (!n)
        return false;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].used)
            insert_new(n, ncap, m->slots[i]);
    free(m->slots);
    m->slots = n;
    m->cap = ncap;
    return true;
}

bool vt_pair_map_put_new(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t value)
{
    if ((m->count + 1) * 4 > m->cap * 3 && !rehash(m, m->cap ? m->cap * 2 : 16))
        return false;
    insert_new(m->slots, m->cap, (struct vt_pair_slot){a, b, value, vt_pair_hash(a, b), true});
    m->count++;
    return true;
}

bool vt_pair_map_put(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t value)
{
    struct vt_pair_slot *s = find(m, a, b);
    if (s) {
        s->value = value;
        return true;
    }
    return vt_pair_map_put_new(m, a, b, value);
}

void vt_pair_map_remove_at(struct vt_pair_map *m, uint64_t *value)
{
    size_t mask = m->cap - 1;
    struct vt_pair_slot *slot =
        (struct vt_pair_slot *)(void *)((char *)value - offsetof(struct vt_pair_slot, value));
    size_t hole = (size_t)(slot - m->slots);
    /* Backward shift: move later members of the probe run into the hole
     * when their home slot allows it. */
    for (size_t j = (hole + 1) & mask; m->slots[j].used; j = (j + 1) & mask) {
        size_t home = m->slots[j].hash & mask;
        bool movable = hole <= j ? (home <= hole || home > j) : (home <= hole && home > j);
        if (movable) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].used = false;
    m->count--;
}

bool vt_pair_map_remove(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t *value)
{
    struct vt_pair_slot *s = find(m, a, b);
    if (!s)
        return false;
    if (value)
        *value = s->value;
    vt_pair_map_remove_at(m, &s->value);
    return true;
}
