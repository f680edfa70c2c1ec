/* A GPU's notes to its totals, merged or by slices; see notes_merge.h. */
#include "notes_merge.h"

#include <stdlib.h>

/* The notes queued are all in slices: the last one's end. */
static void slices_close(struct lane *ln)
{
    struct slice_sum *s = &ln->sl[ln->cur];
    s->end = ln->n;
    s->wend = ln->wn;
    s->last_ns = ln->tail_ns;
}

/* ---- the notes, merged ---- */


static inline uint64_t key_of(const struct lane *ln, uint64_t base)
{
    return (ln->head_ns - base) << LANE_BITS | ln->index;
}

static void sift_down(uint64_t *h, size_t n, size_t i)
{
    uint64_t x = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = x;
}

/* The note at the lane's head to the GPU totals, and the head past it. */
static inline void hand_over(const struct vt_gpu_feed *feed, struct lane *ln)
{
    struct at a = queue_head(ln);
    if (!note_is_wide(ln, a.i)) {
        feed->change(feed->ctx, ln->in, ln->ledger, (uint64_t)(int64_t)ln->notes[a.i].delta, a.t);
    } else {
        const struct wide_note *w = &ln->wide[a.w];
        if (w->oom == NOT_OOM)
            feed->change(feed->ctx, ln->in, w->ledger, w->delta, a.t);
        else
            feed->oom(feed->ctx, ln->in, w->ledger, w->oom);
    }
    queue_pop(ln);
}

static inline bool mergeable(const struct lane *ln, struct bound b)
{
    return ln->head < ln->n && key_at_most(ln->head_ns, ln->index, b);
}

/* Hands the notes up to b of the lanes of set (none before base, none
 * past base + MAX_SPAN_NS) to the GPU totals in the merge's order; returns
 * how many. h: room for a key per lane. */
size_t vt_notes_merge(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                          uint64_t base, struct bound b, const struct vt_gpu_feed *feed)
{
    size_t n = 0, handed = 0;
    for (size_t k = 0; k < nset; k++)
        if (mergeable(set[k], b))
            h[n++] = key_of(set[k], base);
    for (size_t i = n / 2; i-- > 0;)
        sift_down(h, n, i);
    while (n > 0) {
        struct lane *ln = &lanes[h[0] & (MAX_LANES - 1)];
        /* the lane's notes while they come before every other lane's */
        uint64_t limit = n > 1 ? h[1] : UINT64_MAX;
        if (n > 2 && h[2] < limit)
            limit = h[2];
        /* the lane's next turn is after the others': its next line on the way */
        __builtin_prefetch(&ln->notes[ln->head + 64 / sizeof *ln->notes + 1]);
        do {
            hand_over(feed, ln);
            handed++;
        } while (mergeable(ln, b) && key_of(ln, base) < limit);
        if (mergeable(ln, b))
            h[0] = key_of(ln, base);
        else
            h[0] = h[--n];
        if (n > 0)
            sift_down(h, n, 0);
    }
    return handed;
}

/* ---- slices of a window where a GPU cannot reach a new peak ----
 *
 * The merged order of a GPU's notes matters only at a new peak (its time,
 * each process's bytes then) and at a failure (the other processes' bytes
 * at its instant). Within a slice of time, the GPU's total at any instant
 * is its total at the slice's start plus each lane's running sum of its
 * notes up to that instant, so it lies between the start plus every
 * lane's lowest running sum and the start plus every lane's highest (0,
 * the empty sum, included). Where that range is within [0, peak] and no
 * note is a failure, every order gives the same totals and no new peak:
 * each lane's notes are handed as one change, lane by lane. Other slices
 * are merged in order. The shorter a slice, the nearer the bound is to
 * the real swing. */

/* A lane's sums of a slice: sl[slice], or (slice < 0) scanned. */
static inline const struct slice_sum *sums_of(const struct lane *ln, int slice)
{
    return slice < 0 ? &ln->scanned : &ln->sl[slice];
}

/* Every lane's head past its notes of a slice (their changes handed);
 * returns how many. */
static size_t skip_slice(struct lane *const *set, size_t nset, int slice)
{
    size_t handed = 0;
    for (size_t k = 0; k < nset; k++) {
        struct lane *ln = set[k];
        const struct slice_sum *s = sums_of(ln, slice);
        if (s->end <= ln->head)
            continue;
        handed += s->end - ln->head;
        queue_skip_to(ln, s->end, s->wend, s->last_ns);
    }
    return handed;
}

/* The lane's notes from its head up to b, summed into ln->scanned. */
static void lane_swing(struct lane *ln, struct bound b)
{
    struct slice_sum s = {0, 0, 0, 0, 0, 0, false};
    struct at a = queue_head(ln);
    for (; a.i < ln->n && key_at_most(a.t, ln->index, b) && !s.mixed; queue_step(ln, &a)) {
        uint32_t ledger = queued_ledger(ln, a);
        if (ln->on_gpu[ledger >> 6 & 1] >> (ledger & 63) & 1)
            slice_sum_add(&s, queued_delta(ln, a), queued_oom(ln, a));
        else if (queued_oom(ln, a) != NOT_OOM)
            s.mixed = true; /* a ledger on no GPU: its changes touch none */
        s.last_ns = a.t;
    }
    s.end = a.i;
    s.wend = a.w;
    ln->scanned = s;
}

