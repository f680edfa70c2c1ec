/* The snapshot report as JSON (keys in docs/user/SNAPSHOTS.md). */
#include <string.h>

#include "frame_class.h"
#include "json_writer.h"
#include "snapshot_render.h"

static void frame_json(void *ctx, const char *file, const char *name, int64_t line)
{
    struct vt_json *j = ctx;
    /* torch's own Python frames, which the text report leaves out
     * (vt_snap_print_where), flagged as a trace's frames are */
    struct vt_frame_classifier c = {0};
    struct vt_frame f = {.function = name, .file = file, .module = "python"};
    enum vt_frame_class cls = vt_frame_classify(&c, &f);
    vt_json_begin_object(j);
    vt_json_kv_string(j, "function", name);
    vt_json_kv_string(j, "file", file);
    vt_json_kv_int(j, "line", line);
    vt_json_kv_bool(j, "folded", cls != VT_FRAME_OWN);
    vt_json_kv_string(j, "folded_as", vt_frame_class_name(cls));
    vt_json_end_object(j);
}

void vt_snap_frames_json(struct vt_json *j, const struct vt_pickle_value *frames)
{
    vt_json_key(j, "frames");
    vt_json_begin_array(j);
    vt_snap_explaining_frames(frames, frame_json, j);
    vt_json_end_array(j);
}

static void time_json(struct vt_json *j, const char *key, const struct vt_snap_device *d,
                      size_t index)
{
    int64_t t;
    vt_json_key(j, key);
    if (vt_snap_time_at(d, index, &t))
        vt_json_int(j, t);
    else
        vt_json_null(j);
}

static void segmap_json(struct vt_json *j, const struct vt_segmap *m, const struct vt_snap_state *st)
{
    uint64_t occupied = 0;
    for (size_t k = 0; k < m->nsegments; k++)
        occupied += m->segments[k].allocated;
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "segment_count", m->nsegments);
    vt_json_kv_uint(j, "reserved_bytes", st->reserved);
    vt_json_kv_uint(j, "allocated_bytes", st->allocated);
    vt_json_kv_uint(j, "occupied_bytes", occupied);
    vt_json_kv_uint(j, "free_bytes", m->free_bytes);
    vt_json_kv_uint(j, "largest_free_block_bytes", m->largest_free);
    vt_json_kv_uint(j, "largest_free_small_pool_bytes", m->largest_free_small);
    vt_json_kv_uint(j, "largest_free_large_pool_bytes", m->largest_free_large);
    vt_json_kv_double(j, "fragmentation", m->fragmentation);
    vt_json_kv_uint(j, "blocks_outside_segments", m->outside);
    vt_json_key(j, "segments");
    vt_json_begin_array(j);
    for (size_t k = 0; k < m->nsegments; k++) {
        const struct vt_segmap_segment *s = &m->segments[k];
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "address", s->seg->addr);
        vt_json_kv_uint(j, "size", s->seg->size);
        vt_json_kv_string(j, "pool", s->seg->is_small ? "small" : "large");
        vt_json_kv_int(j, "stream", s->seg->stream);
        vt_json_kv_bool(j, "expandable", s->seg->is_expandable);
        vt_json_kv_uint(j, "occupied_bytes", s->allocated);
        vt_json_kv_uint(j, "requested_bytes", s->requested);
        vt_json_kv_uint(j, "free_bytes", s->free_bytes);
        vt_json_kv_uint(j, "largest_free_block_bytes", s->largest_free);
        vt_json_key(j, "blocks");
        vt_json_begin_array(j);
        for (size_t b = 0; b < s->nblocks; b++) {
            const struct vt_segmap_block *bl = &m->blocks[s->first + b];
            vt_json_begin_object(j);
            vt_json_kv_uint(j, "address", bl->addr);
            vt_json_kv_uint(j, "size", bl->size);
            vt_json_kv_uint(j, "requested_size", bl->requested);
            vt_json_kv_string(j, "state", bl->free ? "free" : "allocated");
            vt_json_end_object(j);
        }
        vt_json_end_array(j);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void oom_json(struct vt_json *j, const struct vt_snap_device *d, const struct vt_snap_oom *o)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "index", o->index);
    time_json(j, "time_us", d, o->index + 1);
    vt_json_kv_uint(j, "requested_bytes", o->ev->size);
    vt_json_kv_uint(j, "segment_bytes", o->segment_bytes);
    vt_json_kv_int(j, "stream", o->ev->stream);
    vt_json_kv_uint(j, "device_free_bytes", o->ev->device_free);
    vt_json_kv_uint(j, "allocated_bytes", o->state.allocated);
    vt_json_kv_uint(j, "reserved_bytes", o->state.reserved);
    vt_json_kv_uint(j, "free_cached_bytes", o->map.free_bytes);
    vt_json_kv_uint(j, "largest_free_block_bytes", o->map.largest_free);
    vt_json_kv_uint(j, "largest_free_block_same_pool_bytes", o->largest_free_same_pool);
    vt_json_kv_double(j, "fragmentation", o->map.fragmentation);
    vt_json_kv_string(j, "verdict", vt_snap_verdict_name(o->verdict));
    vt_snap_frames_json(j, o->ev->frames);
    vt_json_key(j, "segment_map");
    segmap_json(j, &o->map, &o->state);
    vt_json_end_object(j);
}

