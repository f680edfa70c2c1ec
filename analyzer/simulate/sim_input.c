/* Building the replay stream of `vramtrace simulate`: see vt_sim_input.h. */
#include "sim_input.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "pair_map.h"
#include "replay.h"
#include "trace_reader.h"

static bool push(struct vt_sim_input *in, size_t *cap, const struct vt_sim_event *e)
{
    if (!vt_grow_array((void **)&in->ev, cap, in->nev + 1, sizeof *in->ev))
        return false;
    in->ev[in->nev++] = *e;
    in->nalloc += e->kind == VT_SIM_ALLOC;
    in->nfree += e->kind == VT_SIM_FREE;
    in->nrelease += e->kind == VT_SIM_RELEASE_CACHE;
    in->nfailed += e->kind == VT_SIM_FAILED_REQUEST;
    return true;
}

static int from_snapshot(struct vt_sim_input *in, int64_t device, char *err, size_t errlen)
{
    in->from_snapshot = true;
    in->snap = calloc(1, sizeof *in->snap);
    if (!in->snap) {
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    if (vt_snap_analysis_run(in->snap, in->path, err, errlen))
        return 2;
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < in->snap->ndevices && !d; k++) {
        const struct vt_snap_device *c = &in->snap->devices[k];
        if (device >= 0 ? c->device == device : c->tl.nev > 0)
            d = c;
    }
    if (!d) {
        snprintf(err, errlen, "%s: byte 0: %s", in->path,
                 device >= 0 ? "no such device in the snapshot" : "no device has trace entries");
        return 2;
    }
    in->device = d->device;
    in->has_recorded_cfg = true;
    in->recorded_cfg = in->snap->cfg;
    in->has_truth = true;
    in->truth = (struct vt_sim_truth){
        .peak_reserved = d->peak_reserved,
        .initial_reserved = d->tl.initial.reserved,
        .final_reserved = d->tl.final_reserved,
        .peak_allocated = d->peak_allocated,
        .segment_allocs = d->counts[VT_SNAP_SEGMENT_ALLOC],
        .segment_frees = d->counts[VT_SNAP_SEGMENT_FREE],
        .initial_segments = d->tl.initial.nsegs,
        .final_segments = d->final_state.nsegs,
    };
    /* The start state: segments, and live blocks with the bytes they
     * occupy (segment_map.h). */
    struct vt_segmap map;
    if (!vt_segmap_build(&map, &d->tl.initial, &in->snap->cfg)) {
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    in->seed_segments = calloc(d->tl.initial.nsegs + 1, sizeof *in->seed_segments);
    in->seed_blocks = calloc(map.nblocks + 1, sizeof *in->seed_blocks);
    if (!in->seed_segments || !in->seed_blocks) {
        vt_segmap_free(&map);
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    memcpy(in->seed_segments, d->tl.initial.segs, d->tl.initial.nsegs * sizeof *in->seed_segments);
    in->nseed_segments = d->tl.initial.nsegs;
    for (size_t k = 0; k < map.nblocks; k++)
        if (!map.blocks[k].free)
            in->seed_blocks[in->nseed_blocks++] = (struct vt_sim_seed_block){
                map.blocks[k].addr, map.blocks[k].size, map.blocks[k].requested};
    vt_segmap_free(&map);

    in->truth.segment_sizes = calloc(in->truth.segment_allocs + 1, sizeof *in->truth.segment_sizes);
    in->truth.segment_addrs = calloc(in->truth.segment_allocs + 1, sizeof *in->truth.segment_addrs);
    if (!in->truth.segment_sizes || !in->truth.segment_addrs) {
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    size_t nsizes = 0;
    for (size_t i = 0; i < d->tl.nev; i++)
        if (d->tl.ev[i].action == VT_SNAP_SEGMENT_ALLOC && nsizes < in->truth.segment_allocs)
        {
            in->truth.segment_addrs[nsizes] = d->tl.ev[i].addr;
            in->truth.segment_sizes[nsizes++] = d->tl.ev[i].size;
        }
    size_t cap = 0;
    bool in_burst = false;
    for (size_t i = 0; i < d->tl.nev; i++) {
        const struct vt_snap_event *e = &d->tl.ev[i];
        struct vt_sim_event s = {.id = e->addr,
                                 .size = e->size,
                                 .stream = e->stream,
                                 .source_index = i,
                                 .frames = e->frames};
        bool keep = true;
        if (e->action == VT_SNAP_ALLOC)
            s.kind = VT_SIM_ALLOC;
        else if (vt_snap_timeline_is_free(&d->tl, e))
            s.kind = VT_SIM_FREE;
        else if (e->action == VT_SNAP_SEGMENT_FREE && !in_burst)
            s.kind = VT_SIM_RELEASE_CACHE;
        else if (e->action == VT_SNAP_OOM)
            s.kind = VT_SIM_FAILED_REQUEST;
        else
            keep = false;
        in_burst = e->action == VT_SNAP_SEGMENT_FREE;
        if (keep && !push(in, &cap, &s)) {
            snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
            return 2;
        }
    }
    return 0;
}

/*
 * A trace's device allocations, as the model's stream: the replay's own
 * live set decides which allocation a record starts or ends (retained
 * handles, mappings, a free naming no device, graph memory freed as plain
 * memory, replaced addresses: analyzer/replay/replay.h), and tells us
 * through on_live; so the bytes the stream holds after each step are those
 * of the report's device ledger, by construction.
 */
struct trace_stream {
    struct vt_sim_input *in;
    size_t cap;                  /* of in->ev */
    struct vt_pair_map alloc_of; /* (kind, addr) -> index of its ALLOC in in->ev */
    size_t source_index;         /* the record being fed */
    size_t whole;                /* allocations of whole 2 MiB multiples */
    bool out_of_memory;
};

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    (void)rp;
    struct trace_stream *t = ctx;
    struct vt_sim_input *in = t->in;
    /* a context is the driver's, not the allocator's */
    if (l->category != VT_CAT_DEVICE || e->size == 0 || e->kind == VT_KIND_CONTEXT)
        return;
    if (in->device < 0)
        in->device = l->device; /* the first device that allocates */
    if (l->device != in->device)
        return;
    struct vt_sim_event ev = {.source_index = t->source_index};
    if (begins) {
        ev.kind = VT_SIM_ALLOC;
        ev.id = in->nev;
        ev.size = e->size;
        ev.stack = l->sites.sites[e->site].stack;
        t->whole += e->size % VT_PT_SMALL_BUFFER == 0;
        if (!vt_pair_map_put(&t->alloc_of, e->kind, e->addr, ev.id))
            t->out_of_memory = true;
    } else {
        uint64_t id;
        if (!vt_pair_map_remove(&t->alloc_of, e->kind, e->addr, &id))
            return; /* began before the device was chosen */
        ev.kind = VT_SIM_FREE;
        ev.id = id;
    }
    if (!push(in, &t->cap, &ev))
        t->out_of_memory = true;
}

static int from_trace(struct vt_sim_input *in, int64_t device, char *err, size_t errlen)
{
    struct vt_reader *r;
    struct vt_read_error re;
    if (vt_reader_open(in->path, &r, &re)) {
        snprintf(err, errlen, "%s", re.message);
        return 2;
    }
    in->device = device;
    struct trace_stream t = {.in = in};
    vt_pair_map_init(&t.alloc_of);
    struct vt_replay rp;
    vt_replay_init(&rp, r);
    rp.on_live = on_live;
    rp.on_live_ctx = &t;
    struct vt_record rec;
    int rc = 0;
    for (; !t.out_of_memory && (rc = vt_reader_next(r, &rec)) > 0; t.source_index++)
        vt_replay_feed(&rp, &rec);
    bool out_of_memory = t.out_of_memory || rp.out_of_memory;
    vt_replay_free(&rp);
    vt_pair_map_free(&t.alloc_of);
    if (out_of_memory) {
        vt_reader_close(r);
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s", vt_reader_error(r)->message);
        vt_reader_close(r);
        return 2;
    }
    vt_reader_close(r);
    /* PyTorch's caching allocator only shows whole segments (multiples of
     * 2 MiB) to the driver: such a trace is not tensor-level. */
    in->segment_level = in->nalloc > 0 && t.whole == in->nalloc;
    if (in->nalloc == 0) {
        snprintf(err, errlen, "%s: byte 0: no device allocations to replay", in->path);
        return 2;
    }
    return 0;
}

int vt_sim_input_load(struct vt_sim_input *in, const char *path, int64_t device, char *err,
                      size_t errlen)
{
    memset(in, 0, sizeof *in);
    in->path = path;
    return vt_snap_is_pickle(path) ? from_snapshot(in, device, err, errlen)
                                   : from_trace(in, device, err, errlen);
}

void vt_sim_input_free(struct vt_sim_input *in)
{
    free(in->ev);
    free(in->seed_segments);
    free(in->seed_blocks);
    free(in->truth.segment_sizes);
    free(in->truth.segment_addrs);
    if (in->snap) {
        vt_snap_analysis_free(in->snap);
        free(in->snap);
    }
    memset(in, 0, sizeof *in);
}
