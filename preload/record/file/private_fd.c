/* The trace's descriptor, out of the program's way. See private_fd.h. */
#define _GNU_SOURCE
#include "private_fd.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Below the highest allowed number, but under 1024 (select()'s limit, and
 * a huge limit would make the kernel grow the descriptor table to it):
 * VT_FD_HEADROOM numbers left above ours for programs that count down. */
#define VT_FD_CEILING 1024
#define VT_FD_HEADROOM 32
/* Never below this: 0-2 are the standard streams, 3-9 what shells let
 * users redirect. */
#define VT_FD_LOWEST 10

static int floor_fd(void)
{
    struct rlimit rl;
    rlim_t top = VT_FD_CEILING;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < top)
        top = rl.rlim_cur;
    if (top < VT_FD_LOWEST + VT_FD_HEADROOM)
        return VT_FD_LOWEST;
    return (int)top - VT_FD_HEADROOM;
}

int vt_fd_move_high(int fd, struct vt_fd_identity *id)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, floor_fd());
    if (high < 0)
        high = fcntl(fd, F_DUPFD_CLOEXEC, VT_FD_LOWEST);
    if (high < 0 && fd < 3)
        high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int err = errno;
    if (high < 0 && fd >= 3)
        high = fd; /* nothing higher is free: it is out of 0-2 at least */
    else
        close(fd);
    struct stat st;
    if (high < 0 || fstat(high, &st) != 0) {
        if (high >= 0)
            close(high);
        errno = high < 0 ? err : errno;
        return -1;
    }
    id->dev = st.st_dev;
    id->ino = st.st_ino;
    return high;
}

bool vt_fd_still_ours(int fd, const struct vt_fd_identity *id)
{
    struct stat st;
    return fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}
