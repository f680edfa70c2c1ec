/* Building the replay stream of `vramtrace simulate`: see vt_sim_input.h. */
#include "sim_input.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "pair_map.h"
#include "trace_reader.h"

static bool push(struct vt_sim_input *in, size_t *cap, const struct vt_sim_event *e)
{
    if (!vt_grow_array((void **)&in->ev, cap, in->nev + 1, sizeof *in->ev))
        return false;
    in->ev[in->nev++] = *e;
    in->nalloc += e->kind == VT_SIM_ALLOC;
    in->nfree += e->kind == VT_SIM_FREE;
    in->nrelease += e->kind == VT_SIM_RELEASE_CACHE;
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
 * A trace's device allocations, as the model's stream. Which allocation a
 * record starts or ends follows the replay's live set (analyzer/replay/
 * replay.h), so that the bytes the stream holds at each step are those of
 * the report's device ledger:
 *  - a successful ALLOC of a device-memory kind (vt_kind_category) makes
 *    (kind, address or handle) live; of size 0 on a live key it is one more
 *    reference (cuMemRetainAllocationHandle); with a size on a live key the
 *    old allocation ends first (a free the tracer missed);
 *  - a successful FREE ends its (kind, address), else the live entry of
 *    another device-memory kind at that address (graph memory freed by
 *    cuMemFreeAsync); of an entry with several references it drops one.
 *    The free applies to the device of the allocation it ends: cuMemFree
 *    names none (device -1 in the trace);
 *  - a mapping (cuMemMap, aux = the handle) is one more reference to a live
 *    VMM handle, dropped by the cuMemUnmap of its address (or a new mapping
 *    over it), so a handle released while mapped ends at its unmap;
 *  - failed calls change nothing.
 * Allocations of other devices, and of size 0, are live here but not in
 * the stream (NOT_MODELLED).
 */
#define NOT_MODELLED UINT64_MAX

struct trace_live {
    struct vt_sim_input *in;
    size_t cap;                  /* of in->ev */
    struct vt_pair_map live;     /* (kind, addr) -> index of its ALLOC in in->ev, or NOT_MODELLED */
    struct vt_pair_map refs;     /* (kind, addr) -> references beyond the first */
    struct vt_pair_map mappings; /* (mapped address, 0) -> VMM handle */
    size_t source_index;         /* the record being read */
    bool out_of_memory;
};

static void put(struct trace_live *t, struct vt_pair_map *m, uint64_t a, uint64_t b, uint64_t v)
{
    if (!vt_pair_map_put(m, a, b, v))
        t->out_of_memory = true;
}

static void emit(struct trace_live *t, const struct vt_sim_event *e)
{
    if (!push(t->in, &t->cap, e))
        t->out_of_memory = true;
}

/* (kind, addr) is live: it ends now. */
static void end_live(struct trace_live *t, uint8_t kind, uint64_t addr)
{
    uint64_t alloc;
    vt_pair_map_remove(&t->live, kind, addr, &alloc);
    vt_pair_map_remove(&t->refs, kind, addr, NULL);
    if (alloc != NOT_MODELLED)
        emit(t, &(struct vt_sim_event){.kind = VT_SIM_FREE, .id = alloc,
                                       .source_index = t->source_index});
}

/* One reference to (kind, addr) goes; false if it is not live. */
static bool drop_ref(struct trace_live *t, uint8_t kind, uint64_t addr)
{
    if (!vt_pair_map_get(&t->live, kind, addr))
        return false;
    uint64_t *more = vt_pair_map_get(&t->refs, kind, addr);
    if (more && --*more)
        return true;
    if (more)
        vt_pair_map_remove_at(&t->refs, more);
    else
        end_live(t, kind, addr);
    return true;
}

static void add_ref(struct trace_live *t, uint8_t kind, uint64_t addr)
{
    uint64_t *more = vt_pair_map_get(&t->refs, kind, addr);
    if (more)
        ++*more;
    else
        put(t, &t->refs, kind, addr, 1);
}

static void unmap_at(struct trace_live *t, uint64_t addr)
{
    uint64_t handle;
    if (vt_pair_map_remove(&t->mappings, addr, 0, &handle))
        drop_ref(t, VT_KIND_VMM_PHYSICAL, handle);
}

static void map_record(struct trace_live *t, const struct vt_record *rec)
{
    uint64_t handle = rec->u.mem.aux;
    unmap_at(t, rec->u.mem.addr);
    if (rec->u.mem.op == VT_OP_ALLOC && vt_pair_map_get(&t->live, VT_KIND_VMM_PHYSICAL, handle)) {
        put(t, &t->mappings, rec->u.mem.addr, 0, handle);
        add_ref(t, VT_KIND_VMM_PHYSICAL, handle);
    }
}

static void free_record(struct trace_live *t, uint8_t kind, uint64_t addr)
{
    if (drop_ref(t, kind, addr))
        return;
    for (uint8_t k = 1; k < VT_KIND_COUNT_; k++)
        if (k != kind && vt_kind_category(k) == vt_kind_category(kind) &&
            vt_pair_map_get(&t->live, k, addr)) {
            end_live(t, k, addr); /* the whole entry, as the replay does */
            return;
        }
}

static void alloc_record(struct trace_live *t, const struct vt_record *rec, size_t *whole)
{
    struct vt_sim_input *in = t->in;
    uint8_t kind = rec->u.mem.kind;
    uint64_t addr = rec->u.mem.addr, size = rec->u.mem.size;
    if (vt_pair_map_get(&t->live, kind, addr)) {
        if (size == 0) {
            add_ref(t, kind, addr);
            return;
        }
        end_live(t, kind, addr);
    }
    if (in->device < 0 && size > 0)
        in->device = rec->u.mem.device;
    uint64_t alloc = NOT_MODELLED;
    if (size > 0 && rec->u.mem.device == in->device) {
        alloc = in->nev;
        *whole += size % VT_PT_SMALL_BUFFER == 0;
        emit(t, &(struct vt_sim_event){.kind = VT_SIM_ALLOC, .id = alloc, .size = size,
                                       .source_index = t->source_index,
                                       .stack = rec->u.mem.stack});
    }
    put(t, &t->live, kind, addr, alloc);
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
    struct trace_live t = {.in = in};
    vt_pair_map_init(&t.live);
    vt_pair_map_init(&t.refs);
    vt_pair_map_init(&t.mappings);
    struct vt_record rec;
    int rc = 0;
    size_t whole = 0;
    for (; !t.out_of_memory && (rc = vt_reader_next(r, &rec)) > 0; t.source_index++) {
        if (rec.type != VT_REC_MEM || rec.u.mem.result != 0)
            continue;
        uint8_t kind = rec.u.mem.kind;
        if (kind == VT_KIND_VA_MAP)
            map_record(&t, &rec);
        else if (vt_kind_category(kind) != VT_CAT_DEVICE)
            continue;
        else if (rec.u.mem.op == VT_OP_FREE)
            free_record(&t, kind, rec.u.mem.addr);
        else if (rec.u.mem.op == VT_OP_ALLOC)
            alloc_record(&t, &rec, &whole);
    }
    vt_pair_map_free(&t.live);
    vt_pair_map_free(&t.refs);
    vt_pair_map_free(&t.mappings);
    if (t.out_of_memory) {
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
    in->segment_level = in->nalloc > 0 && whole == in->nalloc;
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
