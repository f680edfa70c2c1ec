/* The merged pass over one group of traces, in windows of time; see
 * group_merge.h. */
#include "group_merge.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

/* Records decoded at once: few enough to stay in the first-level cache. */
#define BATCH 32
#define NOT_OOM UINT32_MAX
/* The first window's span; it then follows VT_MERGE_WINDOW_EVENTS, growing
 * at most this many times a window. Each window is a pass over every
 * trace's replay state (a live set, sites), cold after the other traces'
 * turns: a job of many short ranks, whose first windows doubled from a
 * millisecond, spent a sixth of its time on the passes of the first few. */
#define FIRST_SPAN_NS 1000000ull
#define SPAN_GROWTH_MAX 64

/* A window is cut into this many slices of equal time (merge_gpu). */
#define SLICES 128

/* How a lane's notes of a slice move its GPU's total: their sum, highest
 * and lowest running sum (0, the empty sum, included), their end in its
 * queues (notes, wide notes) and the time of the last; mixed: a failure
 * is among them, or the sums overflow. */
struct slice_sum {
    int64_t sum, hi, lo;
    size_t end, wend;
    uint64_t last_ns;
    bool mixed;
};

/* What a device ledger did, for the GPU totals, as queued: every event of
 * a trace writes one, and a window holds tens of thousands a trace, so a
 * note is 8 bytes (24 as a whole: a group's queues were written to memory
 * never touched before, a third of the page faults of a job of many
 * ranks). Most notes change the lane's usual ledger by less than 2 GiB, a
 * short time after the note before: the time as that gap, the change.
 * Any other (a failure, another ledger, a large change, times far apart
 * or going back) is NOTE_WIDE, its whole note next in the lane's wide
 * queue. */
#define NOTE_WIDE INT32_MIN
struct note {
    int32_t gap;   /* ns after the note before, or NOTE_WIDE */
    int32_t delta; /* the change of the lane's usual ledger */
};

struct wide_note {
    uint64_t time_ns, delta;
    uint32_t ledger, oom; /* oom: NOT_OOM for a change */
};

#define NO_LEDGER UINT32_MAX

/* One trace in the merge. */
struct lane {
    struct vt_input *in;
    uint32_t index;               /* in the group: the merge's tie order */
    struct note *notes;           /* the queue: notes[head..n) */
    size_t head, n, cap;
    struct wide_note *wide;       /* ... the wide ones among them: wide[whead..wn) */
    size_t whead, wn, wcap;
    uint64_t head_ns;             /* the time of notes[head] (head < n) */
    uint64_t tail_ns;             /* ... of the last note queued */
    uint32_t ledger;              /* its usual ledger: its first note's */
    bool lost;                    /* a note could not be kept (out of memory) */
    bool live;                    /* a timed record is next (else the end) */
    uint64_t next_ns;             /* ... at this time */
    int pos, nb;                  /* batch[pos] is next; pos == nb: in->peek is */
    uint64_t fed;                 /* events fed in this window */
    uint64_t ledgers[2];          /* bits: the ledgers of the notes queued (and the usual
                                   * one while any is) */
    long gpu;                     /* their one GPU (feed->gpu_of), -1: none */
    uint64_t on_gpu[2];           /* bits: those of them on it (the others touch no GPU) */
    size_t on_gpu_ledger;         /* one of them */
    /* the window's slices, summed as notes come: slice k holds times
     * before from + (k + 1) * width (the last, the rest); a note after
     * one of slice k is in slice k or later (times that go backwards
     * stay in it), as merge_notes takes a slice's notes */
    uint64_t from, width, until;  /* until: the window's end as set */
    unsigned cur;                 /* the slice of the last note */
    uint64_t next_cut;            /* no note before it is past slice cur, nor
                                   * at or past until */
    bool spilled;                 /* a note at or past until: no sums */
    struct slice_sum sl[SLICES];
    struct slice_sum scanned;     /* a slice's notes summed by lane_swing */
    struct vt_replay_mem batch[BATCH];
};

