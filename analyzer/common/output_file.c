/* Output files written whole or not at all; see output_file.h. */
#define _GNU_SOURCE
#include "output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "safe_path.h"

/* TMP = BASE.tmpXXXXXX, created new in dir (never through a link): the
 * same directory keeps the rename atomic. */
static int create_temporary(int dir, const char *base, char *tmp, size_t tmp_len)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
    for (int tries = 0; tries < 100; tries++) {
        x = x * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
        snprintf(tmp, tmp_len, "%s.tmp%06x", base, (unsigned)(x >> 40) & 0xffffff);
        int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

/* 1: path exists and is not an ordinary file (nor a directory), opened
 * for writing where it is; 0: it is to be replaced whole; -1: it could not
 * be opened (said on err). The open's own fstat decides, so a file put
 * there after the stat is never written over in place. */
static int open_in_place(struct vt_output_file *o, const char *cmd, FILE *err)
{
    struct stat st;
    if (stat(o->path, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))
        return 0;
    int fd = open(o->path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        fprintf(err, "vramtrace %s: %s: cannot write here: %s\n", cmd, o->path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        close(fd);
        return 0;
    }
    if (!(o->f = fdopen(fd, "w"))) {
        fprintf(err, "vramtrace %s: %s: %s\n", cmd, o->path, strerror(errno));
        close(fd);
        return -1;
    }
    o->in_place = true;
    return 1;
}

bool vt_output_file_open(struct vt_output_file *o, const char *path, const char *cmd,
                           FILE *err)
{
    memset(o, 0, sizeof *o);
    o->dir = -1;
    if (!path || !strcmp(path, "-")) {
        o->f = stdout;
        return true;
    }
    o->path = path;
    int placed = open_in_place(o, cmd, err);
    if (placed != 0)
        return placed > 0;
    /* The directory must be one we may safely write in (safe_path.h):
     * not reached through another user's link or directory in a
     * world-writable one. Not made: an output's directory must exist. */
    struct vt_safe_path_refusal refusal;
    o->dir = vt_safe_path_open_dir(path, false, &o->base, &refusal);
    if (o->dir < 0) {
        fprintf(err, "vramtrace %s: %s: cannot write here: %s\n", cmd, path,
                refusal.text[0] ? refusal.text : strerror(errno));
        return false;
    }
    size_t n = strlen(o->base) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) {
        fprintf(err, "vramtrace %s: out of memory\n", cmd);
        close(o->dir);
        o->dir = -1;
        return false;
    }
    int fd = create_temporary(o->dir, o->base, o->tmp, n);
    if (fd < 0) {
        fprintf(err, "vramtrace %s: %s: cannot write here: %s\n", cmd, path, strerror(errno));
        free(o->tmp); /* not ours: never removed */
        o->tmp = NULL;
        vt_output_file_abort(o);
        return false;
    }
    /* created 0600; an output is an ordinary file (0666 & ~umask). */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        fprintf(err, "vramtrace %s: %s: %s\n", cmd, path, strerror(errno));
        close(fd);
        vt_output_file_abort(o);
        return false;
    }
    return true;
}

bool vt_output_file_commit(struct vt_output_file *o, const char *cmd, FILE *err)
{
    if (!o->path) {
        bool ok = fflush(stdout) == 0 && !ferror(stdout);
        if (!ok)
            fprintf(err, "vramtrace %s: standard output: write failed\n", cmd);
        return ok;
    }
    int e = 0;
    if (fflush(o->f) != 0 || ferror(o->f))
        e = errno ? errno : EIO;
    else if (!o->in_place && fsync(fileno(o->f)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(o->f) != 0 && !e)
        e = errno;
    o->f = NULL;
    if (!e && !o->in_place && renameat(o->dir, o->tmp, o->dir, o->base) != 0)
        e = errno;
    if (e && o->in_place)
        fprintf(err, "vramtrace %s: %s: %s\n", cmd, o->path, strerror(e));
    else if (e)
        fprintf(err, "vramtrace %s: %s: %s; nothing written\n", cmd, o->path, strerror(e));
    else {
        free(o->tmp); /* renamed: nothing to remove */
        o->tmp = NULL;
    }
    vt_output_file_abort(o);
    return !e;
}

void vt_output_file_abort(struct vt_output_file *o)
{
    if (!o->path)
        return;
    if (o->f)
        fclose(o->f);
    o->f = NULL;
    if (o->tmp)
        unlinkat(o->dir, o->tmp, 0);
    free(o->tmp);
    o->tmp = NULL;
    if (o->dir >= 0)
        close(o->dir);
    o->dir = -1;
}