/* Hands a slice's notes as one change a lane if the GPU of set cannot
 * reach a new peak in it (above); returns how many notes, or SIZE_MAX
 * where the slice needs the merged order. slice: its sums in each lane's
 * sl[slice], or < 0: in its scanned. */
static size_t hand_unordered(struct lane *const *set, size_t nset, int slice,
                             const struct vt_gpu_feed *feed)
{
    int64_t hi = 0, lo = 0;
    const struct lane *ref = NULL;
    for (size_t k = 0; k < nset; k++) {
        const struct slice_sum *s = sums_of(set[k], slice);
        if (s->end <= set[k]->head)
            continue; /* none of its notes */
        if (s->mixed || __builtin_add_overflow(hi, s->hi, &hi) ||
            __builtin_add_overflow(lo, s->lo, &lo))
            return SIZE_MAX;
        if (s->hi || s->lo)
            ref = set[k];
    }
    if (ref) {
        uint64_t now, peak;
        int64_t top, bottom;
        if (!feed->totals(feed->ctx, ref->in, ref->on_gpu_ledger, &now, &peak) ||
            now > INT64_MAX || __builtin_add_overflow((int64_t)now, hi, &top) ||
            __builtin_add_overflow((int64_t)now, lo, &bottom) || bottom < 0 ||
            (uint64_t)top > peak)
            return SIZE_MAX;
    }
    for (size_t k = 0; k < nset; k++) {
        const struct slice_sum *s = sums_of(set[k], slice);
        if (s->end > set[k]->head && s->sum)
            feed->change(feed->ctx, set[k]->in, set[k]->on_gpu_ledger, (uint64_t)s->sum,
                         s->last_ns);
    }
    return skip_slice(set, nset, slice);
}

/* A lane's notes of a slice (its sums s) that only raise its GPU's total,
 * in time order: true, with whether any does (*rose) and the time of the
 * last that does (*rise); false where one lowers it, fails or goes back
 * in time (the heap's order is then not the rises'). */
static bool lane_rises(const struct lane *ln, const struct slice_sum *s, bool *rose,
                       uint64_t *rise)
{
    *rose = false;
    *rise = 0;
    if (s->mixed || s->lo != 0 || s->hi != s->sum)
        return false; /* a fall, or a failure: no need to look */
    uint64_t prev = 0;
    for (struct at a = queue_head(ln); a.i < s->end; prev = a.t, queue_step(ln, &a)) {
        uint32_t ledger = queued_ledger(ln, a);
        if (queued_oom(ln, a) != NOT_OOM || a.t < prev)
            return false;
        if (!(ln->on_gpu[ledger >> 6 & 1] >> (ledger & 63) & 1))
            continue; /* a ledger on no GPU: its changes touch none */
        int64_t delta = (int64_t)queued_delta(ln, a);
        if (delta < 0)
            return false;
        if (delta > 0) {
            *rose = true;
            *rise = a.t;
        }
    }
    return true;
}

