/* Decoding a trace's records ahead on a thread; see decode_ahead.h. */
#include "decode_ahead.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

/* Records (not memory events that succeeded) a batch holds at most: those
 * at a chunk's end, a failure, a range, a site. */
#define SLOT_RECORDS 16

/* A batch: events evs[0..n), with record k after the first rec_at[k] of
 * them; parked: the thread stopped after it, leaving the reader to the
 * caller. */
struct slot {
    int n, nrecs;
    bool parked;
    int rec_at[SLOT_RECORDS];
    struct vt_record recs[SLOT_RECORDS];
    struct vt_replay_mem evs[VT_DECODE_AHEAD_EVENTS];
};

struct ahead {
    struct vt_reader *r;
    pthread_mutex_t lock;
    pthread_cond_t to_thread, to_caller;
    /* Under lock. The thread holds the reader while running; slots
     * [taken, filled) (mod VT_DECODE_AHEAD_SLOTS) are the caller's to read. */
    uint64_t filled, taken;
    bool running, stop;
    bool wants_room; /* the thread waits for half the ring to be read */
    bool failed;     /* no memory for a batch: the thread stopped for good */
    /* Each made when first filled: a short trace takes few. Apart: no
     * allocation of megabytes. */
    struct slot *slots[VT_DECODE_AHEAD_SLOTS];
};

/* Records the thread may decode: those that change none of the reader's
 * tables that the caller's work reads meanwhile - the timed records
 * (memory events, ranges, marks, parts, the trailer) and lost counts. A
 * site (format version 4) grows only the reader's own table of sites,
 * which the decoding alone reads (and the thread holds the reader): most
 * definitions after a trace's first records are sites. Any other
 * definition, an unknown type and the end (-1) are the caller's to read. */
static bool defines_nothing(int type)
{
    if (type < 0 || !vt_record_type_valid((unsigned)type))
        return false;
    switch ((enum vt_record_type)type) {
    case VT_REC_MEM:
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK:
    case VT_REC_PART:
    case VT_REC_TRAILER:
    case VT_REC_LOST:
    case VT_REC_SITE:
        return true;
    case VT_REC_PROCESS:
    case VT_REC_MODULE:
    case VT_REC_MODULE_UNLOAD:
    case VT_REC_THREAD:
    case VT_REC_DEVICE:
    case VT_REC_STACK_NODE:
    case VT_REC_STRING:
    case VT_REC_API:
    case VT_REC_PY_CODE:
        return false;
    }
    return false;
}

/* Fills s from the reader, which the thread holds. */
static void fill(struct vt_reader *r, struct slot *s)
{
    s->n = s->nrecs = 0;
    s->parked = false;
    while (s->n < VT_DECODE_AHEAD_EVENTS && s->nrecs < SLOT_RECORDS) {
        s->n += vt_reader_next_mem_events(r, s->evs + s->n, VT_DECODE_AHEAD_EVENTS - s->n);
        if (s->n == VT_DECODE_AHEAD_EVENTS)
            return;
        /* a record the fast path leaves (a chunk's last, a failure, a
         * range...), a definition, the end or an error */
        if (!defines_nothing(vt_reader_peek_type(r)) || vt_reader_next(r, &s->recs[s->nrecs]) <= 0) {
            s->parked = true; /* an error of the record: the caller's next() says it */
            return;
        }
        s->rec_at[s->nrecs++] = s->n;
    }
}

/* Waiting for the other side, a thread reads and decompresses the next
 * chunk if it waits to be (vt_reader_read_ahead_shared): the one that has
 * time to spare does it, and no third thread competes for two cores.
 * With a->lock held (let go meanwhile). */
static bool help(struct ahead *a)
{
    pthread_mutex_unlock(&a->lock);
    bool helped = vt_reader_help_read_ahead(a->r);
    pthread_mutex_lock(&a->lock);
    return helped;
}

