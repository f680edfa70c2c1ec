/*
 * A trace the run stage read (run_traces.h), as the exporters name what is
 * in it: a stack's symbolized frames, the site every view names, the
 * process's name, pid and rank. From the input's tables (input_tables.h),
 * never its reader.
 */
#ifndef VRAMTRACE_EXPORT_EXPORT_INPUT_H
#define VRAMTRACE_EXPORT_EXPORT_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "symbolize.h"

struct vt_export_input {
    const struct vt_input *in;
    const struct vt_symbolize_options *sym_opt; /* NULL: addresses only */
    struct vt_symbolizer *sym;                  /* made on first use */
};

void vt_export_input_init(struct vt_export_input *x, const struct vt_input *in,
                          const struct vt_symbolize_options *sym_opt);
void vt_export_input_free(struct vt_export_input *x);

/* The frames of a stack of the input, innermost first; returns how many
 * fn saw. */
size_t vt_export_input_frames(struct vt_export_input *x, uint64_t stack, vt_frame_fn fn,
                              void *ctx);
/* The name every view gives the site of a stack (stack_where.h,
 * vt_stack_site_frame): "grow_kv_cache (train.c:175)"; NULL if none. */
const char *vt_export_input_site(struct vt_export_input *x, uint64_t stack, char *buf,
                                 size_t n);
/* The process's pid (0 if the trace has no process record) and rank
 * (vt_process_rank; -1 if none). */
uint64_t vt_export_input_pid(const struct vt_input *in);
long vt_export_input_rank(const struct vt_input *in);
/* "train_eval_phases (pid 5662, rank 0, host node1)": how exports name a
 * process. */
const char *vt_export_input_name(const struct vt_input *in, char *buf, size_t n);
/* "function (file.c:60)", "function", "module+0x1a2b" or "0x7f00...". */
const char *vt_export_frame_label(const struct vt_frame *f, char *buf, size_t n);

#endif
