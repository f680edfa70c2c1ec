/* Virtual address spaces that are never backed by host memory: a free list of
 * [addr, size) holes, first fit with alignment, coalescing on free, so freed
 * addresses are reused as a real driver reuses them. */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>

#define DEVICE_SPACE_BASE 0x200000000000ull   /* far below where mmap puts host memory */
#define DEVICE_SPACE_SHIFT 40                  /* 1 TiB of addresses per device */

static int insert_hole(struct vtsim_vaspace *s, size_t at, uint64_t addr, uint64_t size)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 16;
        void *v = realloc(s->free, cap * sizeof *s->free);
        if (!v)
            return -1;
        s->free = v;
        s->cap = cap;
    }
    memmove(&s->free[at + 1], &s->free[at], (s->n - at) * sizeof *s->free);
    s->free[at].addr = addr;
    s->free[at].size = size;
    s->n++;
    return 0;
}

static void remove_hole(struct vtsim_vaspace *s, size_t at)
{
    memmove(&s->free[at], &s->free[at + 1], (s->n - at - 1) * sizeof *s->free);
    s->n--;
}

static void ensure_initialised(struct vtsim_vaspace *s)
{
    if (s->free == NULL && s->size)
        insert_hole(s, 0, s->base, s->size);
}

uint64_t vtsim_va_alloc(struct vtsim_vaspace *s, uint64_t size, uint64_t align)
{
    ensure_initialised(s);
    if (size == 0 || size > s->size)
        return 0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t hole = s->free[i].addr, hole_end = hole + s->free[i].size;
        uint64_t start = (hole + align - 1) & ~(align - 1);
        if (start < hole || start > hole_end || hole_end - start < size)
            continue;
        uint64_t end = start + size;
        if (start == hole && end == hole_end) {
            remove_hole(s, i);
        } else if (start == hole) {
            s->free[i].addr = end;
            s->free[i].size = hole_end - end;
        } else {
            s->free[i].size = start - hole;
            if (end != hole_end && insert_hole(s, i + 1, end, hole_end - end) != 0) {
                s->free[i].size = hole_end - hole;  /* undo: keep the space consistent */
                return 0;
            }
        }
        return start;
    }
    return 0;
}

void vtsim_va_free(struct vtsim_vaspace *s, uint64_t addr, uint64_t size)
{
    ensure_initialised(s);
    size_t at = 0;
    while (at < s->n && s->free[at].addr < addr)
        at++;
    int joins_prev = at > 0 && s->free[at - 1].addr + s->free[at - 1].size == addr;
    int joins_next = at < s->n && addr + size == s->free[at].addr;
    if (joins_prev && joins_next) {
        s->free[at - 1].size += size + s->free[at].size;
        remove_hole(s, at);
    } else if (joins_prev) {
        s->free[at - 1].size += size;
    } else if (joins_next) {
        s->free[at].addr = addr;
        s->free[at].size += size;
    } else {
        insert_hole(s, at, addr, size);  /* on ENOMEM the range is lost, never reused */
    }
}

struct vtsim_vaspace *vtsim_device_space(int dev)
{
    static struct vtsim_vaspace spaces[VTSIM_MAX_DEVICES];
    struct vtsim_vaspace *s = &spaces[dev];
    if (s->size == 0) {
        s->base = DEVICE_SPACE_BASE + ((uint64_t)dev << DEVICE_SPACE_SHIFT);
        s->size = 1ull << DEVICE_SPACE_SHIFT;
    }
    return s;
}
