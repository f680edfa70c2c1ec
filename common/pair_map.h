/*
 * An open-addressing hash map from a pair of 64-bit keys to a 64-bit value
 * (linear probing, backward-shift deletion: no tombstones, so a map that
 * sees millions of insert/remove cycles stays as small as its live set).
 * Each slot keeps its key's hash, so deletions and growth never rehash keys.
 */
#ifndef VRAMTRACE_COMMON_PAIR_MAP_H
#define VRAMTRACE_COMMON_PAIR_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_pair_slot {
    uint64_t a, b, value;
    uint32_t hash;  /* low bits of the key's hash: its home slot */
    bool used;
};

struct vt_pair_map {
    struct vt_pair_slot *slots;
    size_t cap;   /* power of two, or 0 */
    size_t count;
};

void vt_pair_map_init(struct vt_pair_map *m);
void vt_pair_map_free(struct vt_pair_map *m);
static inline uint32_t vt_pair_hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 31;
    h *= 0xd6e8feb86659fd93ull;
    h ^= h >> 32;
    return (uint32_t)h;
}

/* Pointer to the value, or NULL if absent. Valid until the next insert or
 * remove. Inline: the analyzer looks up once or twice per event. */
static inline uint64_t *vt_pair_map_get(const struct vt_pair_map *m, uint64_t a, uint64_t b)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = vt_pair_hash(a, b) & mask;; i = (i + 1) & mask) {
        struct vt_pair_slot *s = &m->slots[i];
        if (!s->used)
            return NULL;
        if (s->a == a && s->b == b)
            return &s->value;
    }
}
/* Inserts or overwrites. Returns false when out of memory. */
bool vt_pair_map_put(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t value);
/* Inserts a key the caller knows is absent (get() just said so and nothing
 * changed the map since): saves the lookup put() would do. Returns false
 * when out of memory. */
bool vt_pair_map_put_new(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t value);
/* Removes the key; returns true (and its value in *value if not NULL) if it
 * was present. */
bool vt_pair_map_remove(struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t *value);
/* Removes the entry whose value pointer get() returned (no second lookup). */
void vt_pair_map_remove_at(struct vt_pair_map *m, uint64_t *value);

#endif
