/*
 * Interned strings (VT_REC_STRING): each distinct text gets an id 1, 2,
 * 3... in order of first appearance, which is the order the writer emits
 * their records. Writer thread only: no lock.
 */
#ifndef VRAMTRACE_PRELOAD_STRING_TABLE_H
#define VRAMTRACE_PRELOAD_STRING_TABLE_H

#include <stddef.h>
#include <stdint.h>

struct vt_string_slot;

struct vt_string_table {
    struct vt_string_slot *slots;
    size_t cap;     /* power of two */
    uint64_t count; /* ids 1..count exist */
};

void vt_strings_init(struct vt_string_table *t);
void vt_strings_free(struct vt_string_table *t);

/* Returns the id of text[0..len); *is_new tells whether it was just added
 * (the caller then emits its record). UINT64_MAX if memory ran out. */
uint64_t vt_strings_intern(struct vt_string_table *t, const char *text, size_t len, int *is_new);

#endif
