/*
 * Pure encoding of trace records into bytes, and framing of chunks
 * (include/vramtrace/trace_format.h). No threads, no files, no globals: the
 * recorder's writer thread uses it, and so can tests and benchmarks that
 * need to build a trace.
 *
 *     struct vt_encoder enc;
 *     vt_encoder_init(&enc);
 *     vt_encode_string(&enc, "train", 5);     // records of one chunk ...
 *     vt_chunk_frame(&enc, cctx, &frame);      // -> header + zstd frame
 *     write(fd, frame.data, frame.len);
 *     vt_encoder_begin_chunk(&enc);           // next chunk: fresh deltas
 */
#ifndef VRAMTRACE_PRELOAD_TRACE_ENCODER_H
#define VRAMTRACE_PRELOAD_TRACE_ENCODER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "site_table.h"
#include "vramtrace/trace_format.h"

/* A growable byte buffer. A failed allocation sets failed; later appends
 * are ignored, so callers check once per chunk. */
struct vt_bytes {
    uint8_t *data;
    size_t len;
    size_t cap;
    bool failed;
};

void vt_bytes_free(struct vt_bytes *b);
/* Makes room for n more bytes; false (and failed set) if memory ran out. */
bool vt_bytes_reserve(struct vt_bytes *b, size_t n);

/* The records of the chunk being built, plus its delta state. Format
 * version 3: the records go to raw without their dt fields, which go, in
 * record order, to dts (the chunk's dt column); vt_chunk_frame writes
 * raw, dts and the footer as the chunk. */
struct vt_encoder {
    struct vt_bytes raw;
    struct vt_bytes dts;
    struct vt_delta_state delta;
    bool have_time;       /* a timed record was written in this chunk */
    uint64_t records;     /* records in this chunk */
    uint64_t time_unit_ns; /* times are written in these units (>= 1) */
    /* Time slack (vt_encoder_set_time_slack), file-wide: */
    uint64_t slack_ns;     /* 0: every time as it is */
    uint64_t slack_anchor_ns; /* the time written for the last timed record */
    bool slack_open;       /* ... which was a MEM record that did not fail */
    struct vt_site_table sites; /* file-wide (format version 4) */
    uint64_t stack_nodes;  /* STACK_NODE records of the file: the last id */
    uint64_t dt_zeros;     /* dts of 0 not yet in the column (its zero runs) */
    /* Streaming (vt_encoder_stream): records leave raw for the chunk's
     * zstd frame every VT_STREAM_PIECE bytes. */
    void *stream;          /* the ZSTD_CCtx*; NULL: compressed at vt_chunk_frame */
    bool stream_open;      /* the chunk's frame is begun (zout has its start) */
    size_t streamed;       /* record bytes of this chunk already in the frame */
    struct vt_bytes zout;  /* chunk header room, then the frame so far */
    /* > 0: the chunk's first head_block record bytes (the process record)
     * end a zstd block of their own, so that a reader of the trace's head
     * decompresses that block, not the whole chunk. */
    size_t head_block;
};

/* Starts with a time unit of 1 ns; see vt_encoder_set_time_unit. */
void vt_encoder_init(struct vt_encoder *e);
/* Times passed from now on are rounded down to multiples of unit_ns (0 is
 * taken as 1). Set it before the first record: the unit goes into the
 * preamble and holds for the whole file. */
void vt_encoder_set_time_unit(struct vt_encoder *e, uint64_t unit_ns);
/* A MEM record that did not fail, following one such record whose time
 * was written as T, is written with time T again when its own time is
 * less than slack_ns after T (0: off). So in a dense run of events the
 * times move once per slack_ns instead of with every event - per-event
 * clock noise that no coder can compress (docs/internals/FORMAT.md, "Time slack") -
 * while a time is never more than slack_ns early, never late, and an
 * event further than slack_ns from its predecessor's written time, a
 * failed allocation, a range or mark and the first event after one keep
 * their own. Order in the file never changes. */
void vt_encoder_set_time_slack(struct vt_encoder *e, uint64_t slack_ns);
void vt_encoder_free(struct vt_encoder *e);
/* Appends one dt (in time units) to the chunk's dt column, as a timed
 * record does: for tests that make a timed record by hand. */
void vt_encoder_column_dt(struct vt_encoder *e, uint64_t dt);
/* Drops the buffered records and resets the delta state. */
void vt_encoder_begin_chunk(struct vt_encoder *e);
/* From now on the records are compressed into the chunk's frame with cctx
 * (from vt_chunk_cctx_new, kept by the caller) as they come, a piece of
 * VT_STREAM_PIECE bytes at a time, instead of all at vt_chunk_frame: the
 * encoder then holds a piece, not a whole chunk (1 MiB: 256 pages first
 * touched in every process that traces). The file is the same format;
 * vt_chunk_frame then needs this cctx, and a chunk whose framing failed
 * cannot be framed again. */
void vt_encoder_stream(struct vt_encoder *e, void *cctx);
#define VT_STREAM_PIECE (64u << 10)

/* The 16-byte preamble of a file whose times are in units of
 * time_unit_ns (the encoder's time_unit_ns). */
