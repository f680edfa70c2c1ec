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

static int create_new(int dir, const char *name)
{
    int fd;
    do
        fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* Taken by something a trace could have been (a file, a link): worth a
 * numbered name. AT_SYMLINK_NOFOLLOW: the link itself, never its target. */
static bool taken_by_file_or_link(int dir, const char *name)
{
    struct stat st;
    return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
           (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode));
}

/* The last component of name (an alternative of the same directory). */
static const char *last_component(const char *name)
{
    const char *slash = strrchr(name, '/');
    return slash ? slash + 1 : name;
}

int vt_trace_file_create(const char *path, char *actual, size_t actual_len,
                         unsigned *alternatives, struct vt_safe_path_refusal *refusal)
{
    *alternatives = 0;
    /* The directories are walked, made where missing (`mkdir -p`, 0700, so
     * that traces/run7/rank%r.vtrace just works) and checked (safe_path.h):
     * the file is then created in the directory that was checked. */
    const char *base;
    int dir = vt_safe_path_open_dir(path, true, &base, refusal);
    if (dir < 0)
        return -1;
    int fd = create_new(dir, base);
    if (fd >= 0 || (errno != EEXIST && errno != ELOOP) || !taken_by_file_or_link(dir, base)) {
        int err = errno;
        if (fd >= 0 && snprintf(actual, actual_len, "%s", path) >= (int)actual_len) {
            close(fd);
            unlinkat(dir, base, 0); /* ours: created just now */
            fd = -1;
            err = ENAMETOOLONG;
        }
        close(dir);
        errno = err;
        return fd;
    }
    for (unsigned n = 1; n <= VT_TRACE_FILE_ALTERNATIVES; n++) {
        if (vt_trace_file_alternative(path, n, actual, actual_len) != 0) {
            close(dir);
            errno = ENAMETOOLONG;
            return -1;
        }
        *alternatives = n;
        fd = create_new(dir, last_component(actual));
        if (fd >= 0 || (errno != EEXIST && errno != ELOOP))
            break; /* made, or the directory itself refuses: no point going on */
    }
    int err = fd >= 0 ? 0 : errno == ELOOP ? EEXIST : errno; /* every name taken: EEXIST */
    close(dir);
    errno = err;
    return fd;
}
