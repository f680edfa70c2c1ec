/*
 * The live set of one replay: (kind, address or handle) -> the allocation
 * live there (its size, the ledger and site it counts in, its references).
 *
 * Every memory event of a trace looks here once, so the layout is chosen
 * for that: the entry is the slot itself (32 bytes, two to a cache line;
 * no second array to follow), linear probing from the key's home slot in a
 * table at most a quarter full (an eighth in the analyzer's replay: below)
 * for short probe runs, and backward-shift deletion,
 * so that a set that sees millions of insert/remove cycles has no
 * tombstones and stays as small as what is live. A slot keeps its key's
 * hash, so deletion and growth never rehash.
 *
 * A lookup returns the slot holding the key or, if it is absent, the empty
 * slot where it would go, so that an allocation probes once for both.
 *
 *     struct vt_live *e = vt_live_lookup(&set, kind, addr);
 *     if (e && e->refs) ... live: e->size ...; vt_live_remove(&set, e);
 *     else e = vt_live_insert(&set, e, kind, addr);   (NULL: out of memory)
 */
#ifndef VRAMTRACE_COMMON_LIVE_SET_H
#define VRAMTRACE_COMMON_LIVE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_live {
    uint64_t addr;   /* with kind, the key */
    uint64_t size;
    uint32_t site;   /* index in the ledger's sites; VT_SITE_NONE: not counted */
    uint32_t refs;   /* references (a retained handle adds one); 0: empty slot */
    uint32_t hash;   /* vt_live_hash(kind, addr): the home slot is its top bits */
    uint8_t kind;
    uint8_t ledger;  /* index in the replay's ledgers (< VT_LEDGERS_MAX) */
};

struct vt_live_set {
    struct vt_live *slots;
    size_t cap;      /* power of two, or 0 */
    unsigned shift;  /* 32 - log2(cap): home slot = hash >> shift */
    unsigned load_inverse; /* the table grows past 1/load_inverse full */
    size_t count;
};

void vt_live_set_init(struct vt_live_set *s);
void vt_live_set_free(struct vt_live_set *s);

/* Fibonacci hashing: one multiplication, and the top bits (the ones used)
 * depend on every bit of the address, so aligned addresses spread. */
static inline uint32_t vt_live_hash(uint8_t kind, uint64_t addr)
{
    return (uint32_t)(((addr ^ (uint64_t)kind << 56) * 0x9e3779b97f4a7c15ull) >> 32);
}

/* The slot holding (kind, addr) (refs != 0), else the empty slot where it
 * would be inserted (refs == 0); NULL only while the set has no table. Valid
 * until the next insert or remove. */
static inline struct vt_live *vt_live_lookup(const struct vt_live_set *s, uint8_t kind,
                                             uint64_t addr)
{
    if (!s->cap)
        return NULL;
    size_t mask = s->cap - 1;
    for (size_t i = vt_live_hash(kind, addr) >> s->shift;; i = (i + 1) & mask) {
        struct vt_live *e = &s->slots[i];
        if (!e->refs || (e->addr == addr && e->kind == kind))
            return e;
    }
}

/* The table grows when an insert would make it more than a quarter full:
 * an allocation looks for an absent key, probing until an empty slot, and a
 * free shifts back the rest of its probe run; both stay short at this load
 * (about 1.2 slots). */
#define VT_LIVE_LOAD_INVERSE 4
/* The analyzer's replay, where every event of a long trace probes once:
 * at an eighth, fewer lookups and shifts run past their first slot, and
 * the loop's exit is mispredicted less often; a trace of random addresses
 * (bench/synth_trace) replays 1.14x faster for twice the table (32 bytes
 * a live allocation more). The tracer keeps a quarter: its table is in
 * the traced process. */
#define VT_LIVE_LOAD_INVERSE_SPARSE 8

/* Makes a set grow at 1/VT_LIVE_LOAD_INVERSE_SPARSE full: an empty one
 * when it first grows, one with a table at its next insert. */
static inline void vt_live_set_sparse(struct vt_live_set *s)
{
    s->load_inverse = VT_LIVE_LOAD_INVERSE_SPARSE;
}

/* An empty set's table made at once with room for count entries (the
 * slots at its load): a replay that knows about how many allocations will
 * be live at once skips growing through every size up to it, each table
 * zeroed and filled again. Nothing changes for a set with a table; false
 * when out of memory (the set as it was). */
bool vt_live_set_reserve(struct vt_live_set *s, size_t count);

/* How many entries the table has room for (count below this: no growth). */
static inline size_t vt_live_set_room(const struct vt_live_set *s)
{
    return s->cap / s->load_inverse;
}

/* Grows the table, then inserts (out of line: rare). */
struct vt_live *vt_live_insert_grow(struct vt_live_set *s, uint8_t kind, uint64_t addr);

/* Inserts (kind, addr), absent, at the empty slot lookup returned (NULL if
 * it returned NULL) with one reference and the other fields zero. Returns
 * the entry (which moves if the table had to grow) or NULL when out of
 * memory. */
static inline struct vt_live *vt_live_insert(struct vt_live_set *s, struct vt_live *empty,
                                             uint8_t kind, uint64_t addr)
{
    if ((s->count + 1) * s->load_inverse > s->cap)
        return vt_live_insert_grow(s, kind, addr);
    *empty = (struct vt_live){.addr = addr, .refs = 1, .hash = vt_live_hash(kind, addr),
                              .kind = kind};
    s->count++;
    return empty;
}

/* Removes the entry lookup found: backward shift, moving later members of
 * its probe run into the hole when their home slot allows it (is not after
 * the hole, cyclically), so that no tombstone is left. */
static inline void vt_live_remove(struct vt_live_set *s, struct vt_live *e)
{
    size_t mask = s->cap - 1;
    size_t hole = (size_t)(e - s->slots);
    for (size_t j = (hole + 1) & mask; s->slots[j].refs; j = (j + 1) & mask) {
        size_t home = s->slots[j].hash >> s->shift;
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            s->slots[hole] = s->slots[j];
            hole = j;
        }
    }
    s->slots[hole].refs = 0;
    s->count--;
}

#endif
