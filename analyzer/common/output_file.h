/*
 * Writing an output file (an export, an HTML page, a summary) whole or not
 * at all: the data goes to a temporary
 * file in the same directory (so the rename cannot cross file systems),
 * which is renamed over the destination only once everything was written
 * and flushed; on any failure it is removed. A reader of the destination
 * sees the old file or the complete new one, never a half-written one.
 * "-" (or no path) is standard output. The directory is reached by the safe
 * walk of safe_path.h (never through another user's link or directory in a
 * world-writable one), and both files are named relative to it.
 * A destination that exists and is not an ordinary file (/dev/null, a
 * FIFO, a terminal, /dev/stdout) is written where it is: renaming a file
 * over it would put that file in its place (run as root, even over
 * /dev/null), and nothing half-written of a stream can be taken back.
 */
#ifndef VRAMTRACE_COMMON_OUTPUT_FILE_H
#define VRAMTRACE_COMMON_OUTPUT_FILE_H

#include <stdbool.h>
#include <stdio.h>

struct vt_output_file {
    FILE *f;
    const char *path;  /* NULL: standard output */
    int dir;           /* the directory, walked safely (-1: none) */
    const char *base;  /* path's last component, in dir */
    char *tmp;         /* the temporary file's name, in dir */
    bool in_place;     /* path is not an ordinary file: written where it is */
};

/* Creates the temporary file. False, with "vramtrace CMD: PATH: reason" on
 * err, when the directory cannot take it. */
bool vt_output_file_open(struct vt_output_file *o, const char *path, const char *cmd,
                           FILE *err);
/* Flushes, syncs and renames into place; false (the temporary removed, the
 * reason on err) if any write failed. */
bool vt_output_file_commit(struct vt_output_file *o, const char *cmd, FILE *err);
/* Removes the temporary file: nothing is left behind. */
void vt_output_file_abort(struct vt_output_file *o);

#endif