/* Records and notes before a window's end: (time, lane) < (t, lane). */
struct bound {
    uint64_t t;
    uint32_t lane;
};

static inline bool below(uint64_t t, uint32_t lane, struct bound b)
{
    return t < b.t || (t == b.t && lane < b.lane);
}

static inline bool at_most(uint64_t t, uint32_t lane, struct bound b)
{
    return t < b.t || (t == b.t && lane <= b.lane);
}

/* ---- a lane's queue ---- */

/* A place in a lane's queue: note i, at time t; wide[w] is the first wide
 * note from i on. */
struct at {
    size_t i, w;
    uint64_t t;
};

static inline bool is_wide(const struct lane *ln, size_t i)
{
    return ln->notes[i].gap == NOTE_WIDE;
}

static inline struct at head_of(const struct lane *ln)
{
    return (struct at){ln->head, ln->whead, ln->head_ns};
}

/* The place after a; its time is read only where a note is there. */
static inline void step(const struct lane *ln, struct at *a)
{
    a->w += is_wide(ln, a->i);
    if (++a->i < ln->n)
        a->t = is_wide(ln, a->i) ? ln->wide[a->w].time_ns
                                 : a->t + (uint64_t)(int64_t)ln->notes[a->i].gap;
}

/* The queue's head moves to note i (wide notes before it: w), the one
 * after a note at last_ns. */
static inline void skip_to(struct lane *ln, size_t i, size_t w, uint64_t last_ns)
{
    ln->head = i;
    ln->whead = w;
    if (i < ln->n)
        ln->head_ns = is_wide(ln, i) ? ln->wide[w].time_ns
                                     : last_ns + (uint64_t)(int64_t)ln->notes[i].gap;
}

static inline void pop(struct lane *ln)
{
    struct at a = head_of(ln);
    step(ln, &a);
    ln->head = a.i;
    ln->whead = a.w;
    ln->head_ns = a.t;
}

/* The note at a: its change (a decrease wraps), ledger and failure. */
static inline uint64_t delta_at(const struct lane *ln, struct at a)
{
    return is_wide(ln, a.i) ? ln->wide[a.w].delta : (uint64_t)(int64_t)ln->notes[a.i].delta;
}

static inline uint32_t ledger_at(const struct lane *ln, struct at a)
{
    return is_wide(ln, a.i) ? ln->wide[a.w].ledger : ln->ledger;
}

static inline uint32_t oom_at(const struct lane *ln, struct at a)
{
    return is_wide(ln, a.i) ? ln->wide[a.w].oom : NOT_OOM;
}

static inline void sum_into(struct slice_sum *s, uint64_t delta, uint32_t oom)
{
    if (oom != NOT_OOM || __builtin_add_overflow(s->sum, (int64_t)delta, &s->sum)) {
        s->mixed = true;
        return;
    }
    s->hi = s->sum > s->hi ? s->sum : s->hi;
    s->lo = s->sum < s->lo ? s->sum : s->lo;
}

/* The note at a (after one at prev_ns) is past slice cur: the slices it
 * leaves end before it (their ends are written here, once, not at every
 * note; the last slice's by slices_close). */
static void slice_leave(struct lane *ln, struct at a, uint64_t prev_ns)
{
    while (ln->cur + 1 < SLICES && a.t >= ln->from &&
           a.t - ln->from >= (uint64_t)(ln->cur + 1) * ln->width) {
        struct slice_sum *s = &ln->sl[ln->cur++];
        s->end = a.i;
        s->wend = a.w;
        s->last_ns = prev_ns;
    }
    uint64_t step = (uint64_t)(ln->cur + 1) * ln->width;
    ln->next_cut = ln->cur + 1 < SLICES && step <= UINT64_MAX - ln->from ? ln->from + step
                                                                          : UINT64_MAX;
    if (ln->next_cut > ln->until)
        ln->next_cut = ln->until; /* note_change's one test for both */
}

