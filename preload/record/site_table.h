/*
 * The writer's allocation sites (format version 4, trace_format.h: the
 * VT_REC_SITE record): every field of a memory record that repeats from
 * event to event - operation, kind, API, label, thread, device, stack,
 * result, aux - as one id, given in order of first appearance. With them a
 * memory record is its site, its time, its size and its address; the
 * records of a loop repeat byte for byte (docs/FORMAT.md, "Sites").
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

struct vt_site_table {
    struct vt_site_fields *sites;  /* by id; [0] unused */
    size_t n, cap;                 /* ids 1..n */
    uint32_t *slots;               /* open addressing: id, 0 empty */
    size_t nslots;                 /* a power of two, or 0 */
};

void vt_site_table_free(struct vt_site_table *t);
/* The id of site s (1, 2, ...), adding it when new (*added true: the
 * caller writes its VT_REC_SITE record first). 0: out of memory, or more
 * sites than 32-bit ids. */
uint64_t vt_site_table_id(struct vt_site_table *t, const struct vt_site_fields *s, bool *added);

#endif
