/* A read trace's tables for the renderers; see input_tables.h. */
#include "input_tables.h"

const struct vt_process_info *vt_input_process(const struct vt_input *in)
{
    return vt_reader_process(in->reader);
}

const char *vt_input_string(const struct vt_input *in, uint64_t id)
{
    return vt_reader_string(in->reader, id);
}

const char *vt_input_api(const struct vt_input *in, uint64_t id)
{
    return vt_reader_api(in->reader, id);
}

const struct vt_thread_info *vt_input_thread(const struct vt_input *in, uint64_t id)
{
    return vt_reader_thread(in->reader, id);
}

const struct vt_device_info *vt_input_device(const struct vt_input *in, uint64_t ordinal)
{
    return vt_reader_device(in->reader, ordinal);
}

bool vt_input_stack_node(const struct vt_input *in, uint64_t id, uint64_t *parent, uint64_t *ip)
{
    return vt_reader_stack_node(in->reader, id, parent, ip);
}

size_t vt_input_module_count(const struct vt_input *in)
{
    return vt_reader_module_count(in->reader);
}

const struct vt_module_info *vt_input_module_at(const struct vt_input *in, size_t index)
{
    return vt_reader_module_at(in->reader, index);
}

struct vt_symbolizer *vt_input_symbolizer_new(const struct vt_input *in,
                                              const struct vt_symbolize_options *opt)
{
    return vt_symbolizer_new(in->reader, opt);
}

size_t vt_input_stack_frames(const struct vt_input *in, struct vt_symbolizer *sym, uint64_t stack,
                             size_t max, vt_frame_fn fn, void *ctx)
{
    return vt_stack_frames(in->reader, sym, stack, max, fn, ctx);
}

bool vt_input_frames_may_be_named(const struct vt_input *in, const struct vt_symbolizer *sym)
{
    return vt_stack_frames_may_be_named(in->reader, sym);
}

bool vt_input_frames_may_be_python(const struct vt_input *in, const struct vt_symbolizer *sym)
{
    return vt_stack_frames_may_be_python(in->reader, sym);
}

size_t vt_input_stack_walk(void *src, vt_frame_fn fn, void *ctx)
{
    const struct vt_input_stack *s = src;
    return vt_input_stack_frames(s->in, s->sym, s->stack, 0, fn, ctx);
}

bool vt_input_truncated(const struct vt_input *in)
{
    return vt_reader_truncated(in->reader);
}

const char *vt_input_truncation_note(const struct vt_input *in)
{
    return vt_reader_truncation_note(in->reader);
}

uint32_t vt_input_time_unit_ns(const struct vt_input *in)
{
    return vt_reader_time_unit_ns(in->reader);
}

const char *vt_input_read_error(const struct vt_input *in)
{
    return in->state < 0 ? vt_reader_error(in->reader)->message : NULL;
}

uint64_t vt_input_device_total(const struct vt_input *in, int64_t ordinal)
{
    const struct vt_device_info *dev = ordinal >= 0 ? vt_input_device(in, (uint64_t)ordinal) : NULL;
    return dev ? dev->total_bytes : 0;
}