/* The queue's note at a (after one at prev_ns), into its slice's sums. */
static inline void slice_add(struct lane *ln, struct at a, uint64_t prev_ns, uint64_t delta,
                             uint32_t oom)
{
    if (a.t >= ln->until)
        ln->spilled = true;
    if (a.t >= ln->next_cut)
        slice_leave(ln, a, prev_ns);
    sum_into(&ln->sl[ln->cur], delta, oom);
}

/* The notes queued are all in slices: the last one's end. */
static void slices_close(struct lane *ln)
{
    struct slice_sum *s = &ln->sl[ln->cur];
    s->end = ln->n;
    s->wend = ln->wn;
    s->last_ns = ln->tail_ns;
}

/* A window from `from` to `until` starts: the notes still queued are
 * summed again in its slices. */
static void slices_start(struct lane *ln, uint64_t from, uint64_t until)
{
    ln->from = from;
    ln->until = until;
    ln->width = (until - from) / SLICES + 1;
    ln->cur = 0;
    ln->next_cut = 0;
    ln->spilled = false;
    memset(ln->sl, 0, sizeof ln->sl);
    uint64_t prev_ns = 0;
    for (struct at a = head_of(ln); a.i < ln->n; prev_ns = a.t, step(ln, &a))
        slice_add(ln, a, prev_ns, delta_at(ln, a), oom_at(ln, a));
}

/* Queues a note, written in place (a struct passed by value went through
 * the stack: loads that waited on the stores just made). */
static inline __attribute__((always_inline)) void note(struct lane *ln, uint64_t time_ns,
                                                       uint64_t delta, uint32_t ledger,
                                                       uint32_t oom)
{
    if (ln->n == ln->cap &&
        !vt_grow_array((void **)&ln->notes, &ln->cap, ln->n + 1, sizeof *ln->notes)) {
        ln->lost = true;
        return;
    }
    if (ln->ledger == NO_LEDGER)
        ln->ledger = ledger;
    int64_t gap = (int64_t)(time_ns - ln->tail_ns);
    struct note *nt = &ln->notes[ln->n];
    struct at a = {ln->n, ln->wn, time_ns};
    if (oom == NOT_OOM && ledger == ln->ledger && gap == (int32_t)gap && gap != NOTE_WIDE &&
        (int64_t)delta == (int32_t)delta) {
        nt->gap = (int32_t)gap;
        nt->delta = (int32_t)delta;
    } else {
        if (ln->wn == ln->wcap &&
            !vt_grow_array((void **)&ln->wide, &ln->wcap, ln->wn + 1, sizeof *ln->wide)) {
            ln->lost = true;
            return;
        }
        ln->wide[ln->wn++] = (struct wide_note){time_ns, delta, ledger, oom};
        nt->gap = NOTE_WIDE;
        nt->delta = 0;
        ln->ledgers[ledger >> 6 & 1] |= 1ull << (ledger & 63);
    }
    if (ln->head == ln->n) {
        /* a queue that holds notes has the usual ledger's bit (one_gpu_each) */
        ln->head_ns = time_ns;
        ln->ledgers[ln->ledger >> 6 & 1] |= 1ull << (ln->ledger & 63);
    }
    uint64_t prev_ns = ln->tail_ns;
    ln->tail_ns = time_ns;
    ln->n++;
    slice_add(ln, a, prev_ns, delta, oom);
}

static __attribute__((noinline)) void note_any(struct lane *ln, uint64_t time_ns, uint64_t delta,
                                               uint32_t ledger)
{
    note(ln, time_ns, delta, ledger, NOT_OOM);
}

/* Every event of a trace calls it: the usual note (a queue with room and
 * notes, the usual ledger, a small change a short time after the note
 * before, in the last note's slice of the window) is written here with no
 * more than that, the rest by note_any, which does all that note does
 * (the whole note on this path kept 6 registers on the stack and took 76
 * instructions a note). */
