/*
 * An open-addressing hash map from a pair of 64-bit keys to a 64-bit value
 * (linear probing, backward-shift deletion: no tombstones, so a map that
 * sees millions of insert/remove cycles stays as small as its live set).
 * Each slot keeps its key's hash, so deletions and growth never rehash keys.
 */
#ifndef VRAMTRACE_ANALYZER_PAIR_MAP_H
#define VRAMTRACE_ANALYZER_PAIR_MAP_H

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
/* Pointer to the value, or NULL if absent. Valid until the next insert or
 * remove. */
uint64_t *vt_pair_map_get(const struct vt_pair_map *m, uint64_t a, uint64_t b);
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
