/*
 * A read trace's tables, as the renderers see them once the run is over:
 * its process record, strings, threads, APIs, devices, stack nodes and
 * modules (the symbolizer's input), and how its reading ended.
 *
 * The renderers (report/, export/'s diff) go through these and never
 * through the trace's reader: the run stage owns the reader, and by the
 * time a result is handed out every reader has been released (no file
 * open, no chunk buffer; trace_reader.h, vt_reader_release), so what is
 * left of it is these tables. All of them are read-only and live as long
 * as the analysis (vt_analysis_free).
 */
#ifndef VRAMTRACE_RUN_INPUT_TABLES_H
#define VRAMTRACE_RUN_INPUT_TABLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "symbolize.h"

/* NULL when the trace broke before its process record. */
const struct vt_process_info *vt_input_process(const struct vt_input *in);
/* A string id's text (phase names, range names); NULL for 0 or unknown. */
const char *vt_input_string(const struct vt_input *in, uint64_t id);
/* An API name id's text ("cudaMalloc"...); NULL for 0 or unknown. */
const char *vt_input_api(const struct vt_input *in, uint64_t id);
const struct vt_thread_info *vt_input_thread(const struct vt_input *in, uint64_t id);
/* NULL for a device the trace has no record of. */
const struct vt_device_info *vt_input_device(const struct vt_input *in, uint64_t ordinal);
/* The device's capacity from its record; 0 when the trace has none. */
uint64_t vt_input_device_total(const struct vt_input *in, int64_t ordinal);
bool vt_input_stack_node(const struct vt_input *in, uint64_t id, uint64_t *parent, uint64_t *ip);
size_t vt_input_module_count(const struct vt_input *in);
const struct vt_module_info *vt_input_module_at(const struct vt_input *in, size_t index);

/* The symbolizer of the trace's modules (vt_symbolizer_new), and a
 * stack's frames through it (vt_stack_frames; sym NULL: addresses only). */
struct vt_symbolizer *vt_input_symbolizer_new(const struct vt_input *in,
                                              const struct vt_symbolize_options *opt);
size_t vt_input_stack_frames(const struct vt_input *in, struct vt_symbolizer *sym, uint64_t stack,
                             size_t max, vt_frame_fn fn, void *ctx);
/* False when no frame of the input's stacks through sym can have a
 * function's name (vt_stack_frames_may_be_named). */
bool vt_input_frames_may_be_named(const struct vt_input *in, const struct vt_symbolizer *sym);
/* False when no frame of the input's stacks through sym can be a Python
 * frame (vt_stack_frames_may_be_python). */
bool vt_input_frames_may_be_python(const struct vt_input *in, const struct vt_symbolizer *sym);
/* A stack of an input through a symbolizer, walked as stack_where.h's
 * vt_stack_walk walks one (src: a struct vt_input_stack). */
struct vt_input_stack {
    const struct vt_input *in;
    struct vt_symbolizer *sym;
    uint64_t stack;
};
size_t vt_input_stack_walk(void *src, vt_frame_fn fn, void *ctx);

/* How its reading ended: cut short (and the note saying where), the unit
 * of its time deltas, and the error that stopped it (NULL: none). */
bool vt_input_truncated(const struct vt_input *in);
const char *vt_input_truncation_note(const struct vt_input *in);
uint32_t vt_input_time_unit_ns(const struct vt_input *in);
const char *vt_input_read_error(const struct vt_input *in);

#endif
