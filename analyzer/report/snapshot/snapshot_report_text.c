/* The snapshot report as text: the story first (peaks, failures with their
 * verdicts), then who held the memory, phases, and the segment maps. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame_class.h"
#include "snapshot_render.h"
#include "stack_line.h"

#define SEGMENT_ROWS 10

struct where {
    struct vt_stack_writer w;
    size_t max, hidden;
    bool full;
};

static void where_frame(void *ctx, const char *file, const char *name, int64_t line)
{
    struct where *w = ctx;
    /* torch's own Python frames (module.py _call_impl...) say nothing. */
    struct vt_frame_classifier c = {0};
    struct vt_frame f = {.function = name, .file = file, .module = "python"};
    if (!w->full && vt_frame_classify(&c, &f) == VT_FRAME_FRAMEWORK)
        return;
    if (w->max && w->w.n >= w->max) {
        w->hidden++;
        return;
    }
    vt_stack_frame(&w->w, name, line ? file : NULL, line > 0 ? (uint64_t)line : 0, true);
}

/* The frames that explain an allocation (Python first, torch's own left
 * out), fitted to the line; --full-stacks: every frame recorded. */
void vt_snap_print_where(FILE *out, const struct vt_pickle_value *frames,
                         const struct vt_report_layout *layout)
{
    struct where w = {.max = layout->full_stacks ? 0 : layout->text_frames,
                      .full = layout->full_stacks};
    vt_stack_begin(&w.w, out, !layout->full_stacks);
    if (layout->full_stacks) {
        for (size_t i = 0, n = vt_snap_frame_count(frames); i < n; i++) {
            const char *file, *name;
            int64_t line;
            if (vt_snap_frame(frames, i, &file, &name, &line))
                where_frame(&w, file, name, line);
        }
    } else {
        vt_snap_explaining_frames(frames, where_frame, &w);
    }
    vt_stack_end(&w.w, w.hidden, NULL);
    if (w.w.n == 0)
        fputs("(no Python frames)", out);
}

static const char *bytes(uint64_t v, char *buf)
{
    return vt_format_bytes(v, buf, 32);
}

static void print_time(FILE *out, const struct vt_snap_device *d, size_t index)
{
    int64_t t, t0;
    char s[32];
    if (vt_snap_time_at(d, index, &t) && vt_snap_time_at(d, 0, &t0))
        fprintf(out, ", %s into the trace", vt_format_seconds((t - t0) * 1000, s, sizeof s));
}

static int cmp_free_desc(const void *a, const void *b)
{
    const struct vt_segmap_segment *x = *(const struct vt_segmap_segment *const *)a;
    const struct vt_segmap_segment *y = *(const struct vt_segmap_segment *const *)b;
    if (x->free_bytes != y->free_bytes)
        return x->free_bytes > y->free_bytes ? -1 : 1;
    return x->seg->addr < y->seg->addr ? -1 : x->seg->addr > y->seg->addr;
}

