/* Peaks, sites, phases and failures of a snapshot: see snapshot_analysis.h. */
#include "snapshot_analysis.h"

#include <stdlib.h>
#include <string.h>

#include "pair_map.h"

#define MAX_DEVICES 1024

const char *vt_snap_verdict_name(enum vt_snap_verdict v)
{
    switch (v) {
    case VT_SNAP_FRAGMENTED:
        return "fragmented";
    case VT_SNAP_EXHAUSTED:
        return "exhausted";
    case VT_SNAP_LIMITED:
        return "limited";
    }
    return "unknown";
}

static uint64_t fnv(uint64_t h, const char *s)
{
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return (h ^ 0xff) * 0x100000001b3ull;
}

/* Blocks with the same Python stack (file, line, function of every *.py
 * frame) form one site; without Python frames, the autograd node or
 * operator that allocated names it. */
static uint64_t site_key(const struct vt_snap_live *lv, bool *backward)
{
    *backward = vt_snap_frames_backward(lv->frames);
    if (lv->before_window && !lv->frames)
        return 1;
    uint64_t h = 0xcbf29ce484222325ull;
    bool python = false;
    size_t n = vt_snap_frame_count(lv->frames);
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (!vt_snap_frame(lv->frames, i, &file, &name, &line) || !vt_snap_frame_is_python(file))
            continue;
        python = true;
        h = fnv(fnv(h, file), name) ^ (uint64_t)line;
        h *= 0x100000001b3ull;
    }
    if (!python)
        for (size_t i = 0; i < n; i++) {
            const char *file, *name;
            int64_t line;
            if (vt_snap_frame(lv->frames, i, &file, &name, &line) &&
                (strstr(name, "Backward") || !strncmp(name, "at::_ops::", 10))) {
                h = fnv(h, name);
                break;
            }
        }
    h ^= *backward ? 0x9e3779b97f4a7c15ull : 0;
    return h < 2 ? h + 2 : h;
}