static int by_key(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Hands a slice's notes as one change a lane where no note of it lowers
 * the GPU's total (the rule above does not hold: a new peak is reached).
 * Then the total only rises: its highest is the slice's last, every lane
 * at its sum, first reached at the latest of the lanes' last rises. The
 * lanes' changes go in the order of those rises (time, then lane: the
 * merge's order), so the last sets the peak at that time with every
 * lane's bytes as the merged order has them - a job's ranks growing their
 * caches (a training's first steps) would otherwise be merged note by
 * note, each a new peak. Returns how many notes, or SIZE_MAX where a note
 * lowers the total or fails. h: room for a key per lane; slice as in
 * hand_unordered. */
static size_t hand_rising(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                          uint64_t base, int slice, const struct vt_gpu_feed *feed)
{
    size_t n = 0;
    for (size_t k = 0; k < nset; k++) {
        const struct slice_sum *s = sums_of(set[k], slice);
        bool rose;
        uint64_t rise;
        if (s->end <= set[k]->head)
            continue; /* none of its notes */
        if (!lane_rises(set[k], s, &rose, &rise))
            return SIZE_MAX;
        if (!rose)
            continue;
        if (rise < base || rise - base >= MAX_SPAN_NS)
            return SIZE_MAX; /* times gone backwards: merged in order */
        h[n++] = (rise - base) << LANE_BITS | set[k]->index;
    }
    qsort(h, n, sizeof *h, by_key);
    for (size_t k = 0; k < n; k++) {
        struct lane *ln = &lanes[h[k] & (MAX_LANES - 1)];
        feed->change(feed->ctx, ln->in, ln->on_gpu_ledger, (uint64_t)sums_of(ln, slice)->sum,
                     base + (h[k] >> LANE_BITS));
    }
    return skip_slice(set, nset, slice);
}

/* A slice's notes handed without the merged order where either rule
 * allows; SIZE_MAX where neither does. */
static size_t hand_slice(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                         uint64_t base, int slice, const struct vt_gpu_feed *feed)
{
    size_t n = hand_unordered(set, nset, slice, feed);
    return n != SIZE_MAX ? n : hand_rising(lanes, set, nset, h, base, slice, feed);
}

/* The slice of a window's slices that ends at or after b: its end. */
static struct bound slice_end(const struct lane *ln, unsigned k, struct bound b)
{
    if (k + 1 >= SLICES || (uint64_t)(k + 1) * ln->width - 1 >= b.t - ln->from)
        return b;
    return (struct bound){ln->from + (uint64_t)(k + 1) * ln->width - 1, UINT32_MAX};
}

/* A span of time from start to b that needs the merged order as a whole,
 * cut in SPLIT parts of equal time and each tried again as a slice, down
 * to depth cuts: near a new peak the lanes' notes interleave, and of a
 * slice that reaches it only the parts that do are merged in order
 * (summing a part again is a sequential read of its notes; the ordered
 * merge, a heap and a call for each note). */
#define SPLIT 8
#define SPLIT_DEPTH 1
/* Fewer notes than this are merged in order at once: summing their parts
 * again would cost what it saves. */
#define SPLIT_MIN_NOTES 64

/* The notes of set's lanes a slice's sums hold (slice < 0: scanned). */
static size_t slice_notes(struct lane *const *set, size_t nset, int slice)
{
    size_t n = 0;
    for (size_t k = 0; k < nset; k++) {
        const struct slice_sum *s = sums_of(set[k], slice);
        n += s->end > set[k]->head ? s->end - set[k]->head : 0;
    }
    return n;
}

static size_t merge_parts(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                          uint64_t base, uint64_t start, struct bound b, size_t notes,
                          const struct vt_gpu_feed *feed, unsigned depth)
{
    if (!depth || notes < SPLIT_MIN_NOTES || b.t < start || b.t - start < 2 * SPLIT)
        return vt_notes_merge(lanes, set, nset, h, base, b, feed);
    uint64_t width = (b.t - start) / SPLIT + 1;
    size_t handed = 0;
    for (unsigned k = 0;; k++) {
        struct bound s = b;
        if (k + 1 < SPLIT && (uint64_t)(k + 1) * width - 1 < b.t - start)
            s = (struct bound){start + (uint64_t)(k + 1) * width - 1, UINT32_MAX};
        for (size_t i = 0; i < nset; i++)
            lane_swing(set[i], s);
        size_t n = hand_slice(lanes, set, nset, h, base, -1, feed);
        handed += n != SIZE_MAX ? n
                                : merge_parts(lanes, set, nset, h, base, start + k * width, s,
                                              slice_notes(set, nset, -1), feed, depth - 1);
        if (s.t == b.t && s.lane == b.lane)
            return handed;
    }
}

/* One GPU's notes up to b, slice by slice: in one change a lane where it
 * cannot reach a new peak, else merged in order. The slices' sums kept as
 * notes came serve where they hold exactly the notes each slice takes:
 * the window's end was not lowered, no note lies past it, every note is
 * on the GPU; else each slice's notes are summed here. */
size_t vt_notes_merge_gpu(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                        uint64_t base, struct bound b, const struct vt_gpu_feed *feed)
{
    if (!feed->totals)
        return vt_notes_merge(lanes, set, nset, h, base, b, feed);
    const struct lane *first = set[0];
    bool summed = b.t == first->until && b.lane == 0;
    for (size_t k = 0; k < nset && summed; k++)
        summed = !set[k]->spilled && set[k]->ledgers[0] == set[k]->on_gpu[0] &&
                 set[k]->ledgers[1] == set[k]->on_gpu[1];
    for (size_t k = 0; k < nset && summed; k++)
        slices_close(set[k]);
    size_t handed = 0;
    uint64_t start = first->from;
    for (unsigned k = 0;; k++) {
        struct bound s = slice_end(first, k, b);
        size_t n;
        if (summed) {
            n = hand_slice(lanes, set, nset, h, base, (int)k, feed);
        } else {
            for (size_t i = 0; i < nset; i++)
                lane_swing(set[i], s);
            n = hand_slice(lanes, set, nset, h, base, -1, feed);
        }
        handed += n != SIZE_MAX ? n
                                : merge_parts(lanes, set, nset, h, base, start, s,
                                              slice_notes(set, nset, summed ? (int)k : -1), feed,
                                              SPLIT_DEPTH);
        if (s.t == b.t && s.lane == b.lane)
            return handed;
        start = s.t + 1;
    }
}

/* Timestamps that went backwards left notes the windows cannot order:
 * they go lane by lane. */
size_t vt_notes_merge_rest(struct lane *lanes, size_t nlanes, const struct vt_gpu_feed *feed)
{
    size_t handed = 0;
    for (size_t k = 0; k < nlanes; k++)
        for (; lanes[k].head < lanes[k].n; handed++)
            hand_over(feed, &lanes[k]);
    return handed;
}