static void note_change(void *ctx, struct vt_replay *rp, struct vt_ledger *l, uint64_t old_total,
                        uint64_t time_ns)
{
    struct lane *ln = ctx;
    uint64_t delta = l->sites.total_bytes - old_total;
    uint32_t ledger = (uint32_t)(l - rp->ledgers);
    uint64_t gap = time_ns - ln->tail_ns;
    size_t n = ln->n;
    /* gap + INT32_MAX below 2^32 - 1: the gap is an int32_t and not NOTE_WIDE */
    if (__builtin_expect(n == ln->cap || n == ln->head || ledger != ln->ledger ||
                             gap + INT32_MAX >= UINT32_MAX ||
                             (int64_t)delta != (int32_t)delta || time_ns >= ln->next_cut,
                         0)) {
        note_any(ln, time_ns, delta, ledger);
        return;
    }
    ln->notes[n] = (struct note){(int32_t)gap, (int32_t)delta};
    ln->n = n + 1;
    ln->tail_ns = time_ns;
    sum_into(&ln->sl[ln->cur], delta, NOT_OOM);
}

static void note_oom(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    if (l->category == VT_CAT_DEVICE && l->device >= 0)
        note(ctx, o->time_ns, 0, (uint32_t)(l - rp->ledgers), (uint32_t)(o - l->ooms));
}

/* Feeds definitions at once and stops at the next timed record, which
 * waits in in->peek. */
static void advance(struct vt_input *in)
{
    /* a stack node only fills the reader's table: a replay that shows its
     * records to no observer is handed none */
    bool quiet = !in->replay.on_record;
    int rc;
    for (;;) {
        if (quiet)
            vt_reader_take_stack_nodes(in->reader);
        if ((rc = vt_reader_next(in->reader, &in->peek)) <= 0)
            break;
        if (vt_record_is_timed(in->peek.type)) {
            in->state = 1;
            return;
        }
        vt_replay_feed(&in->replay, &in->peek);
    }
    in->state = rc;
}

/* The lane's next timed record: a memory event of a batch decoded at once,
 * or else a whole record in in->peek (ln->live false at the end). */
static void lane_next(struct lane *ln)
{
    if (ln->pos + 1 < ln->nb) {
        ln->next_ns = ln->batch[++ln->pos].time_ns;
        return;
    }
    int n = vt_reader_next_mem_events(ln->in->reader, ln->batch, BATCH);
    if (n > 0) {
        ln->nb = n;
        ln->pos = 0;
        ln->next_ns = ln->batch[0].time_ns;
        return;
    }
    ln->nb = ln->pos = 0;
    advance(ln->in);
    ln->next_ns = ln->in->peek.time_ns;
    ln->live = ln->in->state == 1;
    /* Its chunk buffer and live set go now, not when the group ends: every
     * lane's chunk was filled by the first round, and the notes the others
     * queue after this lane's end then take their room rather than fresh
     * pages (a group of 64 ranks of 20,000 events held 20 MB of chunks and
     * 8 MB of live sets beside 16 MB of notes). */
    if (!ln->live) {
        vt_reader_release(ln->in->reader);
        vt_replay_drop_live(&ln->in->replay);
    }
}

/* Replays the lane's records before *b, a run at a time. A full queue ends
 * the window at the lane's next record (*b lowered to it). */
static void lane_run(struct lane *ln, struct bound *b)
{
    struct vt_replay *rp = &ln->in->replay;
    while (ln->live && below(ln->next_ns, ln->index, *b)) {
        if (ln->n - ln->head >= VT_MERGE_NOTES_MAX) {
            *b = (struct bound){ln->next_ns, ln->index};
            return;
        }
        if (ln->pos < ln->nb) {
            int end = ln->pos + 1;
            while (end < ln->nb && below(ln->batch[end].time_ns, ln->index, *b))
                end++;
            vt_replay_feed_mem_events(rp, &ln->batch[ln->pos], (size_t)(end - ln->pos));
            ln->fed += (uint64_t)(end - ln->pos);
            ln->pos = end - 1;
        } else {
            vt_replay_feed(rp, &ln->in->peek);
            ln->fed++;
        }
        lane_next(ln);
    }
}

