/*
 * Opening the directory an output goes into, safely, whoever owns the
 * directories on the way. In common/ (common/README.md): the tracer
 * (the trace file, preload/record/file/trace_file.c) and the analyzer (its
 * output files and `vramtrace run`'s trace directory,
 * analyzer/common/output_file.c, analyzer/cli/cmd_run.c) follow the same
 * rules.
 *
 * The directory is walked one component at a time with
 * openat(O_PATH | O_DIRECTORY | O_NOFOLLOW), and every step is checked
 * against what the directory holding it allows. The rules are those of the
 * kernel's fs.protected_symlinks and of OpenSSH's and systemd's safe-path
 * checks, applied here because many machines have the sysctl off:
 *
 *  - in a world-writable directory (/tmp, a shared drop), a symbolic link or
 *    a directory is used only when it belongs to us or to the owner of that
 *    directory: another user's link is never followed, another user's
 *    directory is never entered;
 *  - a symbolic link anywhere else is followed (/home may be a link);
 *  - a component that does not exist is made (when asked), 0700, and must
 *    then be a directory of ours, never a link or another user's directory
 *    that appeared meanwhile (a racing rank of the same user is fine);
 *  - the directory the file goes into, when every user may write to it, must
 *    be sticky or ours (otherwise anyone could replace what we write).
 *
 * No allocation and no stdio: the tracer's writer thread calls it.
 */
#ifndef VRAMTRACE_COMMON_SAFE_PATH_H
#define VRAMTRACE_COMMON_SAFE_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* Why a walk was refused, as a phrase naming the component ("/tmp/s/t is a
 * symbolic link of uid 65534 in the world-writable /tmp/s"); empty when the
 * failure is a plain system error (errno says it). */
struct vt_safe_path_refusal {
    char text[640];
};

/* Opens the directory part of path (everything before its last '/'; "." when
 * there is none) as an O_PATH descriptor (close-on-exec), making missing
 * components when create is true. *base is set to the last component of
 * path. Returns the descriptor, or -1 with errno set: EPERM or ELOOP with
 * refusal->text filled when a rule above refused a component. */
int vt_safe_path_open_dir(const char *path, bool create, const char **base,
                          struct vt_safe_path_refusal *refusal);

/* The same for a directory named whole (every component is walked). */
int vt_safe_path_open_whole_dir(const char *dir, bool create,
                                struct vt_safe_path_refusal *refusal);

#endif
