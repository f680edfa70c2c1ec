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
 * Every such call runs inside vt_fork_guard_enter/leave (a shared lock); the
 * atfork prepare handler takes the lock exclusively, so fork happens only
 * between those calls. The lock prefers the writer so that a stream of
 * hooks cannot starve a fork.
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
