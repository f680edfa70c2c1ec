#define _GNU_SOURCE
#include "input_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow_array.h"

bool vt_input_files_take(struct vt_input_files *out, char *path)
{
    if (!path)
        return false;
    if (!vt_grow_array((void **)&out->paths, &out->cap, out->n + 1, sizeof *out->paths)) {
        free(path);
        return false;
    }
    out->paths[out->n++] = path;
    return true;
}

/* Takes path unless it is a file taken already (said on err, if not NULL);
 * known: path's stat, where the caller has it (NULL: stat here). */
static bool take_once(struct vt_input_files *out, char *path, const struct stat *known,
                      FILE *err)
{
    struct stat st;
    if (known)
        st = *known;
    if (!path || (!known && stat(path, &st) != 0))
        return vt_input_files_take(out, path); /* opening it says what is wrong */
    if (vt_pair_map_get(&out->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino)) {
        if (err)
            fprintf(err, "vramtrace: %s: the same file as one named before: read once\n", path);
        free(path);
        return true;
    }
    return vt_pair_map_put_new(&out->seen, (uint64_t)st.st_dev, (uint64_t)st.st_ino, 1) &&
           vt_input_files_take(out, path);
}

void vt_input_files_free(struct vt_input_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->paths[i]);
    free(f->paths);
    vt_pair_map_free(&f->seen);
    memset(f, 0, sizeof *f);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *const *suffixes)
{
    size_t n = strlen(s);
    for (; *suffixes; suffixes++) {
        size_t m = strlen(*suffixes);
        if (n >= m && !strcmp(s + n - m, *suffixes))
            return true;
    }
    return false;
}

/* Directories below a directory argument looked into: a job's traces per
 * host (traces/%h/...) or per run are one or two levels down. */
#define VT_INPUT_DEPTH_MAX 4

/* Adds the files of dir and of its subdirectories (not through symlinks)
 * whose names end with a suffix. False only if memory ran out; a
 * subdirectory that cannot be listed is said on err and skipped. */
static bool add_dir(struct vt_input_files *out, const char *dir, const char *const *suffixes,
                    int depth, FILE *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        if (err)
            fprintf(err, "vramtrace: %s: cannot list the directory\n", dir);
        return true;
    }
    struct dirent *de;
    bool ok = true;
    while (ok && (de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        bool file = has_suffix(de->d_name, suffixes);
        bool maybe_dir = depth < VT_INPUT_DEPTH_MAX &&
                         (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN);
        if (!file && !maybe_dir)
            continue;
        char *p;
        if (asprintf(&p, "%s/%s", dir, de->d_name) < 0) {
            ok = false;
            break;
        }
        struct stat st;
        if (!file) {
            if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
                ok = add_dir(out, p, suffixes, depth + 1, err);
            free(p);
        } else {
            ok = take_once(out, p, NULL, err);
        }
    }
    closedir(d);
    return ok;
}

bool vt_input_files_add(struct vt_input_files *out, const char *arg,
                        const char *const *suffixes, const char *what, FILE *err)
{
    struct stat st;
    if (stat(arg, &st) != 0)
        return take_once(out, strdup(arg), NULL, err); /* opening it says what is wrong */
    if (!S_ISDIR(st.st_mode)) /* a job's files, each named: one stat each */
        return take_once(out, strdup(arg), &st, err);
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(err, "vramtrace: %s: cannot list the directory\n", arg);
        return false;
    }
    closedir(d);
    size_t before = out->n;
    if (!add_dir(out, arg, suffixes, 0, err))
        return false;
    if (out->n == before) {
        fprintf(err, "vramtrace: %s: no %s files in this directory or below\n", arg, what);
        return false;
    }
    qsort(out->paths + before, out->n - before, sizeof *out->paths, by_name);
    return true;
}

bool vt_input_files_below(struct vt_input_files *out, const char *dir,
                          const char *const *suffixes, FILE *err)
{
    size_t before = out->n;
    if (!add_dir(out, dir, suffixes, 0, err))
        return false;
    qsort(out->paths + before, out->n - before, sizeof *out->paths, by_name);
    return true;
}

size_t vt_input_file_head(const char *path, void *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat st;
    ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, n) : 0;
    close(fd);
    return got > 0 ? (size_t)got : 0;
}

const char *vt_path_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}
