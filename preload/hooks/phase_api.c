/*
 * The public phase API (include/vramtrace/vramtrace.h): phases of programs
 * without NVTX. Phases are push/pop ranges of the default domain, or
 * start/end ranges (any thread may end one); marks are instants.
 */
#include "vramtrace/vramtrace.h"

#include <stdatomic.h>
#include <string.h>

#include "recorder.h"

VT_EXPORT void vramtrace_phase_push(const char *name)
{
    vt_record_range_push(NULL, name ? name : "");
}

VT_EXPORT void vramtrace_phase_pop(void)
{
    vt_record_range_pop(NULL);
}

VT_EXPORT void vramtrace_mark(const char *name)
{
    vt_record_mark(NULL, name ? name : "");
}

VT_EXPORT void vramtrace_mark_in(const char *domain, const char *name)
{
    vt_record_mark(domain, name ? name : "");
}

/* Ids of their own (top bit set), apart from NVTX's, which count from 1. */
static atomic_ullong next_range = 1;

VT_EXPORT unsigned long long vramtrace_range_start(const char *name)
{
    unsigned long long id = (1ull << 63) | atomic_fetch_add(&next_range, 1);
    vt_record_range_start(id, NULL, name ? name : "");
    return id;
}

VT_EXPORT void vramtrace_range_end(unsigned long long id)
{
    if (id)
        vt_record_range_end(id);
}

VT_EXPORT void vramtrace_part(unsigned long long census, unsigned part, int device,
                              unsigned long long addr, unsigned long long bytes,
                              unsigned long long elements, const char *dtype, const char *name)
{
    if (part >= VT_PART_COUNT_ && part != VT_PART_ALLOCATOR_SAMPLE)
        return; /* not a part this format knows: nothing a reader could read */
    struct vt_part_event ev = {.census = census, .addr = addr, .bytes = bytes,
                               .elements = elements, .device = device < 0 ? -1 : device,
                               .part = (uint8_t)part};
    vt_record_part(&ev, dtype, name);
}

VT_EXPORT long vramtrace_trace_path(char *buf, unsigned long len)
{
    const char *path = vt_record_trace_file();
    if (!path || !buf)
        return -1;
    size_t n = strlen(path);
    if (n >= len)
        return -1;
    memcpy(buf, path, n + 1);
    return (long)n;
}
