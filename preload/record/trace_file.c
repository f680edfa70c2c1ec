/* Creating a trace file. See trace_file.h. */
#define _GNU_SOURCE
#include "trace_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VT_TRACE_SUFFIX ".vtrace"

int vt_trace_file_alternative(const char *path, unsigned n, char *out, size_t outlen)
{
    size_t len = strlen(path), slen = strlen(VT_TRACE_SUFFIX);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t base_len = strlen(base);
    int w;
    if (base_len > slen && !strcmp(path + len - slen, VT_TRACE_SUFFIX))
        w = snprintf(out, outlen, "%.*s.%u%s", (int)(len - slen), path, n, VT_TRACE_SUFFIX);
    else
        w = snprintf(out, outlen, "%s.%u", path, n);
    return w < 0 || (size_t)w >= outlen ? -1 : 0;
}

static int create_new(const char *path)
{
    int fd;
    do
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* Taken by something a trace could have been (a file, a link): worth a
 * numbered name. lstat: the link itself, never its target. */
static bool taken_by_file_or_link(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

int vt_trace_file_create(const char *path, char *actual, size_t actual_len,
                         unsigned *alternatives)
{
    *alternatives = 0;
    int fd = create_new(path);
    if (fd >= 0 || (errno != EEXIST && errno != ELOOP) || !taken_by_file_or_link(path)) {
        int err = errno;
        if (fd >= 0 && snprintf(actual, actual_len, "%s", path) >= (int)actual_len) {
            close(fd);
            unlink(path); /* ours: created just now */
            fd = -1;
            err = ENAMETOOLONG;
        }
        errno = err;
        return fd;
    }
    for (unsigned n = 1; n <= VT_TRACE_FILE_ALTERNATIVES; n++) {
        if (vt_trace_file_alternative(path, n, actual, actual_len) != 0) {
            errno = ENAMETOOLONG;
            return -1;
        }
        *alternatives = n;
        fd = create_new(actual);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST && errno != ELOOP)
            return -1; /* the directory itself refuses: no point going on */
    }
    errno = EEXIST;
    return -1;
}
