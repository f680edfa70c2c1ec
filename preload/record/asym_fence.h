/*
 * An asymmetric store-load fence: a cheap half for the hot side (hooks, on
 * every event) and an expensive half for the rare side (fork's prepare
 * handler, the writer once per buffer per round).
 *
 * Both users run Dekker's handshake: the hot side stores "I am busy" and
 * then reads "someone waits", the rare side stores "I wait" and then reads
 * "busy". Each needs its store ordered before its load, or both may miss
 * the other. With membarrier(PRIVATE_EXPEDITED) the rare side makes every
 * running thread of the process execute a full barrier for it, so the hot
 * side needs only a compiler barrier (userspace RCU's trick). Without it
 * (old kernel, seccomp, valgrind) both sides use real fences.
 */
#ifndef VRAMTRACE_PRELOAD_ASYM_FENCE_H
#define VRAMTRACE_PRELOAD_ASYM_FENCE_H

#include <stdatomic.h>
#include <stdbool.h>

/* Set once by vt_asym_init: the heavy half is membarrier. */
extern atomic_int vt_asym_cheap;

/* Registers with membarrier (once; again in a forked child, which is a new
 * process for the kernel). Call before the first vt_asym_light. */
void vt_asym_init(void);
void vt_asym_init_in_child(void);

/* The hot side: a store before this is ordered before a load after it,
 * as seen by a vt_asym_heavy caller. */
static inline void vt_asym_light(void)
{
    if (atomic_load_explicit(&vt_asym_cheap, memory_order_relaxed))
        atomic_signal_fence(memory_order_seq_cst);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* The rare side: a full barrier here and on every thread of the process. */
void vt_asym_heavy(void);

#endif
