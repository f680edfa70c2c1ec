/*
 * A trace's allocation failure, told again with PyTorch's own numbers when
 * the Python bootstrap (python/, docs/PYTORCH.md) wrote the allocator's
 * snapshot at it: the "vramtrace.torch" mark that follows the failure
 * names the snapshot (beside the trace) and the observer's figures;
 * the snapshot is read and judged by the snapshot analysis's own rule
 * (vt_snap_oom_judge), so the driver's view - which cannot see inside
 * segments - gets the allocator's: reserved, allocated, reserved but
 * unallocated, the largest free block against the request, the live
 * tensors by Python stack, and the advice that fits.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "snapshot_analysis.h"
#include "snapshot_render.h"

#define TORCH_DOMAIN "vramtrace.torch"

struct torch_mark {
    int64_t device;
    uint64_t n, alloc, device_allocated, device_free;
    char snapshot[256];
};

/* "key=value" among the blank-separated words of text. */
static bool field(const char *text, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, " ");
        if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            size_t v = len - klen - 1;
            if (v >= n)
                return false;
            memcpy(out, p + klen + 1, v);
            out[v] = '\0';
            return true;
        }
        p += len;
        while (*p == ' ')
            p++;
    }
    return false;
}

static bool field_u64(const char *text, const char *key, uint64_t *v)
{
    char buf[32], *end;
    if (!field(text, key, buf, sizeof buf) || !buf[0])
        return false;
    *v = strtoull(buf, &end, 10);
    return *end == '\0';
}

/* The bootstrap's mark for the request ooms[first .. end) of l: the first
 * "oom" mark of the vramtrace.torch domain on its device after its first
 * failure and before the next request's. */
static bool mark_for(struct vt_report *rep, size_t input, const struct vt_ledger *l, size_t first,
                     size_t end, struct torch_mark *m)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    const struct vt_oom *o = &l->ooms[first];
    uint64_t until = end < l->nooms ? l->ooms[end].time_ns : UINT64_MAX;
    for (size_t k = 0; k < rp->nmarks; k++) {
        const struct vt_mark *mk = &rp->marks[k];
        if (mk->time_ns < o->time_ns || mk->time_ns >= until || !mk->domain ||
            strcmp(vt_report_string(rep, input, mk->domain), TORCH_DOMAIN) != 0)
            continue;
        const char *text = vt_report_string(rep, input, mk->name);
        uint64_t dev;
        if (strncmp(text, "oom ", 4) != 0 || !field_u64(text, "device", &dev) ||
            (int64_t)dev != o->device)
            continue;
        memset(m, 0, sizeof *m);
        m->device = (int64_t)dev;
        field_u64(text, "n", &m->n);
        field_u64(text, "alloc", &m->alloc);
        field_u64(text, "device_allocated", &m->device_allocated);
        field_u64(text, "device_free", &m->device_free);
        if (!field(text, "snapshot", m->snapshot, sizeof m->snapshot))
            m->snapshot[0] = '\0';
        return true;
    }
    return false;
}

static const char *b(uint64_t v, char *buf)
{
    return vt_format_bytes(v, buf, 32);
}

static void print_tensors(FILE *out, const struct vt_report_options *opt,
                          const struct vt_snap_state *st)
{
    struct vt_snap_site *sites;
    size_t n;
    char b1[32];
    if (!vt_snap_group_sites(st, &sites, &n))
        return;
    size_t with_stack = 0;
    for (size_t k = 0; k < n; k++)
        with_stack += !sites[k].before_window && vt_snap_frame_count(sites[k].frames) > 0;
    if (!with_stack) {
        fputs("      live tensors' stacks: not recorded (`vramtrace run --torch-history` records "
              "them)\n", out);
    } else {
        fputs("      live tensors then, by Python stack:\n", out);
        fprintf(out, "        %12s %7s  %s\n", "bytes", "count", "allocated at");
        for (size_t k = 0; k < n && k < opt->top; k++) {
            fprintf(out, "        %12s %7" PRIu64 "  ", b(sites[k].bytes, b1), sites[k].count);
            if (sites[k].before_window)
                fputs("(allocated before the history began)", out);
            else
                vt_snap_print_where(out, sites[k].frames, opt);
            fputc('\n', out);
        }
    }
    free(sites);
}

