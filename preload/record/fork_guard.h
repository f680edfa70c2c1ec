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
 * runs inside vt_fork_guard_enter/leave (a shared lock); the atfork prepare
 * handler takes the lock exclusively, so fork happens only when no tracer
 * code is running anywhere: no loader lock, no tracer lock, no allocator
 * lock (some allocators - the sanitizers' - are not fork-safe) is held by
 * the tracer at that moment. The lock prefers the writer so that a stream
 * of hooks cannot starve a fork. The longest a fork can wait is one writer
 * round, or a hook's bounded wait for a buffer block.
 */
#ifndef VRAMTRACE_PRELOAD_FORK_GUARD_H
#define VRAMTRACE_PRELOAD_FORK_GUARD_H

void vt_fork_guard_enter(void);
void vt_fork_guard_leave(void);

/* pthread_atfork handlers (recorder.c registers them). */
void vt_fork_guard_prepare(void);
void vt_fork_guard_parent(void);
void vt_fork_guard_child(void);

#endif
