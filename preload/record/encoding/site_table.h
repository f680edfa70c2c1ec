/*
 * The writer's allocation sites (format version 4, trace_format.h: the
 * VT_REC_SITE record): every field of a memory record that repeats from
 * event to event - operation, kind, API, label, thread, device, stack,
 * result, aux - as one id, given in order of first appearance. With them a
 * memory record is its site, its time, its size and its address; the
 * records of a loop repeat byte for byte (docs/internals/FORMAT.md, "Sites").
 */
#ifndef VRAMTRACE_SITE_TABLE_H
#define VRAMTRACE_SITE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a site fixes: the fields of a VT_REC_SITE record. */
struct vt_site_fields {
    uint8_t op, kind;
    uint64_t api, label, thread;
    uint64_t device1; /* device ordinal + 1, 0: unknown */
    uint64_t stack, result, aux;
};

/* Sites last used, by stack, thread and operation: the one compare that
 * finds nearly every event's site, before any hash (a loop's sites come
 * back from the same stacks). */
#define VT_SITE_CACHE 256

struct vt_site_table {
    struct vt_site_fields *sites;  /* by id; [0] unused */
    size_t n, cap;                 /* ids 1..n */
    uint32_t *slots;               /* open addressing: id, 0 empty */
    size_t nslots;                 /* a power of two, or 0 */
    uint32_t cache[VT_SITE_CACHE]; /* a site id, 0: none */
};

void vt_site_table_free(struct vt_site_table *t);
/* vt_site_table_id past the cache: the hash table, and new sites. */
uint64_t vt_site_table_find(struct vt_site_table *t, const struct vt_site_fields *s, bool *added);

static inline bool vt_site_equal(const struct vt_site_fields *a, const struct vt_site_fields *b)
{ /* field by field: the struct has padding */
    return a->stack == b->stack && a->thread == b->thread && a->op == b->op &&
           a->kind == b->kind && a->api == b->api && a->label == b->label &&
           a->device1 == b->device1 && a->result == b->result && a->aux == b->aux;
}

static inline size_t vt_site_cache_slot(const struct vt_site_fields *s)
{
    return (size_t)(((s->stack ^ s->thread << 20 ^ s->op) * 0x9e3779b97f4a7c15ull) >> 56);
}

/* The id of site s (1, 2, ...), adding it when new (*added true: the
 * caller writes its VT_REC_SITE record first). 0: out of memory, or more
 * sites than 32-bit ids. */
static inline uint64_t vt_site_table_id(struct vt_site_table *t, const struct vt_site_fields *s,
                                        bool *added)
{
    uint32_t id = t->cache[vt_site_cache_slot(s)];
    if (id != 0 && vt_site_equal(&t->sites[id], s)) {
        *added = false;
        return id;
    }
    return vt_site_table_find(t, s, added);
}

#endif
