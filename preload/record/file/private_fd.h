/*
 * The tracer's one descriptor (the trace file) kept out of the program's
 * way. A program expects to own the low numbers: one that closes stdout and
 * opens a file expects fd 1, a shell redirects 3-9, and open() hands out
 * the lowest free number. So the trace's descriptor is moved high, just
 * under min(RLIMIT_NOFILE, 1024), close-on-exec; and since a program may
 * still close it (a daemon closing every descriptor) and even reuse the
 * number, the writer checks it is still the file it created before every
 * write: never a byte into a descriptor that is no longer ours - unless the
 * number changes between the check and the write, which no check can
 * prevent. So this is only the fallback: the trace file normally lives in
 * a descriptor table of its own, out of the program's reach
 * (file_keeper.h), and this serves where the kernel refuses one.
 */
#ifndef VRAMTRACE_PRELOAD_PRIVATE_FD_H
#define VRAMTRACE_PRELOAD_PRIVATE_FD_H

#include <stdbool.h>
#include <sys/types.h>

struct vt_fd_identity {
    dev_t dev;
    ino_t ino;
};

/* Moves fd high (close-on-exec) and closes the original; returns the new
 * number, or -1 with errno (fd closed) if no number >= 3 is free. Fills id. */
int vt_fd_move_high(int fd, struct vt_fd_identity *id);
/* Whether fd still is the file id describes. */
bool vt_fd_still_ours(int fd, const struct vt_fd_identity *id);

#endif
