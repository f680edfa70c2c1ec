/* Output files written whole or not at all; see output_file.h. */
#define _GNU_SOURCE
#include "output_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool vt_output_file_open(struct vt_output_file *o, const char *path, const char *cmd,
                           FILE *err)
{
    memset(o, 0, sizeof *o);
    if (!path || !strcmp(path, "-")) {
        o->f = stdout;
        return true;
    }
    o->path = path;
    size_t n = strlen(path) + 16;
    o->tmp = malloc(n);
    if (!o->tmp) {
        fprintf(err, "vramtrace %s: out of memory\n", cmd);
        return false;
    }
    /* PATH.tmp.XXXXXX beside PATH: a dot file would hide it, but the same
     * directory is what keeps the rename atomic. */
    snprintf(o->tmp, n, "%s.tmpXXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fprintf(err, "vramtrace %s: %s: cannot write here: %s\n", cmd, path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return false;
    }
    /* mkstemp makes 0600; an output is an ordinary file (0666 & ~umask). */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
        fprintf(err, "vramtrace %s: %s: %s\n", cmd, o->tmp, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
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
    else if (fsync(fileno(o->f)) != 0 && errno != EINVAL)
        e = errno;
    if (fclose(o->f) != 0 && !e)
        e = errno;
    o->f = NULL;
    if (!e && rename(o->tmp, o->path) != 0)
        e = errno;
    if (e) {
        fprintf(err, "vramtrace %s: %s: %s; nothing written\n", cmd, o->path, strerror(e));
        unlink(o->tmp);
    }
    free(o->tmp);
    o->tmp = NULL;
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
        unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
}
