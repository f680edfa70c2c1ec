/* Line numbers of Python frames; see python_lines.h. */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "python_lines.h"

#include <sys/mman.h>

_Atomic uint64_t *vt_py_line_slots;

/* 3.10: (unsigned byte delta, signed line delta) pairs; -128: no line. */
static int line_310(const uint8_t *t, size_t len, int line, int64_t addr)
{
    int64_t end = 0;
    for (size_t i = 0; i + 1 < len; i += 2) {
        int ldelta = (int8_t)t[i + 1];
        end += t[i];
        int ar_line = -1;
        if (ldelta != -128) {
            line += ldelta;
            ar_line = line;
        }
        if (addr < end)
            return ar_line;
    }
    return -1;
}

/* 6-bit varint of the location table (Objects/locations.md). */
static unsigned scan_varint(const uint8_t **p, const uint8_t *end)
{
    unsigned val = 0, shift = 0;
    while (*p < end) {
        unsigned b = *(*p)++;
        if (shift < 32)
            val |= (b & 63u) << shift;
        shift += 6;
        if (!(b & 64))
            break;
    }
    return val;
}

/* 3.11+: entries of (code, length) with a line delta per code. */
static int line_311(const uint8_t *t, size_t len, int line, int64_t addr)
{
    const uint8_t *p = t, *end = t + len;
    int64_t range_end = 0;
    while (p < end) {
        uint8_t b = *p;
        unsigned code = (b >> 3) & 15u;
        int delta = 0;
        if (code == 13 || code == 14) { /* no columns / long form */
            const uint8_t *q = p + 1;
            unsigned u = scan_varint(&q, end);
            delta = (u & 1) ? -(int)(u >> 1) : (int)(u >> 1);
        } else if (code >= 10 && code <= 12) { /* one-line forms */
            delta = (int)code - 10;
        }
        line += delta;
        int ar_line = code == 15 ? -1 : line;
        range_end += (int64_t)((b & 7u) + 1) * 2;
        if (addr < range_end)
            return ar_line;
        do
            p++;
        while (p < end && !(*p & 128));
    }
    return -1;
}

int vt_py_line_from_table(int minor, const uint8_t *table, size_t len, int first_line,
                          int64_t addr)
{
    if (addr < 0)
        return first_line;
    return minor == 10 ? line_310(table, len, first_line, addr)
                       : line_311(table, len, first_line, addr);
}

/* ---- the cache ---- */

bool vt_py_lines_init(void)
{
    void *p = mmap(NULL, VT_PY_LINE_SLOTS * sizeof *vt_py_line_slots, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return false;
    vt_py_line_slots = p;
    return true;
}

void vt_py_lines_remember(uint32_t code_id, int64_t addr, uint32_t line)
{
    if (addr < 0 || addr >= VT_PY_LINE_FIELD_MAX || line >= VT_PY_LINE_FIELD_MAX)
        return;
    uint64_t key = vt_py_line_key(code_id, addr);
    uint64_t word = key << 24 | line;
    uint32_t h = vt_py_line_home(key);
    for (uint32_t i = 0; i < VT_PY_LINE_PROBES; i++) {
        _Atomic uint64_t *slot = &vt_py_line_slots[(h + i) & (VT_PY_LINE_SLOTS - 1)];
        uint64_t w = 0;
        /* Another thread may fill the slot first, with this same entry
         * or another: then look on. */
        if (atomic_compare_exchange_strong_explicit(slot, &w, word, memory_order_relaxed,
                                                    memory_order_relaxed) ||
            w >> 24 == key)
            return;
    }
}