static void device_json(struct vt_json *j, const struct vt_report_selection *select,
                        const struct vt_report_layout *layout, const struct vt_snap_device *d)
{
    vt_json_begin_object(j);
    vt_json_kv_int(j, "device", d->device);
    vt_json_kv_uint(j, "trace_entries", d->tl.nev);
    vt_json_key(j, "actions");
    vt_json_begin_object(j);
    for (int a = 0; a <= VT_SNAP_UNKNOWN_ACTION; a++)
        if (d->counts[a])
            vt_json_kv_uint(j, vt_snap_action_name((enum vt_snap_action)a), d->counts[a]);
    vt_json_end_object(j);
    vt_json_kv_uint(j, "initial_allocated_bytes", d->tl.initial.allocated);
    vt_json_kv_uint(j, "initial_reserved_bytes", d->tl.initial.reserved);
    vt_json_kv_uint(j, "initial_live_blocks", d->tl.initial.nlive);
    vt_json_kv_uint(j, "final_allocated_bytes", d->tl.final_allocated);
    vt_json_kv_uint(j, "final_reserved_bytes", d->tl.final_reserved);
    vt_json_kv_uint(j, "peak_allocated_bytes", d->peak_allocated);
    vt_json_kv_uint(j, "peak_allocated_index", d->peak_allocated_index);
    time_json(j, "peak_time_us", d, d->peak_allocated_index);
    vt_json_kv_uint(j, "peak_live_blocks", d->at_peak.nlive);
    vt_json_kv_uint(j, "peak_reserved_bytes", d->peak_reserved);
    vt_json_kv_uint(j, "peak_reserved_index", d->peak_reserved_index);
    time_json(j, "peak_reserved_time_us", d, d->peak_reserved_index);
    vt_json_kv_uint(j, "inconsistencies", d->tl.inconsistencies);
    vt_json_key(j, "peak_breakdown");
    vt_json_begin_array(j);
    for (size_t k = 0; k < d->nsites && k < layout->top; k++) {
        const struct vt_snap_site *s = &d->sites[k];
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "bytes", s->bytes);
        vt_json_kv_uint(j, "count", s->count);
        vt_json_kv_bool(j, "backward", s->backward);
        vt_json_kv_bool(j, "before_trace", s->before_window);
        vt_snap_frames_json(j, s->frames);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_kv_uint(j, "peak_sites", d->nsites);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t k = 0; k < d->nphases; k++) {
        const struct vt_snap_phase *p = &d->phases[k];
        if (select->phase && strcmp(select->phase, p->name))
            continue;
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", p->name);
        vt_json_kv_string(j, "source", p->annotation ? "record_function" : "frames");
        vt_json_kv_uint(j, "peak_bytes", p->peak_bytes);
        vt_json_kv_uint(j, "peak_index", p->peak_index);
        time_json(j, "peak_time_us", d, p->peak_index);
        vt_json_kv_uint(j, "allocations", p->allocs);
        vt_json_kv_uint(j, "ranges", p->ranges);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_kv_bool(j, "annotations_unplaced", d->annotations_unplaced);
    vt_json_key(j, "ooms");
    vt_json_begin_array(j);
    for (size_t k = 0; k < d->nooms; k++)
        oom_json(j, d, &d->ooms[k]);
    vt_json_end_array(j);
    vt_json_key(j, "segments_at_peak");
    segmap_json(j, &d->map_at_peak, &d->at_peak);
    vt_json_key(j, "segments_at_end");
    segmap_json(j, &d->map_final, &d->final_state);
    vt_json_end_object(j);
}

void vt_snap_report_json_object(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                                const struct vt_report_layout *layout, struct vt_json *j)
{
    vt_json_begin_object(j);
    vt_json_kv_string(j, "file", a->snap.path);
    vt_json_kv_string(j, "format", a->snap.old_format ? "segment_list" : "snapshot_dict");
    vt_json_kv_uint(j, "segment_count", a->snap.nsegments);
    vt_json_key(j, "allocator_settings");
    if (a->snap.settings.present) {
        char conf[512];
        vt_alloc_config_format(&a->cfg, conf, sizeof conf);
        vt_json_begin_object(j);
        vt_json_kv_string(j, "PYTORCH_CUDA_ALLOC_CONF", a->snap.settings.conf);
        vt_json_kv_string(j, "effective", conf);
        vt_json_end_object(j);
    } else {
        vt_json_null(j);
    }
    vt_json_key(j, "devices");
    vt_json_begin_array(j);
    for (size_t k = 0; k < a->ndevices; k++)
        if (vt_snap_device_selected(select, &a->devices[k]))
            device_json(j, select, layout, &a->devices[k]);
    vt_json_end_array(j);
    vt_json_end_object(j);
}
