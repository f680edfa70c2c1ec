/* The merged pass over one group of traces, in windows of time; see
 * group_merge.h. */
#include "group_merge.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "merge_lane.h"
#include "notes_merge.h"

/* The first window's span; it then follows VT_MERGE_WINDOW_EVENTS, growing
 * at most this many times a window. Each window is a pass over every
 * trace's replay state (a live set, sites), cold after the other traces'
 * turns: a job of many short ranks, whose first windows doubled from a
 * millisecond, spent a sixth of its time on the passes of the first few. */
#define FIRST_SPAN_NS 1000000ull
#define SPAN_GROWTH_MAX 64

/* ---- a lane's queue ---- */

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
    slice_sum_add(&ln->sl[ln->cur], delta, oom);
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
    for (struct at a = queue_head(ln); a.i < ln->n; prev_ns = a.t, queue_step(ln, &a))
        slice_add(ln, a, prev_ns, queued_delta(ln, a), queued_oom(ln, a));
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
    slice_sum_add(&ln->sl[ln->cur], delta, NOT_OOM);
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
    while (ln->live && key_below(ln->next_ns, ln->index, *b)) {
        if (ln->n - ln->head >= VT_MERGE_NOTES_MAX) {
            *b = (struct bound){ln->next_ns, ln->index};
            return;
        }
        if (ln->pos < ln->nb) {
            int end = ln->pos + 1;
            while (end < ln->nb && key_below(ln->batch[end].time_ns, ln->index, *b))
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
            size_t handed = vt_notes_merge_gpu(c->lanes, c->set + i, n, c->h + i, c->base,
                                               c->upto, c->feed);
            atomic_fetch_add(&c->handed, handed);
        }
        return b;
    }
    while ((k = atomic_fetch_add(&c->next, 1)) < c->nlanes)
        lane_run(&c->lanes[k], &b);
    return b;
}

static void crew_lower(struct crew *c, struct bound b)
{
    if (key_below(b.t, b.lane, c->end))
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
        return vt_notes_merge(c->lanes, set, c->nlanes, c->h, base, b, feed);
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
            vt_notes_merge_rest(c->lanes, c->nlanes, feed); /* only with times that go backwards */
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
