/*
 * A wake-up that holds no descriptor: a counter in memory and the futex
 * system call. The writer's wake-ups and its answers used to be pipes, and
 * a pipe is two descriptors of the program's: a program started with stdin
 * or stdout closed got them as fd 0 and 1 (issue 19), and a daemon closing
 * every descriptor took the writer's wake-up away from under it. A counter
 * is invisible to the program's I/O, survives fork as plain memory, and
 * post and wait are single system calls: safe in a signal handler and in a
 * vfork child, no lock taken.
 */
#ifndef VRAMTRACE_PRELOAD_WAKE_WORD_H
#define VRAMTRACE_PRELOAD_WAKE_WORD_H

#include <stdatomic.h>

/* The counter moves on and every waiter wakes. */
void vt_wake_post(atomic_uint *word);
/* Returns once *word differs from seen (at once if it already does), after
 * timeout_ms, or earlier (a signal): callers re-check what they wait for. */
void vt_wake_wait(atomic_uint *word, unsigned seen, int timeout_ms);

#endif
