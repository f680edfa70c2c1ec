/*
 * Stack lines that fit the screen. A text report writes through a stream
 * made by vt_stack_lines_open, which lets no control character of a
 * trace's strings out but the newline ('?' in their place,
 * terminal_text.h); a stack is written into it with a vt_stack_writer,
 * frame by frame, innermost first. When its line ends,
 * everything on it is known (what precedes the stack, what follows it:
 * "  [backward]") and the stream drops the frames that do not fit:
 *
 *   6.00 GiB     384  device_alloc (train_eval_phases.c:60) <- ... 3 more  via cudaMallocAsync
 *
 * Frames are dropped whole, outermost first, for a marker " <- ... N
 * more". When the files are what keeps frames off the line, the line
 * leaves them out instead ("grow_kv_cache:175"); if not even the first
 * frame fits, it is shown by its name alone, and the line is longer than
 * the width only when that name is. docs/internals/REPORT_INTERNALS.md,
 * "Stacks".
 */
#ifndef VRAMTRACE_REPORT_STACK_LINE_H
#define VRAMTRACE_REPORT_STACK_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A stream that writes to `to`, fitting each line with a stack to width
 * columns (0: no limit; frames cut by vt_stack_end's `hidden` are still
 * counted in a marker). NULL if out of memory. */
FILE *vt_stack_lines_open(FILE *to, size_t width);
/* Writes what is pending and closes the stream (not `to`); 0, or EOF if
 * a write failed. */
int vt_stack_lines_close(FILE *lines);

struct vt_stack_writer {
    FILE *out;
    bool fit;    /* out is a vt_stack_lines_open stream: mark the frames */
    size_t n;    /* frames written */
};

/* fit false: the frames are written as they are, joined by " <- " (on any
 * stream: --full-stacks). */
void vt_stack_begin(struct vt_stack_writer *w, FILE *out, bool fit);
/* One frame: "name (file:line)", file's directories left out; file NULL:
 * "name". Where the line is too short to show the frames so, they may be
 * shown "name:line", unless keep_file (Python: many functions share a
 * name, "forward"). Control characters of a hostile trace are written as
 * '?'. */
void vt_stack_frame(struct vt_stack_writer *w, const char *name, const char *file,
                    uint64_t line, bool keep_file);
/* Ends the stack: hidden frames were left out before the fit (--frames)
 * and count in its marker; tag (may be NULL) follows the frames,
 * "  via cudaMallocAsync". Nothing is written if no frame was. */
void vt_stack_end(struct vt_stack_writer *w, size_t hidden, const char *tag);

#endif
