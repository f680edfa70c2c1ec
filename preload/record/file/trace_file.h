/*
 * Creating a trace file safely, and where it goes when its name is taken.
 *
 * A trace file is always created new: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600
 * (before the umask). An existing file is never overwritten or appended to
 * and a symlink is never followed, whoever planted it.
 *
 * When the name is already taken by a regular file or a symlink - the same
 * pid wrote a trace before an exec, a fixed VRAMTRACE_OUTPUT is reused, a
 * link was planted - the trace is not lost: it goes to the first free
 * numbered alternative (vt_trace_file_alternative). Any other occupant (a
 * device such as /dev/full, a directory, a fifo) is not a name collision but
 * a wrong output: the creation fails with EEXIST.
 *
 * The directories on the way are walked and made by safe_path.h: another
 * user's link or directory in a world-writable directory is refused.
 */
#ifndef VRAMTRACE_PRELOAD_TRACE_FILE_H
#define VRAMTRACE_PRELOAD_TRACE_FILE_H

#include <stddef.h>

#include "safe_path.h"

/* Numbered alternatives tried after the name itself: .1 to .99. */
#define VT_TRACE_FILE_ALTERNATIVES 99

/* The n-th alternative of path (n >= 1): "<stem>.<n>.vtrace" when path ends
 * in ".vtrace" (after a non-empty stem), else "<path>.<n>". Returns 0, or -1
 * if out is too small. */
int vt_trace_file_alternative(const char *path, unsigned n, char *out, size_t outlen);

/* Creates path, or its first free alternative. Returns the descriptor
 * (O_WRONLY|O_CLOEXEC) with the name used in actual, or -1 with errno set
 * (the error of the last name tried). *alternatives is how many numbered
 * names were tried (0: the name itself failed for another reason). When a
 * directory on the way was refused (safe_path.h), refusal->text says which
 * and why; otherwise it is empty. */
int vt_trace_file_create(const char *path, char *actual, size_t actual_len,
                         unsigned *alternatives, struct vt_safe_path_refusal *refusal);

#endif