static void print_judged(FILE *out, struct vt_report *rep, const struct torch_mark *m,
                         const char *snapshot_path, const struct vt_snap_oom *o, uint64_t request,
                         bool request_known)
{
    char b1[32], b2[32], b3[32];
    uint64_t allocated = 0;
    size_t partly = 0;
    for (size_t k = 0; k < o->map.nsegments; k++) {
        allocated += o->map.segments[k].allocated;
        partly += o->map.segments[k].free_bytes && o->map.segments[k].allocated;
    }
    fprintf(out, "      reserved %s, allocated %s, reserved but unallocated %s", b(o->state.reserved, b1),
            b(allocated, b2), b(o->map.free_bytes, b3));
    if (partly)
        fprintf(out, " (in %zu partly used segment%s)", partly, partly == 1 ? "" : "s");
    fprintf(out, "; %s free on the device\n", b(m->device_free, b1));
    const char *what = request_known ? "requested" : "asked (the segment; --torch-history records the request)";
    switch (o->verdict) {
    case VT_SNAP_FRAGMENTED:
        fprintf(out, "      verdict: fragmented - %s free in cached segments, largest free block %s < %s %s\n",
                b(o->map.free_bytes, b1), b(o->largest_free_same_pool, b2), b(request, b3), what);
        break;
    case VT_SNAP_EXHAUSTED:
        fprintf(out, "      verdict: exhausted - %s free in cached segments and %s on the device, "
                     "less than the %s %s: live tensors fill it\n",
                b(o->map.free_bytes, b1), b(m->device_free, b2), b(request, b3), what);
        break;
    case VT_SNAP_LIMITED:
        fprintf(out, "      verdict: limited - the device had %s free, room for the %s segment: a "
                     "memory fraction or limit refused it\n",
                b(m->device_free, b1), b(o->segment_bytes, b2));
        break;
    }
    print_tensors(out, rep->opt, &o->state);
    /* No simulate command here yet: simulate replays the snapshot's
     * allocations, and the failing request is an oom entry, not one, so it
     * would answer "fits" even for the recorded settings (docs/PYTORCH.md). */
    (void)snapshot_path;
    switch (o->verdict) {
    case VT_SNAP_FRAGMENTED:
        fprintf(out, "      next: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (a request is mapped "
                     "from free pages, not cut from one block); or max_split_size_mb:%" PRIu64
                     " (cached blocks that large stay whole for large requests)\n",
                request >> 20 > 20 ? request >> 20 : 20);
        break;
    case VT_SNAP_EXHAUSTED:
        fputs("      next: no allocator setting makes it fit: the live tensors above fill what it "
              "holds; a smaller batch, activation checkpointing, or dropping references\n", out);
        break;
    case VT_SNAP_LIMITED:
        fputs("      next: raise torch.cuda.set_per_process_memory_fraction, or "
              "PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.6 so the cache is reclaimed "
              "before the limit\n", out);
        break;
    }
}

void vt_report_torch_oom_text(struct vt_report *rep, FILE *out, size_t input,
                              const struct vt_ledger *l, size_t first, size_t end)
{
    struct torch_mark m;
    if (!mark_for(rep, input, l, first, end, &m))
        return;
    if (!m.snapshot[0] || !strcmp(m.snapshot, "-") || strchr(m.snapshot, '/') ||
        !strcmp(m.snapshot, "..")) {
        fprintf(out, "    PyTorch's allocator: out of memory seen (observer #%" PRIu64
                     "), no snapshot written\n", m.n);
        return;
    }
    const char *trace = rep->a->inputs[input].path;
    const char *slash = strrchr(trace, '/');
    char path[4096];
    if (slash)
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - trace), trace, m.snapshot);
    else
        snprintf(path, sizeof path, "%s", m.snapshot);
    fprintf(out, "    PyTorch's allocator at this failure (snapshot %s):\n", path);
    struct vt_snap_analysis a;
    char err[512];
    if (vt_snap_analysis_run(&a, path, err, sizeof err) != 0) {
        fprintf(out, "      not readable: %s\n", err);
        vt_snap_analysis_free(&a);
        return;
    }
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < a.ndevices; k++)
        if (a.devices[k].device == m.device)
            d = &a.devices[k];
    if (!d) {
        /* A snapshot without segments or history on that device: nothing held. */
        fprintf(out, "      nothing of device %" PRId64 " in it\n", m.device);
    } else if (d->nooms) {
        /* With history: the allocator's own oom entry, judged as the
         * snapshot report judges it. */
        const struct vt_snap_oom *o = &d->ooms[d->nooms - 1];
        print_judged(out, rep, &m, path, o, o->ev->size, true);
    } else {
        /* Without history: the snapshot is the state at the observer, after
         * the flush; the request is known as the segment size asked. */
        struct vt_snap_oom o;
        memset(&o, 0, sizeof o);
        o.map = d->map_final;
        o.state = d->final_state;
        vt_snap_oom_judge(&o, m.alloc, 0, m.device_free);
        print_judged(out, rep, &m, path, &o, m.alloc, false);
    }
    vt_snap_analysis_free(&a);
}
