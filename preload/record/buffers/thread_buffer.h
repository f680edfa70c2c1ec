/*
 * Per-thread event buffers and the pool of blocks they are made of.
 *
 * Each thread that records gets a vt_thread_buf (found through an
 * initial-exec TLS pointer, registered in a global list on first use). A
 * hook appends raw events to the buffer's current block, marking the buffer
 * busy (no lock: only the writer thread ever contends, and it waits for the
 * owner instead - thread_buffer.c, buf_enter). Full blocks are
 * queued on the buffer for the writer, woken at every second one (and by
 * its own timer); a fresh one comes from a global pool.
 * When the pool is at its limit the hook wakes the writer and waits for a
 * block to come back (it never drops an event just because it is busy).
 *
 * The timestamp of an event (clock ticks, event_clock.h) is taken while its
 * buffer is busy: see writer.c for why that makes the writer's merge
 * globally ordered, and event_stamp in thread_buffer.c for the TSC.
 */
#ifndef VRAMTRACE_PRELOAD_THREAD_BUFFER_H
#define VRAMTRACE_PRELOAD_THREAD_BUFFER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raw_event.h"

/* A thread's native stack of at most this many frames is sent once while
 * it repeats (vt_tb_begin_with_stack). */
#define VT_TB_SAME_STACK_MAX 64

struct vt_block {
    struct vt_block *next;
    uint32_t used; /* bytes appended (owner, inside buf_enter) */
    uint32_t read; /* bytes the writer has consumed (writer only) */
    uint32_t cap;
    uint32_t pad;
    uint64_t data[]; /* raw events, 8-byte aligned */
};

struct vt_thread_buf {
    pthread_mutex_t lock;
    struct vt_thread_buf *next; /* global list (list lock) */
    atomic_int busy;       /* the owner is appending (thread_buffer.c: buf_enter) */
    atomic_int collecting; /* the writer holds the lock and waits for !busy */

    /* the owner inside buf_enter, or the writer holding the lock and
     * having seen !busy; `exited` under the lock */
    struct vt_block *current;               /* being appended to; NULL: none */
    struct vt_block *ready_head, *ready_tail; /* full, waiting for the writer */
    bool exited;                            /* the thread is gone */

    /* the owning thread only */
    uint32_t os_tid;
    char name[VT_THREAD_NAME_LEN];
    uint32_t name_len;
    /* the native stack last sent with frames (vt_tb_begin_with_stack);
     * last_n 0: none */
    uint32_t last_n;
    uint64_t last_ips[VT_TB_SAME_STACK_MAX];

    /* the writer only */
    struct vt_block *wq_head, *wq_tail; /* swapped out, read from wq_head->read */
    uint64_t file_id;                   /* thread id in the trace, 0: not yet emitted */
    uint64_t last_stack; /* the stack of the last event with frames that
                          * the hook remembered (last_ips), for
                          * VT_RAW_SAME_STACK */
};

/* The recorder is taking events (checked before and under each buffer lock). */
extern atomic_int vt_tb_active;
/* Events that could not be recorded (no memory for a block). */
extern atomic_ullong vt_tb_lost;

/* Called by a hook that filled a block: the writer should run now. Set by
 * the writer (vt_writer_wake); NULL: nobody to wake. */
extern void (*vt_tb_wake_writer)(void);

/* Called at each thread's first event (of this generation) before the
 * event is appended, the process's first event among them: the recorder
 * starts the writer thread there (writer.h). Set by the recorder; NULL:
 * nothing to do. A slow path: a hook's common case never reads it. */
extern void (*vt_tb_on_new_thread)(void);

/* Sets up the pool and the list. block_bytes is the size of one block;
 * a hook waits for the writer to give one back 10 ms at most once the pool
 * has lent two blocks a thread and a spare 512 KiB, 2 s at max_blocks. */
