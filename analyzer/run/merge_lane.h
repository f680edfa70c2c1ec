/*
 * A trace in its group's merge (group_merge.h): the queue of notes its
 * device ledgers' changes and failures leave, and their sums in the
 * window's slices, as its replay writes them (group_merge.c) and its
 * GPU's merge reads them (notes_merge.c).
 */
#ifndef VRAMTRACE_ANALYZER_MERGE_LANE_H
#define VRAMTRACE_ANALYZER_MERGE_LANE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct vt_input;

/* Records decoded at once: few enough to stay in the first-level cache. */
#define BATCH 32
#define NOT_OOM UINT32_MAX
/* A window is cut into this many slices of equal time (vt_notes_merge_gpu). */
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
     * stay in it), as vt_notes_merge takes a slice's notes */
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

static inline bool key_below(uint64_t t, uint32_t lane, struct bound b)
{
    return t < b.t || (t == b.t && lane < b.lane);
}

static inline bool key_at_most(uint64_t t, uint32_t lane, struct bound b)
{
    return t < b.t || (t == b.t && lane <= b.lane);
}

/* A lane's next note in the merge, as one number: its time after the
 * window's start, then its lane (the tie order), so that a heap or a sort
 * compares one integer. */
#define LANE_BITS 20
#define MAX_LANES (1u << LANE_BITS)
#define MAX_SPAN_NS (1ull << (63 - LANE_BITS))

/* ---- a lane's queue ---- */

/* A place in a lane's queue: note i, at time t; wide[w] is the first wide
 * note from i on. */
struct at {
    size_t i, w;
    uint64_t t;
};

static inline bool note_is_wide(const struct lane *ln, size_t i)
{
    return ln->notes[i].gap == NOTE_WIDE;
}

static inline struct at queue_head(const struct lane *ln)
{
    return (struct at){ln->head, ln->whead, ln->head_ns};
}

/* The place after a; its time is read only where a note is there. */
static inline void queue_step(const struct lane *ln, struct at *a)
{
    a->w += note_is_wide(ln, a->i);
    if (++a->i < ln->n)
        a->t = note_is_wide(ln, a->i) ? ln->wide[a->w].time_ns
                                 : a->t + (uint64_t)(int64_t)ln->notes[a->i].gap;
}

/* The queue's head moves to note i (wide notes before it: w), the one
 * after a note at last_ns. */
static inline void queue_skip_to(struct lane *ln, size_t i, size_t w, uint64_t last_ns)
{
    ln->head = i;
    ln->whead = w;
    if (i < ln->n)
        ln->head_ns = note_is_wide(ln, i) ? ln->wide[w].time_ns
                                     : last_ns + (uint64_t)(int64_t)ln->notes[i].gap;
}

static inline void queue_pop(struct lane *ln)
{
    struct at a = queue_head(ln);
    queue_step(ln, &a);
    ln->head = a.i;
    ln->whead = a.w;
    ln->head_ns = a.t;
}

/* The note at a: its change (a decrease wraps), ledger and failure. */
static inline uint64_t queued_delta(const struct lane *ln, struct at a)
{
    return note_is_wide(ln, a.i) ? ln->wide[a.w].delta : (uint64_t)(int64_t)ln->notes[a.i].delta;
}

static inline uint32_t queued_ledger(const struct lane *ln, struct at a)
{
    return note_is_wide(ln, a.i) ? ln->wide[a.w].ledger : ln->ledger;
}

static inline uint32_t queued_oom(const struct lane *ln, struct at a)
{
    return note_is_wide(ln, a.i) ? ln->wide[a.w].oom : NOT_OOM;
}

static inline void slice_sum_add(struct slice_sum *s, uint64_t delta, uint32_t oom)
{
    if (oom != NOT_OOM || __builtin_add_overflow(s->sum, (int64_t)delta, &s->sum)) {
        s->mixed = true;
        return;
    }
    s->hi = s->sum > s->hi ? s->sum : s->hi;
    s->lo = s->sum < s->lo ? s->sum : s->lo;
}

#endif
