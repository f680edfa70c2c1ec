/*
 * One frame of `vramtrace top` as lines of text: the header (the view,
 * each GPU against its capacity, the job's first failure), a row per
 * process and, for an opened process, its details. Batch mode prints the
 * lines (top_batch.c); the full-screen view draws the same lines
 * (top_screen.c), so both show the same figures in the same columns.
 */
#ifndef VRAMTRACE_CLI_TOP_FRAME_H
#define VRAMTRACE_CLI_TOP_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "follow_view.h"
#include "symbolize.h"
#include "top_divergence.h"

enum top_line_kind {
    TOP_LINE_TITLE,
    TOP_LINE_HEADER,   /* a GPU, the first failure */
    TOP_LINE_COLUMNS,  /* the rows' column names */
    TOP_LINE_ROW,      /* a running process */
    TOP_LINE_EXITED,   /* a process that exited */
    TOP_LINE_DETAIL,   /* the opened process */
    TOP_LINE_BLANK,
};

struct top_line {
    enum top_line_kind kind;
    long process;      /* ROW, EXITED: its index in the view's processes */
    char *text;
};

struct top_lines {
    struct top_line *lines;
    size_t n, cap;
};

/* The opened process's symbols, kept from frame to frame. */
struct top_symbols {
    const struct vt_follow_process *process;
    struct vt_symbolizer *sym;
    size_t modules;    /* the module records it was made from */
    const struct vt_symbolize_options *options;
};

struct top_frame_options {
    enum vt_follow_sort sort;
    size_t width;          /* columns a line may use */
    bool utf8;             /* block characters for the last minute */
    uint64_t delay_ns;     /* between frames (the title says it) */
    long opened;           /* a process index to detail, -1: none */
    size_t sites;          /* call sites listed for it */
    struct top_symbols *symbols;
    struct top_divergence *divergence; /* the rows' marks (NULL: none) */
};

/* The frame of the view at now_ns (monotonic) / now (wall clock); order
 * receives the rows' process indexes (nprocesses entries). False if
 * memory ran out. */
bool top_frame_build(const struct vt_follow_view *v, const struct top_frame_options *o,
                     uint64_t now_ns, time_t now, size_t *order, struct top_lines *out);
void top_lines_clear(struct top_lines *l);
void top_symbols_free(struct top_symbols *s);
/* The sort key's name as the title says it ("now", "peak", "growth", "rank"). */
const char *top_sort_name(enum vt_follow_sort key);

#endif
