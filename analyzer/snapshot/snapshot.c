/* Loading a memory snapshot pickle into the structures of snapshot.h. */
#define _GNU_SOURCE
#include "snapshot.h"

#include "input_files.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *vt_snap_action_name(enum vt_snap_action a)
{
    switch (a) {
#define AS_NAME(id, name) \
    case VT_SNAP_##id:    \
        return name;
        VT_SNAP_ACTIONS(AS_NAME)
#undef AS_NAME
    default:
        return "unknown";
    }
}

static enum vt_snap_action parse_action(const char *s)
{
#define AS_MATCH(id, name) \
    if (!strcmp(s, name))  \
        return VT_SNAP_##id;
    VT_SNAP_ACTIONS(AS_MATCH)
#undef AS_MATCH
    return VT_SNAP_UNKNOWN_ACTION;
}

/* Only a regular file can be a snapshot. Opened without blocking (a FIFO
 * without a writer, a device) and its type checked before any read. */
bool vt_snap_head_is_pickle(const void *head, size_t n)
{
    return n >= 1 && *(const unsigned char *)head == 0x80;
}

bool vt_snap_is_pickle(const char *path)
{
    unsigned char c = 0;
    return vt_snap_head_is_pickle(&c, vt_input_file_head(path, &c, 1));
}

static int bad(char *err, size_t errlen, const char *path, const struct vt_pickle_value *v,
               const char *fmt, ...)
{
    int n = snprintf(err, errlen, "%s: byte %llu: ", path,
                     (unsigned long long)(v ? v->offset : 0));
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return 2;
}

/* A non-negative integer field (addresses and sizes). */
static bool get_u64(const struct vt_pickle_value *d, const char *key, uint64_t *v)
{
    int64_t x;
    if (!vt_pickle_get_int(d, key, &x) || x < 0)
        return false;
    *v = (uint64_t)x;
    return true;
}

static const struct vt_pickle_value *frames_of(const struct vt_pickle_value *d)
{
    const struct vt_pickle_value *f = vt_pickle_dict_get(d, "frames");
    return vt_pickle_is_seq(f) ? f : NULL;
}

/* The work a snapshot may ask for, bounded. Memoized values are shared,
 * so 120 KB of pickle can name one segment 20,000 times, whose blocks are
 * one block 20,000 times, whose frames are one frame 20,000 times: 8e12
 * elements to walk for 60,000 memo references, minutes of work in little
 * memory. Everything the analysis walks - segments, blocks, trace entries
 * and the frames of each - is counted as it is loaded and the snapshot is
 * refused past VT_SNAP_ELEMENTS_PER_BYTE per byte of the file plus
 * VT_SNAP_ELEMENTS_BASE. Real snapshots (tests/data/pytorch-snapshots)
 * have 0.19-0.48 per byte, their frames shared by memo too. */

struct load_budget {
    uint64_t used, limit;
};

/* Counts one element and its frames; false once the budget is spent. */
static bool spend(struct load_budget *b, const struct vt_pickle_value *frames)
{
    b->used += 1 + (frames ? frames->n : 0);
    return b->used <= b->limit;
}

static int over_budget(char *err, size_t errlen, const char *path,
                       const struct vt_pickle_value *v, const struct load_budget *b)
{
    return bad(err, errlen, path, v,
               "the snapshot expands to more than %llu segments, blocks, trace entries and "
               "frames (%d per byte of the file, plus %d): objects shared by memo repeated "
               "over and over; refused",
               (unsigned long long)b->limit, VT_SNAP_ELEMENTS_PER_BYTE, VT_SNAP_ELEMENTS_BASE);
}

