/*
 * A wake-up that holds no descriptor: a counter in memory and the futex
 * system call, not a pipe: a pipe is two descriptors of the program's - a
 * program started with stdin or stdout closed would get them as fd 0 and
 * 1, and a daemon closing every descriptor would take the writer's wake-up
 * away from under it. A counter
 * is invisible to the program's I/O, survives fork as plain memory, and
 * post and wait are single system calls: safe in a signal handler and in a
 * vfork child, no lock taken.
 */
#ifndef VRAMTRACE_PRELOAD_WAKE_WORD_H
#define VRAMTRACE_PRELOAD_WAKE_WORD_H

#include <stdatomic.h>

/* The counter, and how many threads are in (or about to enter) a wait on
 * it: a post makes the wake-up system call only when one is, so a hook
 * that hands the writer a full block while the writer is busy anyway pays
 * no system call (docs/internals/PERFORMANCE.md, "Whole process"). Zero-initialised
 * is ready. */
struct vt_wake {
    atomic_uint word;
    atomic_uint waiters;
};

/* The counter moves on and every waiter wakes. */
void vt_wake_post(struct vt_wake *w);
/* Returns once the counter differs from seen (at once if it already does),
 * after timeout_ms, or earlier (a signal): callers re-check what they wait
 * for. */
void vt_wake_wait(struct vt_wake *w, unsigned seen, int timeout_ms);
/* The counter now, to pass as seen. */
static inline unsigned vt_wake_seen(struct vt_wake *w)
{
    return atomic_load(&w->word);
}

#endif
