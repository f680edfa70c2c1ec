#define _GNU_SOURCE
#include "input_files.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

void vt_input_files_free(struct vt_input_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        free(f->paths[i]);
    free(f->paths);
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

bool vt_input_files_add(struct vt_input_files *out, const char *arg,
                        const char *const *suffixes, const char *what, FILE *err)
{
    struct stat st;
    if (stat(arg, &st) != 0 || !S_ISDIR(st.st_mode))
        return vt_input_files_take(out, strdup(arg)); /* opening it says what is wrong */
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(err, "vramtrace: %s: cannot list the directory\n", arg);
        return false;
    }
    size_t before = out->n;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!has_suffix(de->d_name, suffixes))
            continue;
        char *p;
        if (asprintf(&p, "%s/%s", arg, de->d_name) < 0 || !vt_input_files_take(out, p)) {
            closedir(d);
            return false;
        }
    }
    closedir(d);
    if (out->n == before) {
        fprintf(err, "vramtrace: %s: no %s files in this directory\n", arg, what);
        return false;
    }
    qsort(out->paths + before, out->n - before, sizeof *out->paths, by_name);
    return true;
}
