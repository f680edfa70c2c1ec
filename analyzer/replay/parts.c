/* The censuses of parts, tied to the trace's allocations. See parts.h. */
#include "parts.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "replay.h"

struct vt_parts *vt_parts_new(bool from_start)
{
    struct vt_parts *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    vt_pair_map_init(&p->begins);
    vt_pair_map_init(&p->watched);
    p->begins_from_start = from_start;
    return p;
}

void vt_parts_free(struct vt_parts *p)
{
    if (!p)
        return;
    vt_pair_map_free(&p->begins);
    vt_pair_map_free(&p->watched);
    free(p->live);
    free(p->censuses);
    free(p->tensors);
    free(p);
}

void vt_parts_live(struct vt_parts *p, const struct vt_live *e, bool begins, uint64_t time_ns)
{
    if (begins) {
        if (!vt_pair_map_put(&p->begins, e->kind, e->addr, time_ns))
            p->out_of_memory = true;
        return;
    }
    vt_pair_map_remove(&p->begins, e->kind, e->addr, NULL);
    if (!p->watched.count)
        return;
    uint64_t *head = vt_pair_map_get(&p->watched, e->kind, e->addr);
    if (!head)
        return;
    for (uint64_t i = *head; i; i = p->tensors[i - 1].next_open)
        p->tensors[i - 1].end_ns = time_ns;
    vt_pair_map_remove_at(&p->watched, head);
}

/* The census's view of the live set: device allocations by address. */
struct vt_parts_held {
    uint64_t addr, size;
    uint8_t kind, ledger;
};

static int by_addr(const void *a, const void *b)
{
    const struct vt_parts_held *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The live device allocations of the replay, sorted by address (NULL and
 * *n 0 when there are none or memory ran out). Once per census. */
static struct vt_parts_held *live_device(const struct vt_replay *rp, size_t *n)
{
    *n = 0;
    struct vt_parts_held *out = malloc((rp->live.live.count + 1) * sizeof *out);
    if (!out)
        return NULL;
    for (size_t i = 0; i < rp->live.live.cap; i++) {
        const struct vt_live *e = &rp->live.live.slots[i];
        if (!e->refs || e->site == VT_SITE_NONE)
            continue;
        if (rp->ledgers[e->ledger].category != VT_CAT_DEVICE)
            continue;
        out[(*n)++] = (struct vt_parts_held){e->addr, e->size, e->kind, e->ledger};
    }
    qsort(out, *n, sizeof *out, by_addr);
    return out;
}

static const struct vt_parts_held *holder(const struct vt_parts_held *h, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n; /* the last allocation starting at or below addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || addr - h[lo - 1].addr >= h[lo - 1].size)
        return NULL;
    return &h[lo - 1];
}

static void census_open(struct vt_parts *p, const struct vt_replay *rp, const struct vt_record *rec)
{
    free(p->live);
    p->live = NULL;
    p->nlive = 0;
    p->open = false;
    if (p->ncensuses == VT_PARTS_CENSUS_MAX) {
        p->censuses_dropped++;
        return;
    }
    if (!vt_grow_array((void **)&p->censuses, &p->censuses_cap, p->ncensuses + 1,
                       sizeof *p->censuses)) {
        p->out_of_memory = true;
        return;
    }
    p->censuses[p->ncensuses++] = (struct vt_part_census){
        .number = rec->u.part.census,
        .time_ns = rec->time_ns,
        .why = rec->u.part.name,
        .optimizer = rec->u.part.dtype,
        .steps = rec->u.part.elements,
        .saw = (uint32_t)rec->u.part.bytes,
        .first = p->ntensors,
    };
    p->live = live_device(rp, &p->nlive);
    p->open = true;
}

static void census_tensor(struct vt_parts *p, const struct vt_replay *rp,
                          const struct vt_record *rec)
{
    (void)rp;
    if (!p->open ||
        p->censuses[p->ncensuses - 1].number != rec->u.part.census)
        return; /* a tensor of a census not opened (dropped, or cut) */
    if (p->ntensors == VT_PARTS_TENSORS_MAX) {
        p->tensors_dropped++;
        return;
    }
    if (!vt_grow_array((void **)&p->tensors, &p->tensors_cap, p->ntensors + 1,
                       sizeof *p->tensors)) {
        p->out_of_memory = true;
        return;
    }
    struct vt_part_census *c = &p->censuses[p->ncensuses - 1];
    struct vt_part_tensor t = {
        .census = (uint32_t)(p->ncensuses - 1),
        .part = rec->u.part.part,
        .addr = rec->u.part.addr,
        .bytes = rec->u.part.bytes,
        .elements = rec->u.part.elements,
        .dtype = rec->u.part.dtype,
        .name = rec->u.part.name,
        .end_ns = UINT64_MAX,
    };
    const struct vt_parts_held *h = holder(p->live, p->nlive, t.addr);
    if (h) {
        t.held = true;
        t.ledger = h->ledger;
        t.seg_addr = h->addr;
        t.seg_size = h->size;
        /* a tensor reaching past its allocation: only what it holds counts */
        if (t.bytes > h->addr + h->size - t.addr)
            t.bytes = h->addr + h->size - t.addr;
        const uint64_t *b = vt_pair_map_get(&p->begins, h->kind, h->addr);
        t.begin_ns = b ? *b : 0;
        uint64_t *head = vt_pair_map_get(&p->watched, h->kind, h->addr);
        t.next_open = head ? *head : 0;
        if (head)
            *head = p->ntensors + 1;
        else if (!vt_pair_map_put_new(&p->watched, h->kind, h->addr, p->ntensors + 1))
            p->out_of_memory = true;
    } else {
        c->unheld++;
    }
    p->tensors[p->ntensors++] = t;
    c->count++;
}

void vt_parts_record(struct vt_parts *p, const struct vt_replay *rp, const struct vt_record *rec)
{
    if (rec->u.part.part == VT_PART_CENSUS)
        census_open(p, rp, rec);
    else
        census_tensor(p, rp, rec);
}

/* The census nearest t (the earlier one of two as near). */
static size_t nearest(const struct vt_parts *p, uint64_t t)
{
    size_t best = 0;
    uint64_t best_d = UINT64_MAX;
    for (size_t i = 0; i < p->ncensuses; i++) {
        uint64_t ct = p->censuses[i].time_ns;
        uint64_t d = ct > t ? ct - t : t - ct;
        if (d < best_d) {
            best_d = d;
            best = i;
        }
    }
    return best;
}

void vt_parts_at(const struct vt_parts *p, size_t ledger, uint64_t time_ns,
                 struct vt_parts_at *out)
{
    memset(out, 0, sizeof *out);
    if (!p || !p->ncensuses)
        return;
    vt_parts_at_census(p, ledger, nearest(p, time_ns), time_ns, out);
}

void vt_parts_at_census(const struct vt_parts *p, size_t ledger, size_t census,
                        uint64_t time_ns, struct vt_parts_at *out)
{
    memset(out, 0, sizeof *out);
    if (!p || census >= p->ncensuses)
        return;
    out->known = true;
    out->census = census;
    const struct vt_part_census *c = &p->censuses[census];
    for (size_t i = c->first; i < c->first + c->count; i++) {
        const struct vt_part_tensor *t = &p->tensors[i];
        if (!t->held || t->ledger != ledger)
            continue;
        /* the same allocation live at the instant: begun at or before it,
         * not ended at or before it */
        if (t->begin_ns > time_ns || t->end_ns <= time_ns)
            continue;
        out->bytes[t->part] += t->bytes;
        out->tensors[t->part]++;
    }
}