static void print_segmap(FILE *out, const char *title, const struct vt_segmap *m,
                         const struct vt_snap_state *st)
{
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "  %s: %zu segments, reserved %s, allocated %s, free in segments %s\n", title,
            m->nsegments, bytes(st->reserved, b1), bytes(st->allocated, b2),
            bytes(m->free_bytes, b3));
    fprintf(out, "    largest free block %s (small pool %s, large pool %s), fragmentation %.1f%%\n",
            bytes(m->largest_free, b1), bytes(m->largest_free_small, b2),
            bytes(m->largest_free_large, b3), 100.0 * m->fragmentation);
    const struct vt_segmap_segment **order = calloc(m->nsegments ? m->nsegments : 1, sizeof *order);
    if (!order)
        return;
    for (size_t k = 0; k < m->nsegments; k++)
        order[k] = &m->segments[k];
    qsort(order, m->nsegments, sizeof *order, cmp_free_desc);
    size_t rows = m->nsegments < SEGMENT_ROWS ? m->nsegments : SEGMENT_ROWS;
    if (rows && order[0]->free_bytes) {
        fprintf(out, "    segments with the most free bytes:\n");
        fprintf(out, "    %-16s %11s %5s %11s %11s %11s  %s\n", "address", "size", "pool", "used",
                "free", "largest", "blocks (A allocated, . free, in address order)");
        for (size_t k = 0; k < rows && order[k]->free_bytes; k++) {
            const struct vt_segmap_segment *s = order[k];
            fprintf(out, "    0x%-14" PRIx64 " %11s %5s %11s %11s %11s  ", s->seg->addr,
                    bytes(s->seg->size, b1), s->seg->is_small ? "small" : "large",
                    bytes(s->allocated, b2), bytes(s->free_bytes, b3), bytes(s->largest_free, b4));
            for (size_t b = 0; b < s->nblocks && b < 40; b++)
                fputc(m->blocks[s->first + b].free ? '.' : 'A', out);
            if (s->nblocks > 40)
                fprintf(out, "... (%zu blocks)", s->nblocks);
            fputc('\n', out);
        }
    }
    free(order);
}

static void print_oom(FILE *out, const struct vt_report_layout *layout, const struct vt_snap_device *d,
                      size_t n, const struct vt_snap_oom *o)
{
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "  out of memory #%zu at trace entry %zu", n, o->index);
    print_time(out, d, o->index + 1);
    fprintf(out, ": %s\n", vt_snap_verdict_name(o->verdict));
    fprintf(out, "    tried to allocate %s (a new segment of %s) on stream %" PRId64 "\n",
            bytes(o->ev->size, b1), bytes(o->segment_bytes, b2), o->ev->stream);
    fprintf(out, "    device free %s; this process: allocated %s, reserved %s\n",
            bytes(o->ev->device_free, b1), bytes(o->state.allocated, b2),
            bytes(o->state.reserved, b3));
    fprintf(out, "    free inside partly used segments %s, largest free block %s (%s in the same pool and stream)\n",
            bytes(o->map.free_bytes, b1), bytes(o->map.largest_free, b2),
            bytes(o->largest_free_same_pool, b4));
    switch (o->verdict) {
    case VT_SNAP_FRAGMENTED:
        fprintf(out, "    -> fragmentation: free device memory plus free cached blocks cover the request,\n"
                     "       but no single piece of %s exists (fragmentation %.1f%%)\n",
                bytes(o->ev->size, b1), 100.0 * o->map.fragmentation);
        break;
    case VT_SNAP_EXHAUSTED:
        fprintf(out, "    -> exhausted: even all free bytes together (%s) are less than the request;\n"
                     "       live tensors (and other holders of device memory) fill the GPU\n",
                bytes(o->ev->device_free + o->map.free_bytes, b1));
        break;
    case VT_SNAP_LIMITED:
        fprintf(out, "    -> limited: the device had room for the segment; a memory fraction\n"
                     "       (torch.cuda.set_per_process_memory_fraction) or a limit refused it\n");
        break;
    }
    fputs("    at: ", out);
    vt_snap_print_where(out, o->ev->frames, layout);
    fputc('\n', out);
    print_segmap(out, "segments at the failure", &o->map, &o->state);
}