int vt_tb_init(size_t block_bytes, size_t max_blocks);
/* Frees every buffer and block (only when no thread can append any more). */
void vt_tb_release_all(void);
/* In a forked child: fresh locks, no buffers (the parent's events are the
 * parent's), the calling thread re-registers on its next event. */
void vt_tb_after_fork_child(void);

/* Recording begins (clears the closing state). */
void vt_tb_open(void);
/* The final flush begins: hooks stop appending, and from now on every event
 * they are refused is counted in vt_tb_lost (the writer puts the count in
 * the trailer), not silently dropped. */
void vt_tb_close(void);
/* A hook was refused an event (recorder not active): counted if closing. */
void vt_tb_note_refused(void);

/* ---- the hook side ---- */

enum vt_name_check { VT_NAME_CHECK_SOMETIMES, VT_NAME_CHECK_NOW };
/* SOMETIMES: the name is read at a thread's first event and re-read at its
 * first event after a rename the hooks saw (vt_tb_note_rename), or else at
 * every this many-th such event, counted from its first event or its last
 * NOW - for a rename no hook sees (a write to /proc/self/task/N/comm). It
 * was 256: one prctl(PR_GET_NAME) system call per 256 events, most of the
 * tracer's system calls (docs/internals/PERFORMANCE.md, "Whole process"). */
#define VT_NAME_CHECK_EVERY 65536

/* A thread may have a new name (pthread_setname_np, prctl(PR_SET_NAME),
 * called by the program and done): every thread re-reads its name at its
 * next event. Async-signal-safe (one atomic add). */
void vt_tb_note_rename(void);

/* Reserves size bytes (a multiple of 8, at most vt_tb_max_event()) in the
 * calling thread's buffer, locks it and stamps the time; returns the event
 * header (type/size/nips filled) or NULL if nothing is being recorded. The
 * caller fills the body and calls vt_tb_commit(). */
struct vt_raw_header *vt_tb_begin(uint8_t type, uint32_t size, uint16_t nips,
                                  enum vt_name_check check);
void vt_tb_commit(void);
size_t vt_tb_max_event(void);

/* vt_tb_begin for an event of body bytes followed by a stack of n frames.
 * The frames are copied after the body, unless they are a native stack
 * (not python) of at most VT_TB_SAME_STACK_MAX frames equal to the last
 * one this thread sent: then the event has no frames and the flag
 * VT_RAW_SAME_STACK. A loop that allocates from one place copies its
 * stack into the buffer once, and the writer looks it up once
 * (vt_tb_remembers_stack). python sets VT_RAW_PY_FRAMES. */
struct vt_raw_header *vt_tb_begin_with_stack(uint8_t type, uint32_t body, const uint64_t *ips,
                                             size_t n, bool python, enum vt_name_check check);
/* The writer's side of the rule above: an event with these flags and
 * frames is the one a later VT_RAW_SAME_STACK event of its thread means. */
static inline bool vt_tb_remembers_stack(uint8_t flags, size_t n)
{
    return !(flags & (VT_RAW_PY_FRAMES | VT_RAW_SAME_STACK)) && n > 0 &&
           n <= VT_TB_SAME_STACK_MAX;
}

/* ---- the writer side ---- */

/* Calls fn for every registered buffer, with the list locked. */
void vt_tb_for_each(void (*fn)(struct vt_thread_buf *tb, void *ctx), void *ctx);
/* Moves the buffer's pending blocks to its writer queue. With
 * timeout_ms >= 0 gives up (returns false) if the lock is not free in time
 * (emergency flush from a signal handler: its owner may be the crashed
 * thread). */
bool vt_tb_collect(struct vt_thread_buf *tb, int timeout_ms);
/* Returns a consumed block to the pool. */
void vt_tb_block_put(struct vt_block *b);
/* Frees the blocks sitting in the pool (after tracing stopped). */
void vt_tb_trim_pool(void);
/* Frees buffers whose thread has exited and whose events are all written. */
void vt_tb_reap_exited(void);

#endif
