/*
 * The fixed-layout events hooks append to their thread's buffer (the "raw"
 * side: no varints, no ids, no compression - the hook's path stays short).
 * The writer thread turns them into trace records. Every raw event starts
 * with a header and has a size that is a multiple of 8.
 */
#ifndef VRAMTRACE_PRELOAD_RAW_EVENT_H
#define VRAMTRACE_PRELOAD_RAW_EVENT_H

#include <stdint.h>

#include "recorded_events.h"
#include "vramtrace/trace_format.h"

/* Longest stack and longest phase/domain/device name kept (longer names are
 * cut: they still identify the phase, and a buffer block always holds at
 * least one event of the largest size). */
#define VT_MAX_STACK_DEPTH 256
#define VT_MAX_NAME_LEN 1024
#define VT_THREAD_NAME_LEN 16 /* prctl(PR_GET_NAME) */

struct vt_raw_header {
    uint64_t ticks;   /* vt_clock_ticks() while the buffer is busy; the writer
                       * converts (event_clock.h) */
    uint32_t size;    /* bytes of the whole event, a multiple of 8 */
    uint8_t type;     /* enum vt_record_type of the record it becomes */
    uint8_t flags;    /* VT_RAW_* */
    uint16_t nips;    /* VT_REC_MEM: stack frames after the body */
};

/* The stack was merged with the thread's Python frames (python_stack.h):
 * the writer looks for them (python_codes.h) only then. */
#define VT_RAW_PY_FRAMES 1
/* VT_REC_MEM without frames: its stack is the thread's last one sent
 * (thread_buffer.h, vt_tb_begin_with_stack) */
#define VT_RAW_SAME_STACK 2

/* A free reserved and stamped before its real call (vt_record_free_begin),
 * its body not written yet: the writer goes no further in time than it
 * until the hook clears the flag (vt_record_free_end; writer.c). Set and
 * cleared with __atomic builtins: the writer reads it while the hook may
 * clear it. */
#define VT_RAW_PENDING 4
_Static_assert(!(VT_RAW_PY_FRAMES & VT_RAW_SAME_STACK) &&
                   !((VT_RAW_PY_FRAMES | VT_RAW_SAME_STACK) & VT_RAW_PENDING),
               "each VT_RAW_* flag a bit of its own");

/* VT_REC_MEM; followed by nips uint64_t return addresses, innermost first. */
struct vt_raw_mem {
    struct vt_raw_header h;
    struct vt_mem_event ev;
    uint64_t end_ticks; /* a FREE: when its real call returned (h.ticks:
                         * when it was called) */
};

/* The hook is still in the real call of this event's free. */
static inline int vt_raw_pending(const struct vt_raw_header *h)
{
    return __atomic_load_n(&h->flags, __ATOMIC_ACQUIRE) & VT_RAW_PENDING;
}

/* RANGE_PUSH/POP/START/END and MARK; followed by domain_len bytes of
 * domain, then name_len bytes of name. */
struct vt_raw_range {
    struct vt_raw_header h;
    uint64_t range_id;
    uint32_t domain_len;
    uint32_t name_len;
    uint8_t has_domain; /* 0: the default domain (NULL) */
    uint8_t has_name;
    uint8_t pad[6];
};

/* VT_REC_PART; followed by dtype_len bytes of dtype, then name_len bytes
 * of name. */
struct vt_raw_part {
    struct vt_raw_header h;
    struct vt_part_event ev;
    uint32_t dtype_len;
    uint32_t name_len;
};

/* VT_REC_DEVICE; followed by name_len bytes of name. */
struct vt_raw_device {
    struct vt_raw_header h;
    int32_t ordinal;
    uint32_t name_len;
    uint64_t total_bytes;
    uint8_t uuid[VT_UUID_SIZE];
};

/* VT_REC_THREAD: the thread's first event, and again after a rename. */
struct vt_raw_thread {
    struct vt_raw_header h;
    uint32_t os_tid;
    uint32_t name_len;
    char name[VT_THREAD_NAME_LEN];
};

static inline uint32_t vt_raw_round(uint64_t n)
{
    return (uint32_t)((n + 7) & ~(uint64_t)7);
}

#endif
