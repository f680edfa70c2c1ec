/*
 * Keeps fork() away from the tracer's calls into the dynamic loader.
 *
 * dl_iterate_phdr holds the loader's write lock while it runs its callback,
 * and glibc's fork() does not reset that lock in the child: a fork while
 * another thread is inside dl_iterate_phdr leaves it locked forever in the
 * child, whose next dl_iterate_phdr hangs. The tracer calls it all the time
 * (libunwind's unw_backtrace does, and so does the module scan), so without
 * care a traced program's child would hang where the untraced one would not.
 *
 * So the whole of each recording call, and each piece of the writer's work,
 * runs inside vt_fork_guard_enter/leave (the thread marks itself "inside"
 * in a slot of its own); the atfork prepare handler raises a flag that
 * makes new entrants wait and then waits until no thread is inside, so fork
 * happens only when no tracer code is running anywhere: no loader lock, no
 * tracer lock, no allocator lock (some allocators - the sanitizers' - are
 * not fork-safe) is held by the tracer at that moment. The flag is raised
 * before the wait, so a stream of hooks cannot starve a fork; the longest a
 * fork can wait is one writer round (a hook waiting for a buffer block
 * steps out meanwhile: thread_buffer.c, block_get). Enter/leave nest (a signal handler's hook inside a hook) and cost
 * a recording call two plain stores (fork_guard.c says how).
 */
#ifndef VRAMTRACE_PRELOAD_FORK_GUARD_H
#define VRAMTRACE_PRELOAD_FORK_GUARD_H

#include <stdatomic.h>
#include <stddef.h>

#include "asym_fence.h"

/* The calling thread's guard (fork_guard.c): enter and leave are inline,
 * and the common case - a thread with a slot of its own entering at the
 * outermost level while no fork is pending - is a few instructions. */
struct vt_fork_guard_self {
    atomic_int *own_inside;  /* its own slot's flag; NULL: no slot yet, or the shared one */
    struct guard_slot *slot; /* NULL, its own slot or the shared one */
    unsigned depth;          /* nesting: only the outermost enter/leave count */
};
extern __thread struct vt_fork_guard_self vt_fork_guard_self
    __attribute__((tls_model("initial-exec")));
extern atomic_int vt_fork_guard_forking; /* a fork waits for the tracer, or runs */

/* The rest of enter and leave: a thread's first enter, the shared slot, a
 * pending fork. */
void vt_fork_guard_enter_slow(struct vt_fork_guard_self *me);
void vt_fork_guard_leave_shared(struct vt_fork_guard_self *me);

static inline void vt_fork_guard_enter(void)
{
    struct vt_fork_guard_self *me = &vt_fork_guard_self;
    if (me->depth++ > 0)
        return; /* already inside: fork waits for the outermost leave */
    /* prepare's vt_asym_heavy pairs with this */
    if (__builtin_expect(me->own_inside == NULL ||
                             vt_asym_store_load(me->own_inside, 1, &vt_fork_guard_forking),
                         0))
        vt_fork_guard_enter_slow(me);
}

static inline void vt_fork_guard_leave(void)
{
    struct vt_fork_guard_self *me = &vt_fork_guard_self;
    if (me->depth == 0 || --me->depth > 0)
        return;
    if (__builtin_expect(me->own_inside != NULL, 1))
        atomic_store_explicit(me->own_inside, 0, memory_order_release);
    else
        vt_fork_guard_leave_shared(me);
}

/* pthread_atfork handlers (recorder.c registers them). */
void vt_fork_guard_prepare(void);
void vt_fork_guard_parent(void);
void vt_fork_guard_child(void);

#endif
