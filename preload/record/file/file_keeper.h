/*
 * The trace file's descriptor, in a descriptor table the program cannot
 * reach.
 *
 * A descriptor in the program's table is a number the program may reuse at
 * any moment: a program that dup2()s its own file onto every number would get a
 * zstd chunk in its file, because checking the number (private_fd.h) and
 * writing through it are two system calls, and the number can change in
 * between. A check cannot close that window; only a number the program
 * cannot touch can.
 *
 * So the file is created, written and closed by a thread of the tracer's
 * (the keeper) whose descriptor table is its own: its first act is
 * close_range(0, ~0U, CLOSE_RANGE_UNSHARE), which gives it a new, empty
 * table without ever holding a reference to one of the program's files
 * (the kernel copies only the descriptors below the range, none). The
 * program's dup2, close, close_range and open work on the program's table;
 * the keeper's table holds nothing but the trace file (and, while the
 * file is created, the directories walked to it). The program's
 * /proc/self/fd shows no descriptor of the tracer's at all.
 *
 * The keeper does nothing of its own: the writer hands it one request at a
 * time (create, write, close) and waits for the answer, inside its fork
 * guard, so a fork never catches the keeper at work. The bytes still reach
 * the page cache through write(2) as they did: what a SIGKILL keeps is
 * unchanged. A fork child has no keeper (threads are not copied) and its
 * table never held the trace file: it forgets the parent's and starts its
 * own, lazily, like the writer.
 *
 * Where the kernel refuses a table of its own (close_range before Linux
 * 5.9 or refused by a seccomp profile, then unshare(CLONE_FILES) refused as
 * well), or the keeper thread cannot start (an address-space limit), the
 * writer keeps the descriptor in the program's table itself, as before:
 * moved high and checked before every write (private_fd.h). That narrows
 * the window; only the keeper closes it. VRAMTRACE_VERBOSE says which.
 *
 * A seccomp filter may answer close_range or unshare by killing the
 * process or the thread, or by a SIGSYS that - the keeper's signals being
 * blocked - the kernel makes fatal. Under a filter (/proc/self/status),
 * each call is first made by a child process (a copy of the writer, raw
 * system calls, SIGSYS at its default, no core, no SIGCHLD): the keeper
 * makes only a call the child lived through. And no wait on the keeper is
 * on a keeper that is gone: a thread killed later ends the keeper's trace,
 * never the program.
 *
 * All of these are called by the writer thread only, except
 * vt_keeper_after_fork_child (the child's only thread) and
 * vt_keeper_forget (once the writer thread has ended).
 */
#ifndef VRAMTRACE_PRELOAD_FILE_KEEPER_H
#define VRAMTRACE_PRELOAD_FILE_KEEPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "private_fd.h"
#include "safe_path.h"

/* Creates the trace file (vt_trace_file_create, trace_file.h: the same
 * arguments and the same errors), in the keeper's table when the kernel
 * allows one, else in the program's, moved high. Fills id with the file's
 * (device, inode). Returns 0, or -1 with errno. */
int vt_keeper_create(const char *path, char *actual, size_t actual_len, unsigned *alternatives,
                     struct vt_safe_path_refusal *refusal, struct vt_fd_identity *id);
/* Whether a file is open (created and not closed since). */
bool vt_keeper_is_open(void);
/* Whether the calling thread is the keeper (a crash there: the writer
 * would wait for it, so there is nobody to flush). Signal-safe. */
bool vt_keeper_is_calling_thread(void);
/* NULL when the file is in a table of its own; else why it is in the
 * program's (for VRAMTRACE_VERBOSE). */
const char *vt_keeper_why_shared(void);
/* Writes all of p. Returns 0 or an errno value; EBADF when the descriptor
 * in the program's table is no longer the file (never written then). */
int vt_keeper_write(const uint8_t *p, size_t len);
/* Closes the file (if open) and ends the keeper thread. Returns 0 or the
 * errno of close (a delayed write error of a network file system). */
int vt_keeper_close(void);
/* The writer thread has ended (and with it the keeper): no file is open
 * any more; closes a descriptor left in the program's table, if still the
 * file. */
void vt_keeper_forget(void);
/* Before the tracer's threads stop for a while (a namespace change needs
 * a process of one thread: writer.h, vt_writer_pause): the file is opened
 * again in the program's table through /proc's link to the keeper's
 * descriptor (the same file, moved high, checked), and the keeper ends.
 * Returns 0 (nothing to do without a keeper), -1 if the file cannot be
 * held there (the keeper stays). */
int vt_keeper_hand_out(void);
/* The writer thread has started again: the file held in the program's
 * table goes back into a keeper's table of its own, again through /proc,
 * and leaves the program's; where that cannot be, it stays there, checked
 * before every write, as where the kernel refuses the keeper a table. */
void vt_keeper_adopt(void);
/* In a fork child: the parent's keeper does not exist here; its file is in
 * this table only if it was the program's table (then closed, if still
 * the file). */
void vt_keeper_after_fork_child(void);

#endif
