/*
 * The public phase API (include/vramtrace/vramtrace.h): phases of programs
 * without NVTX. Phases are push/pop ranges of the default domain.
 */
#include "vramtrace/vramtrace.h"

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