static int cmp_site(const void *a, const void *b)
{
    const struct vt_snap_site *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

bool vt_snap_group_sites(const struct vt_snap_state *st, struct vt_snap_site **out, size_t *nout)
{
    struct vt_pair_map idx;
    vt_pair_map_init(&idx);
    struct vt_snap_site *sites = calloc(st->nlive ? st->nlive : 1, sizeof *sites);
    size_t n = 0;
    *out = NULL;
    *nout = 0;
    if (!sites)
        return false;
    for (size_t k = 0; k < st->nlive; k++) {
        const struct vt_snap_live *lv = &st->live[k];
        bool backward;
        uint64_t key = site_key(lv, &backward);
        uint64_t *at = vt_pair_map_get(&idx, key, 0);
        struct vt_snap_site *s;
        if (at) {
            s = &sites[*at];
        } else {
            if (!vt_pair_map_put(&idx, key, 0, n)) {
                vt_pair_map_free(&idx);
                free(sites);
                return false;
            }
            s = &sites[n++];
            s->key = key;
            s->frames = lv->frames;
            s->backward = backward;
            s->before_window = key == 1;
        }
        s->bytes += lv->requested;
        s->count++;
    }
    vt_pair_map_free(&idx);
    if (n)
        qsort(sites, n, sizeof *sites, cmp_site);
    *out = sites;
    *nout = n;
    return true;
}

static bool group_sites(struct vt_snap_device *d)
{
    return vt_snap_group_sites(&d->at_peak, &d->sites, &d->nsites);
}

static struct vt_snap_phase *phase_get(struct vt_snap_device *d, const char *name, bool annotation)
{
    for (size_t k = 0; k < d->nphases; k++)
        if (d->phases[k].annotation == annotation && !strcmp(d->phases[k].name, name))
            return &d->phases[k];
    void *p = realloc(d->phases, (d->nphases + 1) * sizeof *d->phases);
    if (!p)
        return NULL;
    d->phases = p;
    struct vt_snap_phase *ph = &d->phases[d->nphases++];
    memset(ph, 0, sizeof *ph);
    ph->name = name;
    ph->annotation = annotation;
    return ph;
}

static void phase_note(struct vt_snap_phase *ph, uint64_t bytes, size_t index)
{
    if (ph && (bytes > ph->peak_bytes || (!ph->peak_index && !ph->peak_bytes))) {
        ph->peak_bytes = bytes;
        ph->peak_index = index;
    }
}

/* Annotations of this device (or of any device), in time order. */
static int cmp_ann(const void *a, const void *b)
{
    const struct vt_snap_annotation *x = *(const struct vt_snap_annotation *const *)a;
    const struct vt_snap_annotation *y = *(const struct vt_snap_annotation *const *)b;
    return x->time_us < y->time_us ? -1 : x->time_us > y->time_us;
}

/* Phases are held by index: phase_get() may move d->phases. */
struct open_phase {
    size_t ph;
    size_t open;
};
#define NO_PHASE SIZE_MAX

static size_t phase_index(struct vt_snap_device *d, const char *name, bool annotation)
{
    struct vt_snap_phase *ph = phase_get(d, name, annotation);
    return ph ? (size_t)(ph - d->phases) : NO_PHASE;
}

static bool walk(struct vt_snap_analysis *a, struct vt_snap_device *d)
{
    const struct vt_snap_timeline *t = &d->tl;
    bool timed = t->nev > 0;
    for (size_t i = 0; i < t->nev; i++)
        timed &= t->ev[i].has_time;
    const struct vt_snap_annotation **ann = NULL;
    size_t nann = 0, next_ann = 0;
    struct open_phase *open = NULL;
    if (a->snap.nannotations) {
        ann = calloc(a->snap.nannotations, sizeof *ann);
        open = calloc(a->snap.nannotations, sizeof *open);
        if (!ann || !open) {
            free(ann);
            free(open);
            return false;
        }
        for (size_t k = 0; k < a->snap.nannotations; k++)
            if (a->snap.annotations[k].device < 0 || a->snap.annotations[k].device == d->device)
                ann[nann++] = &a->snap.annotations[k];
        qsort(ann, nann, sizeof *ann, cmp_ann);
        if (nann && !timed) {
            d->annotations_unplaced = true;
            nann = 0;
        }
    }
    size_t nopen = 0;
    uint64_t allocated = t->initial.allocated, reserved = t->initial.reserved;
    d->peak_allocated = allocated;
    d->peak_reserved = reserved;
    bool ok = true;
    size_t backward = NO_PHASE, main_thread = NO_PHASE;
    for (size_t i = 0; i <= t->nev && ok; i++) {
        /* Annotations up to this event's time open or close phases; an
         * opening phase starts with what is allocated then. */
        while (next_ann < nann && (i == t->nev || ann[next_ann]->time_us <= t->ev[i].time_us)) {
            const struct vt_snap_annotation *an = ann[next_ann++];
            size_t ph = phase_index(d, an->name, true);
            if (ph == NO_PHASE) {
                ok = false;
                break;
            }
            size_t k = 0;
            while (k < nopen && open[k].ph != ph)
                k++;
            if (k == nopen)
                open[nopen++] = (struct open_phase){ph, 0};
            if (an->start) {
                open[k].open++;
                d->phases[ph].ranges++;
                phase_note(&d->phases[ph], allocated, i);
            } else if (open[k].open) {
                open[k].open--;
            }
        }
        if (i == t->nev)
            break;
        const struct vt_snap_event *e = &t->ev[i];
        d->counts[e->action]++;
        vt_snap_totals_step(t, e, &allocated, &reserved);
        if (reserved > d->peak_reserved) {
            d->peak_reserved = reserved;
            d->peak_reserved_index = i + 1;
        }
        if (e->action == VT_SNAP_ALLOC) {
            if (allocated > d->peak_allocated) {
                d->peak_allocated = allocated;
                d->peak_allocated_index = i + 1;
            }
            bool bw = vt_snap_frames_backward(e->frames);
            size_t *slot = bw ? &backward : &main_thread;
            if (*slot == NO_PHASE)
                *slot = phase_index(d, bw ? "backward" : "main thread", false);
            if (*slot == NO_PHASE) {
                ok = false;
                break;
            }
            d->phases[*slot].allocs++;
            phase_note(&d->phases[*slot], allocated, i + 1);
            for (size_t k = 0; k < nopen; k++)
                if (open[k].open) {
                    d->phases[open[k].ph].allocs++;
                    phase_note(&d->phases[open[k].ph], allocated, i + 1);
                }
        }
    }
    free(ann);
    free(open);
    return ok;
}

static bool diagnose_oom(struct vt_snap_analysis *a, struct vt_snap_device *d, size_t index)
{
    void *p = realloc(d->ooms, (d->nooms + 1) * sizeof *d->ooms);
    if (!p)
        return false;
    d->ooms = p;
    struct vt_snap_oom *o = &d->ooms[d->nooms++];
    memset(o, 0, sizeof *o);
    o->index = index;
    o->ev = &d->tl.ev[index];
    uint64_t rounded = vt_pt_round_size(&a->cfg, o->ev->size);
    if (!vt_snap_state_at(&d->tl, index, &o->state) || !vt_segmap_build(&o->map, &o->state, &a->cfg))
        return false;
    vt_snap_oom_judge(o, rounded, o->ev->stream, o->ev->device_free);
    return true;
}

void vt_snap_oom_judge(struct vt_snap_oom *o, uint64_t rounded, int64_t stream,
                       uint64_t device_free)
{
    o->segment_bytes = vt_pt_segment_size(rounded);
    o->largest_free_same_pool = 0;
    for (size_t k = 0; k < o->map.nsegments; k++) {
        const struct vt_segmap_segment *s = &o->map.segments[k];
        if (s->seg->is_small == vt_pt_is_small(rounded) && s->seg->stream == stream &&
            s->largest_free > o->largest_free_same_pool)
            o->largest_free_same_pool = s->largest_free;
    }
    /* The oom entry is written after the allocator released every unsplit
     * cached segment, so what is free in segments now is trapped in
     * partly used ones. */
    if (device_free >= o->segment_bytes)
        o->verdict = VT_SNAP_LIMITED; /* the device had room: a memory fraction or limit refused */
    else if (device_free + o->map.free_bytes >= rounded)
        o->verdict = VT_SNAP_FRAGMENTED;
    else
        o->verdict = VT_SNAP_EXHAUSTED;
}

static bool analyse_device(struct vt_snap_analysis *a, struct vt_snap_device *d)
{
    if (!vt_snap_timeline_init(&d->tl, &a->snap, d->device) || !walk(a, d))
        return false;
    if (!vt_snap_state_at(&d->tl, d->peak_allocated_index, &d->at_peak) ||
        !vt_segmap_build(&d->map_at_peak, &d->at_peak, &a->cfg) || !group_sites(d))
        return false;
    if (!vt_snap_state_at(&d->tl, d->tl.nev, &d->final_state) ||
        !vt_segmap_build(&d->map_final, &d->final_state, &a->cfg))
        return false;
    for (size_t i = 0; i < d->tl.nev; i++)
        if (d->tl.ev[i].action == VT_SNAP_OOM && !diagnose_oom(a, d, i))
            return false;
    return true;
}

int vt_snap_analysis_run(struct vt_snap_analysis *a, const char *path, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (vt_snap_load(path, &a->snap, err, errlen))
        return 2;
    vt_alloc_config_from_snapshot(&a->cfg, &a->snap.settings);
    int64_t *ids = calloc(MAX_DEVICES, sizeof *ids);
    if (!ids) {
        snprintf(err, errlen, "%s: byte 0: out of memory", path);
        return 2;
    }
    size_t n = vt_snap_devices(&a->snap, ids, MAX_DEVICES);
    a->devices = calloc(n ? n : 1, sizeof *a->devices);
    if (!a->devices) {
        free(ids);
        snprintf(err, errlen, "%s: byte 0: out of memory", path);
        return 2;
    }
    for (size_t k = 0; k < n; k++) {
        struct vt_snap_device *d = &a->devices[a->ndevices++];
        d->device = ids[k];
        if (!analyse_device(a, d)) {
            free(ids);
            snprintf(err, errlen, "%s: byte 0: out of memory", path);
            return 2;
        }
    }
    free(ids);
    return 0;
}

void vt_snap_analysis_free(struct vt_snap_analysis *a)
{
    for (size_t k = 0; k < a->ndevices; k++) {
        struct vt_snap_device *d = &a->devices[k];
        vt_snap_timeline_free(&d->tl);
        vt_snap_state_free(&d->at_peak);
        vt_segmap_free(&d->map_at_peak);
        vt_snap_state_free(&d->final_state);
        vt_segmap_free(&d->map_final);
        free(d->sites);
        free(d->phases);
        for (size_t o = 0; o < d->nooms; o++) {
            vt_snap_state_free(&d->ooms[o].state);
            vt_segmap_free(&d->ooms[o].map);
        }
        free(d->ooms);
    }
    free(a->devices);
    vt_snap_free(&a->snap);
    memset(a, 0, sizeof *a);
}

bool vt_snap_time_at(const struct vt_snap_device *d, size_t index, int64_t *time_us)
{
    /* index counts the events applied: the last one is ev[index - 1]. */
    size_t i = index < d->tl.nev ? index : d->tl.nev;
    if (i == 0 && d->tl.nev)
        i = 1;
    while (i-- > 0)
        if (d->tl.ev[i].has_time) {
            *time_us = d->tl.ev[i].time_us;
            return true;
        }
    return false;
}