static void *decode_main(void *arg)
{
    struct ahead *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        /* a full ring: the thread waits till half of it is read, not
         * woken for each batch */
        a->wants_room = a->filled - a->taken == VT_DECODE_AHEAD_SLOTS;
        while (!a->stop && a->wants_room)
            if (!help(a) && !a->stop && a->wants_room)
                pthread_cond_wait(&a->to_thread, &a->lock);
        while (!a->stop && !a->running)
            pthread_cond_wait(&a->to_thread, &a->lock);
        if (a->stop)
            break;
        struct slot **at = &a->slots[a->filled % VT_DECODE_AHEAD_SLOTS];
        if (!*at && !(*at = malloc(sizeof **at))) {
            a->failed = true; /* the reader goes back to the caller */
            a->running = false;
            pthread_cond_signal(&a->to_caller);
            continue;
        }
        struct slot *s = *at;
        pthread_mutex_unlock(&a->lock);
        fill(a->r, s); /* the slot and the reader are the thread's */
        pthread_mutex_lock(&a->lock);
        a->filled++;
        if (s->parked)
            a->running = false;
        pthread_cond_signal(&a->to_caller);
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

/* The next batch, once the thread has filled it; NULL if it stopped for
 * want of memory (the reader is then the caller's). */
static const struct slot *take(struct ahead *a)
{
    pthread_mutex_lock(&a->lock);
    while (a->taken == a->filled && !a->failed)
        if (!help(a) && a->taken == a->filled && !a->failed)
            pthread_cond_wait(&a->to_caller, &a->lock);
    const struct slot *s =
        a->taken == a->filled ? NULL : a->slots[a->taken % VT_DECODE_AHEAD_SLOTS];
    pthread_mutex_unlock(&a->lock);
    return s;
}

/* The batch taken is read: its slot goes back to the thread, and with
 * restart the reader too. */
static void give_back(struct ahead *a, bool restart)
{
    pthread_mutex_lock(&a->lock);
    a->taken++;
    if (restart)
        a->running = true;
    if (a->wants_room && a->filled - a->taken <= VT_DECODE_AHEAD_SLOTS / 2)
        a->wants_room = false;
    if (restart || !a->wants_room)
        pthread_cond_signal(&a->to_thread);
    pthread_mutex_unlock(&a->lock);
}

/* The caller holds the reader (the thread parked): it reads the records
 * the thread leaves to it, up to one the thread may decode again. Returns
 * 1 to start the thread again, or what next() returned at the end. */
static int read_left(struct vt_reader *r, const struct vt_decode_sink *sink)
{
    do {
        struct vt_record rec;
        int rc = vt_reader_next(r, &rec);
        if (rc <= 0)
            return rc;
        sink->record(sink->ctx, &rec);
    } while (!defines_nothing(vt_reader_peek_type(r)));
    return 1;
}

int vt_decode_inline(struct vt_reader *r, const struct vt_decode_sink *sink, uint64_t max_events)
{
    struct vt_replay_mem batch[VT_DECODE_INLINE_BATCH];
    uint64_t done = 0;
    for (;;) {
        if (done >= max_events && defines_nothing(vt_reader_peek_type(r)))
            return 1;
        int n = vt_reader_next_mem_events(r, batch, VT_DECODE_INLINE_BATCH);
        if (n > 0)
            sink->events(sink->ctx, batch, (size_t)n);
        done += (uint64_t)n;
        if (n == VT_DECODE_INLINE_BATCH)
            continue;
        struct vt_record rec;
        int rc = vt_reader_next(r, &rec);
        if (rc <= 0)
            return rc;
        sink->record(sink->ctx, &rec);
    }
}

static void set(struct ahead *a, bool *flag)
{
    pthread_mutex_lock(&a->lock);
    *flag = true;
    pthread_cond_signal(&a->to_thread);
    pthread_mutex_unlock(&a->lock);
}

static void free_ahead(struct ahead *a)
{
    for (size_t k = 0; k < VT_DECODE_AHEAD_SLOTS; k++)
        free(a->slots[k]);
    free(a);
}

int vt_decode_ahead(struct vt_reader *r, const struct vt_decode_sink *sink)
{
    struct ahead *a = calloc(1, sizeof *a);
    if (!a)
        return -2;
    a->r = r;
    pthread_t thread;
    int made = 0; /* how many of lock, to_thread, to_caller, the thread */
    if (pthread_mutex_init(&a->lock, NULL) == 0 && ++made &&
        pthread_cond_init(&a->to_thread, NULL) == 0 && ++made &&
        pthread_cond_init(&a->to_caller, NULL) == 0 && ++made &&
        pthread_create(&thread, NULL, decode_main, a) == 0)
        ++made;
    int rc = made == 4 ? 1 : -2;
    if (rc > 0 && !defines_nothing(vt_reader_peek_type(r)))
        rc = read_left(r, sink); /* the definitions first */
    if (rc > 0)
        set(a, &a->running);
    uint64_t run = 0, stretch = 0; /* events since the thread started; read inline */
    while (rc > 0) {
        const struct slot *s = take(a);
        if (!s) {
            rc = vt_decode_inline(r, sink, UINT64_MAX);
            break;
        }
        run += (uint64_t)s->n;
        int done = 0;
        for (int k = 0; k < s->nrecs; k++) {
            if (s->rec_at[k] > done)
                sink->events(sink->ctx, s->evs + done, (size_t)(s->rec_at[k] - done));
            done = s->rec_at[k];
            sink->record(sink->ctx, &s->recs[k]);
        }
        if (s->n > done)
            sink->events(sink->ctx, s->evs + done, (size_t)(s->n - done));
        bool parked = s->parked;
        if (parked) {
            rc = read_left(r, sink); /* the thread waits: the reader is the caller's */
            /* Definitions close together: each stop costs two wake-ups,
             * more than the thread's short run saved. Read inline for a
             * while, longer after each short run, before trying again. */
            if (run >= VT_DECODE_AHEAD_SHORT_RUN || sink->every_run)
                stretch = 0;
            else if (rc > 0)
                stretch = stretch ? (stretch < VT_DECODE_INLINE_MAX / 2 ? 2 * stretch
                                                                        : VT_DECODE_INLINE_MAX)
                                  : VT_DECODE_INLINE_FIRST;
            if (rc > 0 && stretch)
                rc = vt_decode_inline(r, sink, stretch);
            run = 0;
        }
        give_back(a, parked && rc > 0);
    }
    if (made == 4) {
        set(a, &a->stop);
        pthread_join(thread, NULL);
    }
    if (made >= 3)
        pthread_cond_destroy(&a->to_caller);
    if (made >= 2)
        pthread_cond_destroy(&a->to_thread);
    if (made >= 1)
        pthread_mutex_destroy(&a->lock);
    free_ahead(a);
    return rc;
}
