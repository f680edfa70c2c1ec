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
 * other thread): up to VT_DECODE_AHEAD_SLOTS batches of
 * VT_DECODE_AHEAD_EVENTS events (4 MiB), one a
 * VT_DECODE_AHEAD_FILE_BYTES_PER_SLOT of the trace, at least 2.
 */
#ifndef VRAMTRACE_ANALYZER_DECODE_AHEAD_H
#define VRAMTRACE_ANALYZER_DECODE_AHEAD_H

#include <stddef.h>

#include "trace_reader.h"

#define VT_DECODE_AHEAD_SLOTS 64
#define VT_DECODE_AHEAD_EVENTS 1024
#define VT_DECODE_AHEAD_FILE_BYTES_PER_SLOT (128u << 10)

/* What the records go to, on the caller's thread, in file order. */
struct vt_decode_sink {
    /* memory events that succeeded, as vt_reader_next_mem_events gives them */
    void (*events)(void *ctx, const struct vt_replay_mem *evs, size_t n);
    /* every other record, as vt_reader_next gives it */
    void (*record)(void *ctx, const struct vt_record *rec);
    void *ctx;
};

/* Reads r (between next() calls, not released) to its end into sink.
 * Returns what next() returned last: 0 at the end, -1 at an error
 * (vt_reader_error); or -2 if the thread could not start, nothing read
 * (then read inline). */
int vt_decode_ahead(struct vt_reader *r, const struct vt_decode_sink *sink);

#endif