/* ---- the threads that replay a window's lanes, and merge its GPUs ---- */

static size_t merge_gpu(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                        uint64_t base, struct bound b, const struct vt_gpu_feed *feed);

struct crew {
    struct lane *lanes;
    size_t nlanes;
    pthread_mutex_t lock;
    pthread_cond_t go, done;
    uint64_t round;          /* rounds started */
    size_t busy;             /* threads still at this round */
    bool quit;
    _Atomic size_t next;     /* the next lane (or GPU) to take */
    /* the first round: each lane's first records read (its chunk
     * decompressed, the definitions at its head fed), to its first event */
    bool starting;
    /* a round of replaying */
    struct bound start;      /* the window's end as set */
    struct bound end;        /* ... lowered by full queues */
    /* a round of merging: GPU p's lanes are set[parts[p]..parts[p + 1]) */
    bool merging;
    struct lane **set;
    size_t *parts, nparts;
    uint64_t *h;             /* heap room, a key per lane (a GPU's at its lanes' place) */
    uint64_t base;
    struct bound upto;
    const struct vt_gpu_feed *feed;
    _Atomic size_t handed;
};

/* Takes lanes (or GPUs) until none is left; returns its lowest end. */
static struct bound crew_work(struct crew *c)
{
    struct bound b = c->start;
    size_t k;
    if (c->starting) {
        while ((k = atomic_fetch_add(&c->next, 1)) < c->nlanes)
            lane_next(&c->lanes[k]);
        return b;
    }
    if (c->merging) {
        while ((k = atomic_fetch_add(&c->next, 1)) < c->nparts) {
            size_t i = c->parts[k], n = c->parts[k + 1] - i;
            atomic_fetch_add(&c->handed, merge_gpu(c->lanes, c->set + i, n, c->h + i, c->base,
                                                   c->upto, c->feed));
        }
        return b;
    }
    while ((k = atomic_fetch_add(&c->next, 1)) < c->nlanes)
        lane_run(&c->lanes[k], &b);
    return b;
}

static void crew_lower(struct crew *c, struct bound b)
{
    if (below(b.t, b.lane, c->end))
        c->end = b;
}

static void *crew_main(void *arg)
{
    struct crew *c = arg;
    uint64_t seen = 0;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (c->round == seen && !c->quit)
            pthread_cond_wait(&c->go, &c->lock);
        if (c->quit)
            break;
        seen = c->round;
        pthread_mutex_unlock(&c->lock);
        struct bound b = crew_work(c);
        pthread_mutex_lock(&c->lock);
        crew_lower(c, b);
        if (--c->busy == 0)
            pthread_cond_signal(&c->done);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

/* A round on the crew's threads and the caller's: every lane replayed up
 * to c->start (returns the window's end, lowered where a queue filled), or
 * every GPU's notes merged. */
static struct bound crew_round(struct crew *c, size_t helpers)
{
    atomic_store(&c->next, 0);
    c->end = c->start;
    if (helpers) {
        pthread_mutex_lock(&c->lock);
        c->busy = helpers;
        c->round++;
        pthread_cond_broadcast(&c->go);
        pthread_mutex_unlock(&c->lock);
    }
    struct bound mine = crew_work(c);
    pthread_mutex_lock(&c->lock);
    crew_lower(c, mine);
    while (c->busy)
        pthread_cond_wait(&c->done, &c->lock);
    struct bound b = c->end;
    pthread_mutex_unlock(&c->lock);
    return b;
}

/* ---- the notes, merged ---- */

/* A lane's next note in the merge, as one number: its time after the
 * window's start, then its lane (the tie order), so that the heap compares
 * one integer. */
#define LANE_BITS 20
#define MAX_LANES (1u << LANE_BITS)
#define MAX_SPAN_NS (1ull << (63 - LANE_BITS))

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
    struct at a = head_of(ln);
    if (!is_wide(ln, a.i)) {
        feed->change(feed->ctx, ln->in, ln->ledger, (uint64_t)(int64_t)ln->notes[a.i].delta, a.t);
    } else {
        const struct wide_note *w = &ln->wide[a.w];
        if (w->oom == NOT_OOM)
            feed->change(feed->ctx, ln->in, w->ledger, w->delta, a.t);
        else
            feed->oom(feed->ctx, ln->in, w->ledger, w->oom);
    }
    pop(ln);
}