static int load_block(const char *path, const struct vt_pickle_value *b, struct vt_snap_block *out,
                      struct load_budget *budget, char *err, size_t errlen)
{
    if (!b || b->type != VT_PICKLE_DICT)
        return bad(err, errlen, path, b, "a block is not a dict");
    if (!spend(budget, frames_of(b)))
        return over_budget(err, errlen, path, b, budget);
    if (!get_u64(b, "address", &out->addr) || !get_u64(b, "size", &out->size))
        return bad(err, errlen, path, b, "a block without a valid address or size");
    if (!get_u64(b, "requested_size", &out->requested_size))
        out->requested_size = out->size;
    const char *st = vt_pickle_get_str(b, "state");
    if (!st)
        return bad(err, errlen, path, b, "a block without a state");
    if (!strcmp(st, "active_allocated"))
        out->state = VT_BLOCK_ACTIVE_ALLOCATED;
    else if (!strcmp(st, "active_pending_free") || !strcmp(st, "active_awaiting_free"))
        out->state = VT_BLOCK_ACTIVE_PENDING_FREE;
    else
        out->state = VT_BLOCK_INACTIVE;
    out->frames = frames_of(b);
    return 0;
}

static int load_segment(const char *path, size_t index, const struct vt_pickle_value *s,
                        struct vt_snap_segment *out, struct load_budget *budget, char *err,
                        size_t errlen)
{
    if (!s || s->type != VT_PICKLE_DICT)
        return bad(err, errlen, path, s, "segments[%zu] is not a dict", index);
    if (!spend(budget, frames_of(s)))
        return over_budget(err, errlen, path, s, budget);
    if (!vt_pickle_get_int(s, "device", &out->device))
        out->device = 0;
    if (!get_u64(s, "address", &out->addr) || !get_u64(s, "total_size", &out->total_size))
        return bad(err, errlen, path, s, "segments[%zu] has no valid address or total_size", index);
    if (!vt_pickle_get_int(s, "stream", &out->stream))
        out->stream = 0;
    const char *type = vt_pickle_get_str(s, "segment_type");
    out->is_small = type ? !strcmp(type, "small") : out->total_size <= (2u << 20);
    if (!vt_pickle_get_bool(s, "is_expandable", &out->is_expandable))
        out->is_expandable = false;
    const struct vt_pickle_value *blocks = vt_pickle_dict_get(s, "blocks");
    if (!vt_pickle_is_seq(blocks))
        return bad(err, errlen, path, s, "segments[%zu] has no list of blocks", index);
    out->blocks = calloc(blocks->n ? blocks->n : 1, sizeof *out->blocks);
    if (!out->blocks)
        return bad(err, errlen, path, s, "out of memory");
    out->nblocks = blocks->n;
    for (size_t k = 0; k < blocks->n; k++)
        if (load_block(path, blocks->items[k], &out->blocks[k], budget, err, errlen))
            return 2;
    return 0;
}

static int load_event(const char *path, const struct vt_pickle_value *e, struct vt_snap_event *out,
                      struct load_budget *budget, char *err, size_t errlen)
{
    if (!e || e->type != VT_PICKLE_DICT)
        return bad(err, errlen, path, e, "a trace entry is not a dict");
    if (!spend(budget, frames_of(e)))
        return over_budget(err, errlen, path, e, budget);
    const char *action = vt_pickle_get_str(e, "action");
    if (!action)
        return bad(err, errlen, path, e, "a trace entry without an action");
    out->action = parse_action(action);
    if (!get_u64(e, "addr", &out->addr))
        out->addr = 0;
    if (!get_u64(e, "size", &out->size))
        out->size = 0;
    if (!vt_pickle_get_int(e, "stream", &out->stream))
        out->stream = 0;
    out->has_time = vt_pickle_get_int(e, "time_us", &out->time_us);
    if (!get_u64(e, "device_free", &out->device_free))
        out->device_free = 0;
    if (out->action != VT_SNAP_OOM && out->action != VT_SNAP_SNAPSHOT &&
        out->action != VT_SNAP_UNKNOWN_ACTION && !vt_pickle_dict_get(e, "addr"))
        return bad(err, errlen, path, e, "a '%s' trace entry without addr", action);
    out->frames = frames_of(e);
    return 0;
}

