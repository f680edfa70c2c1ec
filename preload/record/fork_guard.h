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
 * fork can wait is one writer round, or a hook's bounded wait for a buffer
 * block. Enter/leave nest (a signal handler's hook inside a hook) and cost
 * a recording call two plain stores (fork_guard.c says how).
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
