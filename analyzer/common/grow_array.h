/*
 * The one "grow this array" helper of the analyzer: dynamic arrays double
 * their capacity, so n appends cost O(n) copies in all.
 */
#ifndef VRAMTRACE_COMMON_GROW_ARRAY_H
#define VRAMTRACE_COMMON_GROW_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* The capacity that holds need elements of elem bytes: cap doubled (from
 * 16) until it does. 0 if that many bytes cannot be addressed. */
size_t vt_grow_capacity(size_t cap, size_t need, size_t elem);

/* Makes *arr (*cap elements of elem bytes) hold at least need elements.
 * New elements are not initialised. false: out of memory or too large, and
 * *arr and *cap are unchanged. */
bool vt_grow_array(void **arr, size_t *cap, size_t need, size_t elem);

#endif
