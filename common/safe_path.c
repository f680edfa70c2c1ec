/* Walking to an output's directory safely. See safe_path.h. */
#define _GNU_SOURCE
#include "safe_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_FLAGS (O_PATH | O_DIRECTORY | O_CLOEXEC)
#define PATH_BYTES 4096

static int open_dir(int at, const char *name, bool follow)
{
    int fd;
    do
        fd = openat(at, name, DIR_FLAGS | (follow ? 0 : O_NOFOLLOW));
    while (fd < 0 && errno == EINTR);
    return fd;
}

/* Whether an entry of dir (a link to follow, a directory to enter) may be
 * used: anything, unless every user may write to dir; then only ours or
 * dir's owner's (fs.protected_symlinks, extended to directories). */
static bool trusted_entry(const struct stat *dir, const struct stat *entry)
{
    return !(dir->st_mode & S_IWOTH) || entry->st_uid == geteuid() ||
           entry->st_uid == dir->st_uid;
}

/* "a/b/c" of the walk so far: the path up to the end of the component. */
static int refuse(struct vt_safe_path_refusal *r, int err, const char *path, size_t upto,
                  const char *what, const struct stat *st, const char *dir, size_t dir_len)
{
    snprintf(r->text, sizeof r->text, "%.*s is %s owned by uid %lu in the world-writable %.*s",
             (int)upto, path, what, (unsigned long)st->st_uid, (int)dir_len, dir);
    errno = err;
    return -1;
}

static int refuse_phrase(struct vt_safe_path_refusal *r, int err, const char *path, size_t upto,
                         const char *phrase)
{
    snprintf(r->text, sizeof r->text, "%.*s %s", (int)upto, path, phrase);
    errno = err;
    return -1;
}

/* One step from cur (whose stat is *cur_st) into name. Returns the new
 * descriptor with *st filled, or -1 (errno, and r->text when refused).
 * path[0, upto) names the component, path[0, dir_len) its directory. */
static int step(int cur, const struct stat *cur_st, const char *name, bool create,
                const char *path, size_t upto, size_t dir_len, struct stat *st,
                struct vt_safe_path_refusal *r)
{
    const char *dir_name = dir_len ? path : (path[0] == '/' ? "/" : ".");
    size_t dir_shown = dir_len ? dir_len : 1;
    bool dots = !strcmp(name, ".") || !strcmp(name, "..");
    int fd = open_dir(cur, name, false);
    if (fd >= 0) {
        if (fstat(fd, st) != 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (!dots && !trusted_entry(cur_st, st)) {
            close(fd);
            return refuse(r, EPERM, path, upto, "a directory", st, dir_name, dir_shown);
        }
        return fd;
    }
    int err = errno;
    struct stat lst;
    if (err == ENOTDIR || err == ELOOP) {
        if (fstatat(cur, name, &lst, AT_SYMLINK_NOFOLLOW) != 0)
            return -1;
        if (!S_ISLNK(lst.st_mode)) {
            errno = ENOTDIR;
            return -1;
        }
        if (!trusted_entry(cur_st, &lst))
            return refuse(r, ELOOP, path, upto, "a symbolic link", &lst, dir_name, dir_shown);
        fd = open_dir(cur, name, true); /* ours or the directory owner's link */
    } else if (err == ENOENT && create) {
        if (mkdirat(cur, name, 0700) != 0 && errno != EEXIST)
            return -1;
        fd = open_dir(cur, name, false);
        if (fd < 0) {
            if (errno != ENOTDIR && errno != ELOOP)
                return -1;
            return refuse_phrase(r, ELOOP, path, upto,
                                 "became a symbolic link or a file while it was made");
        }
        if (fstat(fd, st) != 0 || st->st_uid != geteuid()) {
            close(fd);
            return refuse_phrase(r, EPERM, path, upto,
                                 "became another user's directory while it was made");
        }
        return fd;
    } else {
        errno = err;
        return -1;
    }
    if (fd >= 0 && fstat(fd, st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* Walks path[0, len) from "/" or the current directory. */
static int walk(const char *path, size_t len, bool create, struct vt_safe_path_refusal *r)
{
    r->text[0] = '\0';
    if (len >= PATH_BYTES) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int cur = open_dir(AT_FDCWD, path[0] == '/' ? "/" : ".", true);
    struct stat cur_st;
    if (cur < 0)
        return -1;
    if (fstat(cur, &cur_st) != 0) {
        close(cur);
        return -1;
    }
    size_t i = 0, dir_len = path[0] == '/' ? 1 : 0;
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        size_t start = i;
        while (i < len && path[i] != '/')
            i++;
        if (i == start)
            break;
        char name[PATH_BYTES];
        memcpy(name, path + start, i - start);
        name[i - start] = '\0';
        struct stat st;
        int next = step(cur, &cur_st, name, create, path, i, dir_len, &st, r);
        int e = errno;
        close(cur);
        if (next < 0) {
            errno = e;
            return -1;
        }
        cur = next;
        cur_st = st;
        dir_len = i;
    }
    /* The directory itself: writable by everyone and not sticky, only ours. */
    if ((cur_st.st_mode & S_IWOTH) && !(cur_st.st_mode & S_ISVTX) &&
        cur_st.st_uid != geteuid()) {
        close(cur);
        snprintf(r->text, sizeof r->text,
                 "%.*s is writable by every user, not sticky, and owned by uid %lu",
                 (int)(len ? len : 1), len ? path : ".", (unsigned long)cur_st.st_uid);
        errno = EPERM;
        return -1;
    }
    return cur;
}

int vt_safe_path_open_dir(const char *path, bool create, const char **base,
                          struct vt_safe_path_refusal *refusal)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    size_t len = slash ? (size_t)(slash - path) : 0;
    if (slash == path)
        len = 1; /* "/name": the root directory */
    return walk(path, len, create, refusal);
}

int vt_safe_path_open_whole_dir(const char *dir, bool create,
                                struct vt_safe_path_refusal *refusal)
{
    return walk(dir, strlen(dir), create, refusal);
}
