/*
 * Line numbers of Python frames (docs/internals/PYTHON.md, "How"): the
 * decoder of CPython's line tables, and a cache of what it found, so that
 * an event pays the table's scan once per (code, instruction) and not once
 * per frame of every event (in a 50-deep stack the scans were three
 * quarters of the tracer's instructions: docs/internals/PERFORMANCE.md).
 */
#ifndef VRAMTRACE_PRELOAD_PYTHON_LINES_H
#define VRAMTRACE_PRELOAD_PYTHON_LINES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Line of byte offset addr in a code object's line table, as CPython's
 * PyCode_Addr2Line computes it: minor 10 is the 3.10 table, 11+ the
 * location table of 3.11 onwards. -1: no line. */
int vt_py_line_from_table(int minor, const uint8_t *table, size_t len, int first_line,
                          int64_t addr);

/* The cache: (recorder code id, byte offset) -> line (0: no line).
 *
 * Keyed by the code id, not the code's address: an id names one code
 * object for good (python_stack.c hands out a new one when the address
 * holds another code, or the same name and file with another line table
 * object), and a code object's line table never changes, so an entry
 * does not go stale. Lock-free: an entry is one 64-bit word (id, offset,
 * line), written once by a compare-and-swap, so any thread may read and
 * fill it. The slots are mapped once (vt_py_lines_init) and never
 * emptied; a full neighbourhood, an offset of 16 MiB or a line of 16 M
 * and beyond are simply not cached. The lookup is inline: it runs once
 * per frame of every event. */
#define VT_PY_LINE_SLOTS (1u << 16)
#define VT_PY_LINE_PROBES 8u
#define VT_PY_LINE_FIELD_MAX (1 << 24)

extern _Atomic uint64_t *vt_py_line_slots;

bool vt_py_lines_init(void);

/* The word's key part (id, offset), and where its probes start. */
static inline uint64_t vt_py_line_key(uint32_t code_id, int64_t addr)
{
    return (uint64_t)code_id << 24 | (uint64_t)addr;
}

static inline uint32_t vt_py_line_home(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15u) >> 48);
}

/* The line cached for (code_id, addr), or -1 if none. */
static inline int64_t vt_py_lines_cached(uint32_t code_id, int64_t addr)
{
    if (addr < 0 || addr >= VT_PY_LINE_FIELD_MAX)
        return -1;
    uint64_t key = vt_py_line_key(code_id, addr);
    uint32_t h = vt_py_line_home(key);
    for (uint32_t i = 0; i < VT_PY_LINE_PROBES; i++) {
        uint64_t w = atomic_load_explicit(&vt_py_line_slots[(h + i) & (VT_PY_LINE_SLOTS - 1)],
                                          memory_order_relaxed);
        if (w >> 24 == key)
            return (int64_t)(w & (VT_PY_LINE_FIELD_MAX - 1));
        if (!w)
            return -1;
    }
    return -1;
}

/* Remembers line for (code_id, addr) if it fits and there is room. */
void vt_py_lines_remember(uint32_t code_id, int64_t addr, uint32_t line);

#endif
