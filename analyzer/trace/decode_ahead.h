/*
 * Reading one trace to its end with its records decoded on a thread of
 * their own, while the caller consumes them: on two cores the decoding
 * and most of the decompression leave the path of the caller's work, the
 * replay.
 *
 * The caller gets every record, in file order, on its own thread, as it
 * would reading inline - vt_reader_next_mem_events for the memory events,
 * vt_reader_next for the rest - and the same end or error. The reader's
 * tables (strings, stack nodes, threads, sites, modules, devices) grow
 * only on the caller's thread, in file order: the decoding thread decodes
 * records that define nothing (memory events, ranges, marks, parts, lost
 * counts, the trailer) into a ring of batches; before any other record it
 * stops and hands the reader back; the caller, once it has consumed the
 * batches before that record, reads the definitions itself with
 * vt_reader_next, then starts the thread again. So what the caller's work
 * reads of the tables while the thread decodes does not change under it.
 * Definitions after a trace's first records are rare (but for sites,
 * which the thread may decode: they grow a table only the decoding reads):
 * the thread runs nearly all the time.
 *
 * Chunks are decompressed by the two threads, whichever has time to spare
 * (vt_reader_read_ahead_shared, if the caller started it): the thread when
 * the ring is full, the caller when it is empty - no third thread competes
 * with them for two cores, whose scheduler then left one core idle a
 * third of the time. The ring holds enough events to replay while a chunk
 * is decompressed (about a millisecond: with less, each chunk stalled the
 * other thread): VT_DECODE_AHEAD_SLOTS batches of VT_DECODE_AHEAD_EVENTS
 * events (4 MiB), each made when first filled (a short trace's few).
 */
#ifndef VRAMTRACE_ANALYZER_DECODE_AHEAD_H
#define VRAMTRACE_ANALYZER_DECODE_AHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

#define VT_DECODE_AHEAD_SLOTS 64
#define VT_DECODE_AHEAD_EVENTS 1024

/* A run of the thread shorter than this (memory events), from its start to
 * its stop before a definition, saved less than the stop and start cost
 * (two wake-ups of a thread, about a tenth of a millisecond): the caller
 * then reads the next VT_DECODE_INLINE_FIRST events inline, twice as many
 * after each short run that follows (up to VT_DECODE_INLINE_MAX), before
 * it starts the thread again. A trace of definitions among every few
 * hundred events is then read nearly as on one thread. */
#define VT_DECODE_AHEAD_SHORT_RUN (64u << 10)
#define VT_DECODE_INLINE_FIRST (64u << 10)
#define VT_DECODE_INLINE_MAX (4u << 20)
/* Memory events read at once inline: few enough to stay in the
 * first-level cache (2 KiB). */
#define VT_DECODE_INLINE_BATCH 32

/* What the records go to, on the caller's thread, in file order. */
struct vt_decode_sink {
    /* memory events that succeeded, as vt_reader_next_mem_events gives them */
    void (*events)(void *ctx, const struct vt_replay_mem *evs, size_t n);
    /* every other record, as vt_reader_next gives it */
    void (*record)(void *ctx, const struct vt_record *rec);
    void *ctx;
    bool every_run; /* start the thread again after every stop, short runs
                     * too (tests: the thread's work between definitions) */
};

/* Reads r (between next() calls, not released) to its end into sink.
 * Returns what next() returned last: 0 at the end, -1 at an error
 * (vt_reader_error); or -2 if the thread could not start, nothing read
 * (then read inline). */
int vt_decode_ahead(struct vt_reader *r, const struct vt_decode_sink *sink);

/* Reads r inline into sink, on the calling thread, the same way: up to
 * max_events memory events, then on to a record the decoding thread may
 * decode (1: there is more), or to the end (what next() returned: 0 or
 * -1). */
int vt_decode_inline(struct vt_reader *r, const struct vt_decode_sink *sink, uint64_t max_events);

#endif