static void load_settings(const struct vt_pickle_value *a, struct vt_snap_settings *st)
{
    st->max_split_size = UINT64_MAX;
    if (!a || a->type != VT_PICKLE_DICT)
        return;
    st->present = true;
    st->conf = vt_pickle_get_str(a, "PYTORCH_CUDA_ALLOC_CONF");
    int64_t v;
    /* Recorded in bytes; -1 stands for "unlimited" (SIZE_MAX). */
    if (vt_pickle_get_int(a, "max_split_size", &v) && v > 0)
        st->max_split_size = (uint64_t)v;
    double d;
    if (vt_pickle_get_double(a, "garbage_collection_threshold", &d))
        st->garbage_collection_threshold = d;
    vt_pickle_get_bool(a, "expandable_segments", &st->expandable_segments);
    /* Keys are the interval starts in MiB: "1", "2", ... "32768". */
    const struct vt_pickle_value *r = vt_pickle_dict_get(a, "roundup_power2_divisions");
    if (r && r->type == VT_PICKLE_DICT) {
        for (size_t k = 0; k < r->n / 2; k++) {
            const struct vt_pickle_value *key = r->items[2 * k], *val = r->items[2 * k + 1];
            if (key->type != VT_PICKLE_STR || val->type != VT_PICKLE_INT || val->i < 0)
                continue;
            unsigned long mb = strtoul(key->s, NULL, 10);
            for (unsigned i = 0; i < VT_ROUNDUP_INTERVALS; i++)
                if (mb == (1ul << i))
                    st->roundup_power2_divisions[i] = (uint64_t)val->i;
        }
    }
}

static void load_annotations(const struct vt_pickle_value *list, struct vt_snapshot *s)
{
    if (!vt_pickle_is_seq(list))
        return;
    s->annotations = calloc(list->n ? list->n : 1, sizeof *s->annotations);
    if (!s->annotations)
        return;
    for (size_t k = 0; k < list->n; k++) {
        const struct vt_pickle_value *a = list->items[k];
        const char *stage = vt_pickle_get_str(a, "stage"), *name = vt_pickle_get_str(a, "name");
        struct vt_snap_annotation *o = &s->annotations[s->nannotations];
        if (!stage || !name || !vt_pickle_get_int(a, "time_us", &o->time_us))
            continue; /* not a record_function annotation: nothing to use */
        if (!vt_pickle_get_int(a, "device", &o->device))
            o->device = -1;
        o->start = !strcmp(stage, "START");
        o->name = name;
        s->nannotations++;
    }
}

