/* One tracer per process (single_tracer.c). */
#ifndef VRAMTRACE_HOOKS_SINGLE_TRACER_H
#define VRAMTRACE_HOOKS_SINGLE_TRACER_H

#include <stdbool.h>
#include <stdint.h>

/* What every copy exports as vramtrace_process_tracer; the owner's is the
 * one the loader finds. Members are only ever added at the end. */
struct vt_claim {
    unsigned version; /* 1 */
    /* The owner's NVTX injection (InitializeInjectionNvtx2). */
    int (*nvtx_initialize)(const void *(*get_export_table)(uint32_t id));
};

/* At load: whether this copy of the library owns the process (the first
 * copy in the global scope); the others step aside. */
bool vt_single_tracer_claim(void);
/* This copy stepped aside: its hooks pass everything through untouched. */
bool vt_stepped_aside(void);
/* The owner's claim when this copy stepped aside, else NULL. */
const struct vt_claim *vt_owner_claim(void);

/* This copy's NVTX injection (nvtx_injection.c). */
int vt_nvtx_initialize(const void *(*get_export_table)(uint32_t id));

#endif
