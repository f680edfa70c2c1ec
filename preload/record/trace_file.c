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

/* Creates the directories path names that do not exist yet, mode 0700, as
 * `mkdir -p` would, so that a pattern naming a new directory per run
 * (traces/run7/rank%r.vtrace) just works. A component that exists when it is
 * looked at is the user's: followed, symlink or not (/home may be a link).
 * One that did not exist must end up a directory of ours: made by this
 * process or by another of the same user racing to make it (every rank of a
 * job starts at once), never a symlink or another user's directory that
 * appeared meanwhile (ELOOP, EPERM: refused, nothing is written there).
 * Returns 0 or an errno. No allocation: the writer thread calls it. */
static int make_parents(const char *path)
{
    char dir[4096];
    size_t len = strlen(path);
    if (len >= sizeof dir)
        return ENAMETOOLONG;
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0; /* in the current or the root directory */
    *slash = '\0';
    for (char *p = dir + 1;; p++) {
        bool last = *p == '\0';
        if (*p != '/' && !last)
            continue;
        if (p[-1] == '/') { /* "a//b": nothing between */
            if (last)
                break;
            continue;
        }
        *p = '\0';
        struct stat st;
        if (stat(dir, &st) == 0) {
            if (!S_ISDIR(st.st_mode))
                return ENOTDIR;
        } else if (errno != ENOENT) {
            return errno;
        } else if (mkdir(dir, 0700) != 0) {
            if (errno != EEXIST)
                return errno;
            if (lstat(dir, &st) != 0)
                return errno;
            if (S_ISLNK(st.st_mode))
                return ELOOP;
            if (!S_ISDIR(st.st_mode))
                return ENOTDIR;
            if (st.st_uid != geteuid())
                return EPERM;
        }
        if (last)
            break;
        *p = '/';
    }
    return 0;
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
    if (fd < 0 && errno == ENOENT) {
        int err = make_parents(path);
        if (err) {
            errno = err;
            return -1;
        }
        fd = create_new(path);
    }
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
