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
 * process for the kernel). Call before the first vt_asym_store_load. */
void vt_asym_init(void);
void vt_asym_init_in_child(void);

/* The hot side's handshake: stores v into mine, then returns what theirs
 * holds, the store ordered before the load as seen by a vt_asym_heavy
 * caller. Without membarrier both are sequentially consistent operations
 * (C11 orders those totally: Dekker holds, and ThreadSanitizer, which
 * refuses bare fences, understands it); with it, a compiler barrier. */
static inline int vt_asym_store_load(atomic_int *mine, int v, atomic_int *theirs)
{
    if (__builtin_expect(atomic_load_explicit(&vt_asym_cheap, memory_order_relaxed), 1)) {
        atomic_store_explicit(mine, v, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        return atomic_load_explicit(theirs, memory_order_acquire);
    }
    atomic_store(mine, v);
    return atomic_load(theirs);
}

/* The rare side, between its own sequentially consistent store and load:
 * with membarrier, a full barrier on every running thread of the process. */
void vt_asym_heavy(void);

#endif
