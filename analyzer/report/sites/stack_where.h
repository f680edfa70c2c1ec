/*
 * A site's stack as a person reads it, the same in every view that names
 * sites in text (the report, `diff`; docs/user/REPORT.md, "Stacks"): the
 * program's own frames first - its Python frames where recorded - then the
 * API it called, "via cudaMallocAsync"; the frames of the CUDA runtime,
 * the driver, known allocators and libc's start-up are left out
 * (frame_class.c says which). Written through a vt_stack_writer
 * (stack_line.h), so a stack-lines stream fits it to the width.
 */
#ifndef VRAMTRACE_REPORT_STACK_WHERE_H
#define VRAMTRACE_REPORT_STACK_WHERE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "frame_class.h"
#include "symbolize.h"

/* Calls fn(ctx, frame) for each frame of one stack, innermost first;
 * returns how many. May be called more than once for a stack. */
typedef size_t (*vt_stack_walk)(void *src, vt_frame_fn fn, void *ctx);

/* Writes the stack walk(src) delivers to out: folded, at most max_frames
 * of the program's (0: all), the others counted in the line's marker;
 * full_stacks: every frame as recorded, none folded. "(no stack
 * recorded)" when it has none. */
void vt_stack_where(FILE *out, bool full_stacks, size_t max_frames, vt_stack_walk walk,
                    void *src);
/* The same, told whether the stack can have Python frames at all
 * (vt_stack_frames_may_be_python: false spares the walk that looks for
 * them, half the cost of a stack's line), and for a stack whose
 * intercepted call is known (api, a failure's; else NULL): where no frame
 * names the API (the hook stands in for the driver's own frame; ctypes
 * called it), "via api". */
void vt_stack_where_known(FILE *out, bool full_stacks, size_t max_frames, vt_stack_walk walk,
                          void *src, const char *api, bool may_have_python);

/* The frame that names a site in every view (the text report's and diff's
 * first frame, the page's label, a failure's user_frame, the exports'
 * labels): the program's own innermost frame - its innermost Python frame
 * where the stack has Python frames - as "function (file.c:60)" (the
 * file's directories left out) or "function". NULL (buf untouched) when
 * every frame is folded or none has a function's name. */
const char *vt_stack_site_frame(vt_stack_walk walk, void *src, char *buf, size_t n);
/* Whether the frame names the site: own (not folded) and, when the stack
 * has Python frames (python), one of them. cls: a classifier of this
 * stack, fed every frame in order. */
bool vt_stack_frame_names_site(struct vt_frame_classifier *cls, const struct vt_frame *f,
                               bool python);
/* Whether a stack (walk(src)) has Python frames. */
bool vt_stack_has_python(vt_stack_walk walk, void *src);

#endif
