/*
 * The files a command's arguments stand for: a file is itself, a directory
 * every file in it and in its subdirectories (up to 4 levels, not through
 * symlinks: a job's traces per host, traces/%h/...) whose name ends with one
 * of the given suffixes, in path order. A file is taken once, however many
 * arguments name it (a directory and a file in it, a link to it): the
 * repeat is said on stderr and left out.
 */
#ifndef VRAMTRACE_COMMON_INPUT_FILES_H
#define VRAMTRACE_COMMON_INPUT_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "pair_map.h"

struct vt_input_files {
    char **paths; /* owned */
    size_t n, cap;
    struct vt_pair_map seen; /* (device, inode) of each file added */
};

/* Adds what arg stands for to out. suffixes: NULL-terminated, e.g.
 * {".vtrace", NULL}; what lists them says "no *.vtrace files". False (and
 * the reason on err) if a directory cannot be listed or has none, or memory
 * ran out. */
bool vt_input_files_add(struct vt_input_files *out, const char *arg,
                        const char *const *suffixes, const char *what, FILE *err);
/* The files below a directory (as above), none being no error: for a
 * directory whose files are still to come. err NULL: a subdirectory that
 * cannot be listed is skipped silently. False if memory ran out. */
bool vt_input_files_below(struct vt_input_files *out, const char *dir,
                          const char *const *suffixes, FILE *err);
/* Takes ownership of path (NULL: out of memory, false). */
bool vt_input_files_take(struct vt_input_files *out, char *path);
void vt_input_files_free(struct vt_input_files *f);
/* The first bytes of a regular file (up to n), to tell its kind by its
 * content; 0 for anything else (a FIFO is never waited on) or an error. */
size_t vt_input_file_head(const char *path, void *buf, size_t n);

/* The file name part of a path: a program or file named by what it is,
 * not where it lives. */
const char *vt_path_base_name(const char *path);

#endif