int vt_snap_load(const char *path, struct vt_snapshot *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->path = path;
    s->settings.max_split_size = UINT64_MAX;
    if (vt_pickle_parse_file(path, &s->doc, err, errlen))
        return 2;
    const struct vt_pickle_value *root = vt_pickle_doc_root(s->doc);
    struct load_budget budget = {
        0, (uint64_t)vt_pickle_doc_input_bytes(s->doc) * VT_SNAP_ELEMENTS_PER_BYTE +
               VT_SNAP_ELEMENTS_BASE};
    const struct vt_pickle_value *segments = NULL, *traces = NULL;
    if (vt_pickle_is_seq(root)) {
        s->old_format = true; /* a bare list of segments */
        segments = root;
    } else if (root->type == VT_PICKLE_DICT) {
        segments = vt_pickle_dict_get(root, "segments");
        traces = vt_pickle_dict_get(root, "device_traces");
        load_settings(vt_pickle_dict_get(root, "allocator_settings"), &s->settings);
        load_annotations(vt_pickle_dict_get(root, "external_annotations"), s);
    }
    if (!vt_pickle_is_seq(segments))
        return bad(err, errlen, path, root, "not a memory snapshot (no list of segments)");
    s->segments = calloc(segments->n ? segments->n : 1, sizeof *s->segments);
    if (!s->segments)
        return bad(err, errlen, path, root, "out of memory");
    for (size_t k = 0; k < segments->n; k++, s->nsegments++)
        if (load_segment(path, k, segments->items[k], &s->segments[k], &budget, err, errlen)) {
            s->nsegments++;
            return 2;
        }
    if (traces && !vt_pickle_is_seq(traces))
        return bad(err, errlen, path, traces, "device_traces is not a list");
    size_t nd = traces ? traces->n : 0;
    s->traces = calloc(nd ? nd : 1, sizeof *s->traces);
    s->ntrace = calloc(nd ? nd : 1, sizeof *s->ntrace);
    if (!s->traces || !s->ntrace)
        return bad(err, errlen, path, root, "out of memory");
    s->ndevices = nd;
    for (size_t d = 0; d < nd; d++) {
        const struct vt_pickle_value *t = traces->items[d];
        if (!vt_pickle_is_seq(t))
            return bad(err, errlen, path, t, "device_traces[%zu] is not a list", d);
        s->traces[d] = calloc(t->n ? t->n : 1, sizeof *s->traces[d]);
        if (!s->traces[d])
            return bad(err, errlen, path, t, "out of memory");
        s->ntrace[d] = t->n;
        for (size_t k = 0; k < t->n; k++)
            if (load_event(path, t->items[k], &s->traces[d][k], &budget, err, errlen))
                return 2;
    }
    /* A device that has segments but no trace list still is a device. */
    for (size_t k = 0; k < s->nsegments; k++)
        if (s->segments[k].device < 0 || (uint64_t)s->segments[k].device >= 1024)
            return bad(err, errlen, path, segments->items[k], "segment device %lld out of range",
                       (long long)s->segments[k].device);
    return 0;
}

void vt_snap_free(struct vt_snapshot *s)
{
    for (size_t k = 0; k < s->nsegments; k++)
        free(s->segments[k].blocks);
    free(s->segments);
    for (size_t d = 0; d < s->ndevices; d++)
        free(s->traces[d]);
    free(s->traces);
    free(s->ntrace);
    free(s->annotations);
    vt_pickle_doc_free(s->doc);
    memset(s, 0, sizeof *s);
}

size_t vt_snap_frame_count(const struct vt_pickle_value *frames)
{
    return vt_pickle_is_seq(frames) ? frames->n : 0;
}

bool vt_snap_frame(const struct vt_pickle_value *frames, size_t i, const char **filename,
                   const char **name, int64_t *line)
{
    if (!vt_pickle_is_seq(frames) || i >= frames->n)
        return false;
    const struct vt_pickle_value *f = frames->items[i];
    if (!f || f->type != VT_PICKLE_DICT)
        return false;
    *filename = vt_pickle_get_str(f, "filename");
    *name = vt_pickle_get_str(f, "name");
    if (!vt_pickle_get_int(f, "line", line))
        *line = 0;
    if (!*filename)
        *filename = "??";
    if (!*name)
        *name = "??";
    return true;
}

bool vt_snap_frame_is_python(const char *filename)
{
    size_t n = strlen(filename);
    return (n > 3 && !strcmp(filename + n - 3, ".py")) || filename[0] == '<';
}

bool vt_snap_frames_backward(const struct vt_pickle_value *frames)
{
    size_t n = vt_snap_frame_count(frames);
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (vt_snap_frame(frames, i, &file, &name, &line) &&
            !strncmp(name, "torch::autograd::Engine::", 25))
            return true;
    }
    return false;
}

size_t vt_snap_explaining_frames(const struct vt_pickle_value *frames, vt_snap_frame_fn fn,
                                 void *ctx)
{
    size_t n = vt_snap_frame_count(frames), shown = 0;
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (vt_snap_frame(frames, i, &file, &name, &line) && vt_snap_frame_is_python(file)) {
            fn(ctx, file, name, line);
            shown++;
        }
    }
    if (shown)
        return shown;
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (vt_snap_frame(frames, i, &file, &name, &line) &&
            (strstr(name, "Backward") || !strncmp(name, "at::_ops::", 10))) {
            fn(ctx, file, name, line);
            return 1;
        }
    }
    return 0;
}
