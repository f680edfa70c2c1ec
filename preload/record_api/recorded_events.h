/*
 * What a hook hands the recorder about one event, in the hook's own terms
 * (recorder.h records them). A header of its own because the recorder's
 * buffers carry these structs as they are (record/buffers/raw_event.h):
 * the recorder's internals need the shapes, not the whole face.
 */
#ifndef VRAMTRACE_PRELOAD_RECORDED_EVENTS_H
#define VRAMTRACE_PRELOAD_RECORDED_EVENTS_H

#include <stdint.h>

/* One memory operation, as the driver performed it. */
struct vt_mem_event {
    uint8_t op;           /* enum vt_op */
    uint8_t kind;         /* enum vt_kind */
    uint16_t api;         /* id of the hooked entry point (its name:
                           * vt_recorder_links.api_name) */
    uint16_t label;       /* id of the runtime entry point that led here, 0 if none */
    int32_t device;       /* device ordinal, -1 if unknown */
    int32_t result;       /* CUresult the real function returned */
    uint64_t addr;        /* pointer, or handle for handle-keyed kinds */
    uint64_t size;        /* bytes (requested size for allocations) */
    uint64_t aux;         /* stream for stream-ordered ops, handle for mappings */
    union {
        struct {          /* a failed allocation: cuMemGetInfo right after */
            uint64_t free_bytes;
            uint64_t total_bytes;
        };
        struct {          /* a context this call created (VT_KIND_CONTEXT):
                           * each + 1, 0 when it could not be had */
            uint64_t free_after1;   /* the device's free bytes once it existed */
            uint64_t process_used1; /* NVML: this process's bytes on the device
                                     * then (asked only where size is 0) */
        } context;
    };
};

/* One record of a census of what memory is made of (VT_REC_PART). */
struct vt_part_event {
    uint64_t census, addr, bytes, elements;
    int32_t device;       /* ordinal, -1 if unknown */
    uint8_t part;         /* enum vt_part */
};

#endif