void vt_encode_preamble(uint8_t out[VT_PREAMBLE_SIZE], uint64_t time_unit_ns);

/* ---- one function per record type, fields as in trace_format.h ---- */

void vt_encode_process(struct vt_encoder *e, const struct vt_process_info *p);
void vt_encode_module(struct vt_encoder *e, uint64_t id, uint64_t load_bias,
                      uint64_t start, uint64_t end, const char *path,
                      const uint8_t *build_id, size_t build_id_len);
void vt_encode_module_unload(struct vt_encoder *e, uint64_t id);
void vt_encode_thread(struct vt_encoder *e, uint64_t id, uint64_t os_tid,
                      const char *name, size_t name_len);
void vt_encode_device(struct vt_encoder *e, uint64_t ordinal,
                      const uint8_t uuid[VT_UUID_SIZE], const char *name,
                      size_t name_len, uint64_t total_bytes);
void vt_encode_stack_node(struct vt_encoder *e, uint64_t parent, uint64_t ip);
void vt_encode_string(struct vt_encoder *e, const char *text, size_t len);
void vt_encode_api(struct vt_encoder *e, uint64_t id, const char *name);
void vt_encode_py_code(struct vt_encoder *e, uint64_t id, const char *qualname, size_t qualname_len,
                       const char *filename, size_t filename_len, uint64_t first_line);

/* A VT_REC_MEM record (trace_format.h), with file ids already resolved. */
void vt_encode_mem(struct vt_encoder *e, uint64_t time_ns, const struct vt_mem_record *m);

void vt_encode_range_push(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                          uint64_t domain, uint64_t name);
void vt_encode_range_pop(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                         uint64_t domain);
void vt_encode_range_start(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                           uint64_t range_id, uint64_t domain, uint64_t name);
void vt_encode_range_end(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                         uint64_t range_id);
void vt_encode_mark(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                    uint64_t domain, uint64_t name);
/* A VT_REC_PART record at time_ns, strings already interned. */
void vt_encode_part(struct vt_encoder *e, uint64_t time_ns, const struct vt_part_record *p);
void vt_encode_lost(struct vt_encoder *e, uint64_t count);
void vt_encode_trailer(struct vt_encoder *e, uint64_t time_ns, uint64_t events,
                       uint64_t chunks, uint64_t lost);

/* ---- chunk framing ---- */

/* Bytes of the chunk being built once decompressed: records, dt column,
 * footer (what a chunk size limit compares). */
static inline size_t vt_encoder_chunk_size(const struct vt_encoder *e)
{
    return e->streamed + e->raw.len + e->dts.len + VT_CHUNK_FOOTER_SIZE;
}

/* Compresses the encoder's chunk (records, dt column, footer) as one zstd
 * frame (content checksum on) behind a chunk header, into out (replacing
 * its contents). cctx is a ZSTD_CCtx* (void* here so that includers need
 * no zstd.h); NULL makes a temporary one. The encoder's records are left
 * as they were (the column is appended to raw for the call only). Returns
 * 0, or -1 if memory ran out or zstd failed. A streaming encoder
 * (vt_encoder_stream) ends its frame with its own cctx and hands out its
 * buffer, taking out's old one for the next chunk. */
int vt_chunk_frame(struct vt_encoder *e, void *cctx, struct vt_bytes *out);

/* zstd's level and match-finder tables for a chunk. Level 3's own tables
 * for a 1 MiB chunk (hash 2^17, chain 2^16 entries: 768 KiB) were 190 of
 * the page faults the tracer adds to a process; 2^14 each (128 KiB) cost
 * 0.2% in size on a repetitive trace and 2.8% on random addresses, and
 * compress 22-35% faster (bench/trace_recode hlog=, clog=;
 * docs/internals/PERFORMANCE.md, "Page faults"). */
#define VT_ZSTD_LEVEL 3
#define VT_ZSTD_HASH_LOG 14
#define VT_ZSTD_CHAIN_LOG 14
/* Matches reach back 64 KiB, not the whole 1 MiB chunk: zstd's streaming
 * keeps a window and a block (2 x 64 KiB) rather than the chunk, and its
 * block-sized buffers (literals, sequences) follow the window: 33 fewer
 * page faults than a 128 KiB window. In size (bench/trace_recode wlog=16
 * against wlog=17): see docs/internals/PERFORMANCE.md, "Page faults". */
#define VT_ZSTD_WINDOW_LOG 16
/* Matches of 6 bytes at least (level 3's own: 5): fewer, longer sequences,
 * which the analyzer's zstd decodes in fewer instructions (bench/synth_trace
 * 1M events: 181 -> 146 an event), for traces 0.6-1.3% bigger; the writer
 * thread's zstd does less too. 7: 130 an event, 5% bigger. Any zstd reads
 * either: the format does not change. docs/internals/PERFORMANCE.md, "One
 * trace on one core". */
#define VT_ZSTD_MIN_MATCH 6

/* A compression context set up the way vt_chunk_frame expects (the
 * settings above, checksum on); free with vt_chunk_cctx_free. NULL if out
 * of memory. */
void *vt_chunk_cctx_new(void);
void vt_chunk_cctx_free(void *cctx);

#endif