static void print_device(FILE *out, const struct vt_report_selection *select, const struct vt_report_layout *layout,
                         const struct vt_snap_device *d)
{
    char b1[32], b2[32], b3[32], b4[32];
    if (d->tl.nev == 0 && d->tl.initial.nsegs == 0 && d->final_state.nsegs == 0)
        return; /* an unused device of device_traces */
    fprintf(out, "\ndevice %" PRId64 ": %zu trace entries (", d->device, d->tl.nev);
    bool first = true;
    for (int a = 0; a <= VT_SNAP_UNKNOWN_ACTION; a++)
        if (d->counts[a]) {
            fprintf(out, "%s%s %zu", first ? "" : ", ", vt_snap_action_name((enum vt_snap_action)a),
                    d->counts[a]);
            first = false;
        }
    fputs(")\n", out);
    fprintf(out, "  allocated peak  %12s  at entry %zu", bytes(d->peak_allocated, b1),
            d->peak_allocated_index);
    print_time(out, d, d->peak_allocated_index);
    fprintf(out, ", %zu live blocks\n", d->at_peak.nlive);
    fprintf(out, "  reserved peak   %12s  (segments)\n", bytes(d->peak_reserved, b1));
    fprintf(out, "  trace start: allocated %s, reserved %s (%zu blocks already live); end: allocated %s, reserved %s\n",
            bytes(d->tl.initial.allocated, b1), bytes(d->tl.initial.reserved, b2),
            d->tl.initial.nlive, bytes(d->tl.final_allocated, b3), bytes(d->tl.final_reserved, b4));
    if (d->nooms == 0)
        fputs("  no out-of-memory entries in the trace\n", out);
    for (size_t k = 0; k < d->nooms; k++)
        print_oom(out, layout, d, k + 1, &d->ooms[k]);

    fprintf(out, "  top stacks at the allocated peak (%zu sites):\n", d->nsites);
    fprintf(out, "    %12s %7s  %s\n", "bytes", "count", "allocated at (Python frames, innermost first)");
    for (size_t k = 0; k < d->nsites && k < layout->top; k++) {
        const struct vt_snap_site *s = &d->sites[k];
        fprintf(out, "    %12s %7" PRIu64 "  ", bytes(s->bytes, b1), s->count);
        if (s->before_window)
            fputs("(allocated before the trace window: stack not recorded)", out);
        else
            vt_snap_print_where(out, s->frames, layout);
        if (s->backward)
            fputs("  [backward]", out);
        fputc('\n', out);
    }
    if (d->nphases) {
        fputs("  phases (allocated peak while the phase ran):\n", out);
        for (size_t k = 0; k < d->nphases; k++) {
            const struct vt_snap_phase *p = &d->phases[k];
            if (select->phase && strcmp(select->phase, p->name))
                continue;
            fprintf(out, "    %-40s %12s  %zu allocations%s\n", p->name, bytes(p->peak_bytes, b1),
                    p->allocs, p->annotation ? "  (record_function)" : "");
        }
    }
    if (d->annotations_unplaced)
        fputs("  (record_function annotations not placed: the trace has no time_us)\n", out);
    print_segmap(out, "segments at the allocated peak", &d->map_at_peak, &d->at_peak);
    if (d->tl.inconsistencies)
        fprintf(out, "  note: %zu trace entries disagree with the final state\n", d->tl.inconsistencies);
}

int vt_snap_report_text(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                        const struct vt_report_layout *layout, FILE *to)
{
    /* Every line goes through it: stack lines are fitted to the width. */
    FILE *out = vt_stack_lines_open(to, layout->full_stacks ? 0 : layout->width);
    if (!out)
        return 2;
    char conf[512];
    vt_alloc_config_format(&a->cfg, conf, sizeof conf);
    fprintf(out, "PyTorch memory snapshot %s: %zu segments, %zu device trace(s)%s\n", a->snap.path,
            a->snap.nsegments, a->snap.ndevices, a->snap.old_format ? " (old format: segments only)" : "");
    fprintf(out, "allocator settings: %s%s\n", a->snap.settings.present ? conf : "not recorded (defaults assumed)",
            a->snap.settings.conf && *a->snap.settings.conf ? "" : "");
    if (a->snap.settings.conf && *a->snap.settings.conf)
        fprintf(out, "PYTORCH_CUDA_ALLOC_CONF=%s\n", a->snap.settings.conf);
    for (size_t k = 0; k < a->ndevices; k++)
        if (vt_snap_device_selected(select, &a->devices[k]))
            print_device(out, select, layout, &a->devices[k]);
    return vt_stack_lines_close(out) ? 2 : 0;
}