static inline bool mergeable(const struct lane *ln, struct bound b)
{
    return ln->head < ln->n && at_most(ln->head_ns, ln->index, b);
}

/* Hands the notes up to b of the lanes of set (none before base, none
 * past base + MAX_SPAN_NS) to the GPU totals in the merge's order; returns
 * how many. h: room for a key per lane. */
static size_t merge_notes(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
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
        skip_to(ln, s->end, s->wend, s->last_ns);
    }
    return handed;
}

/* The lane's notes from its head up to b, summed into ln->scanned. */
static void lane_swing(struct lane *ln, struct bound b)
{
    struct slice_sum s = {0, 0, 0, 0, 0, 0, false};
    struct at a = head_of(ln);
    for (; a.i < ln->n && at_most(a.t, ln->index, b) && !s.mixed; step(ln, &a)) {
        uint32_t ledger = ledger_at(ln, a);
        if (ln->on_gpu[ledger >> 6 & 1] >> (ledger & 63) & 1)
            sum_into(&s, delta_at(ln, a), oom_at(ln, a));
        else if (oom_at(ln, a) != NOT_OOM)
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
    for (struct at a = head_of(ln); a.i < s->end; prev = a.t, step(ln, &a)) {
        uint32_t ledger = ledger_at(ln, a);
        if (oom_at(ln, a) != NOT_OOM || a.t < prev)
            return false;
        if (!(ln->on_gpu[ledger >> 6 & 1] >> (ledger & 63) & 1))
            continue; /* a ledger on no GPU: its changes touch none */
        int64_t delta = (int64_t)delta_at(ln, a);
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
        return merge_notes(lanes, set, nset, h, base, b, feed);
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
static size_t merge_gpu(struct lane *lanes, struct lane *const *set, size_t nset, uint64_t *h,
                        uint64_t base, struct bound b, const struct vt_gpu_feed *feed)
{
    if (!feed->totals)
        return merge_notes(lanes, set, nset, h, base, b, feed);
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

/* Each lane's one GPU, from the ledgers of its queued notes; false if a
 * ledger has none yet (placing it creates the group's GPUs in the merge's
 * order) or a lane has notes on two GPUs: then the window's notes are
 * merged all together. */
static bool one_gpu_each(struct lane *lanes, size_t n, const struct vt_gpu_feed *feed)
{
    if (!feed->gpu_of)
        return false;
    for (size_t k = 0; k < n; k++) {
        struct lane *ln = &lanes[k];
        ln->gpu = -1;
        ln->on_gpu[0] = ln->on_gpu[1] = 0;
        for (unsigned w = 0; w < 2; w++)
            for (uint64_t bits = ln->ledgers[w]; bits; bits &= bits - 1) {
                size_t li = w * 64 + (size_t)__builtin_ctzll(bits);
                long g = feed->gpu_of(feed->ctx, ln->in, li);
                if (g == 0 || (g > 0 && ln->gpu >= 0 && g != ln->gpu))
                    return false;
                if (g > 0) {
                    ln->gpu = g;
                    ln->on_gpu[w] |= bits & -bits;
                    ln->on_gpu_ledger = li;
                }
            }
    }
    return true;
}

static int by_gpu(const void *pa, const void *pb)
{
    const struct lane *a = *(struct lane *const *)pa, *b = *(struct lane *const *)pb;
    if (a->gpu != b->gpu)
        return a->gpu < b->gpu ? -1 : 1;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* The window's notes up to b: GPU by GPU where each lane has one (a GPU's
 * totals depend only on its own lanes' order: a smaller heap, fewer queues
 * read at once, and GPUs merged on the crew's threads), else all
 * together. */
static size_t merge_window(struct crew *c, size_t helpers, uint64_t base, struct bound b,
                           const struct vt_gpu_feed *feed)
{
    struct lane **set = c->set;
    for (size_t k = 0; k < c->nlanes; k++)
        set[k] = &c->lanes[k];
    if (!one_gpu_each(c->lanes, c->nlanes, feed))
        return merge_notes(c->lanes, set, c->nlanes, c->h, base, b, feed);
    qsort(set, c->nlanes, sizeof *set, by_gpu);
    c->nparts = 0;
    for (size_t i = 0; i < c->nlanes; i++)
        if (!i || set[i]->gpu != set[i - 1]->gpu)
            c->parts[c->nparts++] = i;
    c->parts[c->nparts] = c->nlanes;
    c->merging = true;
    c->base = base;
    c->upto = b;
    c->feed = feed;
    atomic_store(&c->handed, 0);
    crew_round(c, c->nparts > 1 ? helpers : 0);
    c->merging = false;
    return atomic_load(&c->handed);
}

/* Timestamps that went backwards left notes the windows cannot order:
 * they go lane by lane. */
static size_t merge_rest(struct lane *lanes, size_t nlanes, const struct vt_gpu_feed *feed)
{
    size_t handed = 0;
    for (size_t k = 0; k < nlanes; k++)
        for (; lanes[k].head < lanes[k].n; handed++)
            hand_over(feed, &lanes[k]);
    return handed;
}

/* What is left of each queue moves to its front. */
static void compact(struct lane *lanes, size_t nlanes)
{
    for (size_t k = 0; k < nlanes; k++) {
        struct lane *ln = &lanes[k];
        if (ln->head) {
            memmove(ln->notes, ln->notes + ln->head, (ln->n - ln->head) * sizeof *ln->notes);
            ln->n -= ln->head;
            ln->head = 0;
        }
        if (ln->whead) {
            memmove(ln->wide, ln->wide + ln->whead, (ln->wn - ln->whead) * sizeof *ln->wide);
            ln->wn -= ln->whead;
            ln->whead = 0;
        }
        if (!ln->n)
            ln->ledgers[0] = ln->ledgers[1] = 0;
    }
}

/* ---- the pass ---- */

/* The earliest record or note of any lane; false when all are done. */
static bool earliest(const struct lane *lanes, size_t n, uint64_t *t)
{
    bool any = false;
    *t = UINT64_MAX;
    for (size_t k = 0; k < n; k++) {
        const struct lane *ln = &lanes[k];
        if (ln->live && ln->next_ns <= *t) {
            *t = ln->next_ns;
            any = true;
        }
        if (ln->head < ln->n && ln->head_ns <= *t) {
            *t = ln->head_ns;
            any = true;
        }
    }
    return any;
}

static void run_windows(struct crew *c, size_t helpers, const struct vt_gpu_feed *feed)
{
    uint64_t span = FIRST_SPAN_NS, t0;
    while (earliest(c->lanes, c->nlanes, &t0)) {
        struct bound b = {t0 + span, 0};
        bool ordered = b.t > t0;
        if (!ordered) /* past the clock's end */
            b = (struct bound){UINT64_MAX, UINT32_MAX};
        size_t live = 0;
        for (size_t k = 0; k < c->nlanes; k++) {
            live += c->lanes[k].live;
            c->lanes[k].fed = 0;
        }
        for (size_t k = 0; k < c->nlanes; k++)
            slices_start(&c->lanes[k], t0, b.t);
        c->start = b;
        b = crew_round(c, helpers);
        uint64_t fed = 0;
        for (size_t k = 0; k < c->nlanes; k++)
            fed += c->lanes[k].fed;
        size_t handed = ordered ? merge_window(c, helpers, t0, b, feed) : 0;
        if (!handed && (!fed || !ordered))
            merge_rest(c->lanes, c->nlanes, feed); /* only with times that go backwards */
        compact(c->lanes, c->nlanes);
        uint64_t want = (uint64_t)VT_MERGE_WINDOW_EVENTS * (live ? live : 1);
        if (fed < want / 2 && span < MAX_SPAN_NS / 2) {
            /* at this window's rate, the next holds what is wanted */
            uint64_t grow = fed ? want / fed : 2;
            grow = grow > SPAN_GROWTH_MAX ? SPAN_GROWTH_MAX : grow;
            span = span < MAX_SPAN_NS / 2 / grow ? span * grow : MAX_SPAN_NS / 2;
        } else if (fed > 2 * want && span > 1) {
            span /= 2;
        }
    }
}

bool vt_group_merge(struct vt_input *const *inputs, size_t n, size_t nthreads,
                    const struct vt_gpu_feed *feed)
{
    struct lane *lanes = calloc(n, sizeof *lanes);
    uint64_t *h = malloc(n * sizeof *h);
    struct lane **set = malloc(n * sizeof *set);
    size_t *parts = malloc((n + 1) * sizeof *parts);
    /* more than MAX_LANES traces: the files run out long before */
    if (!lanes || !h || !set || !parts || n > MAX_LANES) {
        free(lanes);
        free(h);
        free(set);
        free(parts);
        return false;
    }
    for (size_t k = 0; k < n; k++) {
        struct lane *ln = &lanes[k];
        ln->in = inputs[k];
        ln->index = (uint32_t)k;
        ln->live = true;
        ln->ledger = NO_LEDGER;
        ln->in->replay.on_change = note_change;
        ln->in->replay.on_oom = note_oom;
        ln->in->replay.on_change_ctx = ln;
        /* a lane's turn follows the others': its live set is cold by then
         * (256 ranks of 20,000 events: 0.96x the time) */
        vt_replay_read_in_turns(&ln->in->replay);
        if (!ln->in->replay.on_record) /* a site record is shown to no one */
            vt_reader_events_past_sites(ln->in->reader);
    }
    struct crew c = {.lanes = lanes, .nlanes = n, .set = set, .parts = parts, .h = h,
                     .starting = true};
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.go, NULL);
    pthread_cond_init(&c.done, NULL);
    size_t want = nthreads > n ? n : nthreads;
    pthread_t *t = want > 1 ? calloc(want - 1, sizeof *t) : NULL;
    size_t helpers = 0;
    for (; t && helpers + 1 < want; helpers++)
        if (pthread_create(&t[helpers], NULL, crew_main, &c) != 0)
            break; /* fewer threads: the same figures */
    /* Each lane's start on the crew: a whole chunk to decompress a trace,
     * an eighth of the work of a job of 100,000 events a rank, which the
     * caller did alone before the first window (a 2-thread crew took 1.48x
     * one thread on 1024x100k, where groups side by side took 1.8x). */
    crew_round(&c, helpers);
    c.starting = false;
    run_windows(&c, helpers, feed);
    pthread_mutex_lock(&c.lock);
    c.quit = true;
    pthread_cond_broadcast(&c.go);
    pthread_mutex_unlock(&c.lock);
    for (size_t k = 0; k < helpers; k++)
        pthread_join(t[k], NULL);
    free(t);
    pthread_cond_destroy(&c.done);
    pthread_cond_destroy(&c.go);
    pthread_mutex_destroy(&c.lock);
    bool lost = false;
    for (size_t k = 0; k < n; k++) {
        lost |= lanes[k].lost;
        lanes[k].in->replay.on_change = NULL;
        lanes[k].in->replay.on_oom = NULL;
        free(lanes[k].notes);
        free(lanes[k].wide);
    }
    if (lost)
        for (size_t k = 0; k < n; k++)
            lanes[k].in->replay.out_of_memory = true;
    free(lanes);
    free(h);
    free(set);
    free(parts);
    return true;
}
