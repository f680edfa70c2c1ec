/*
 * The chunks of a trace file (include/vramtrace/trace_format.h): each
 * chunk's header read and checked, its zstd frame decompressed. The trace
 * reader (trace_reader.c) asks for them in file order and decodes their
 * records.
 *
 * Inline, a chunk is read and decompressed when it is asked for. With read
 * ahead (vt_chunk_source_read_ahead) a thread of its own reads and
 * decompresses the next chunk while the caller decodes the current one:
 * decompression is a third of the analyzer's work and chunks are
 * independent frames, so on two cores it leaves the decoder's path. The
 * answers are the same either way (the same code makes them, errors and
 * cuts included), and memory stays bounded: the thread works on one chunk
 * at most and then waits until it is taken. Shared read ahead
 * (vt_chunk_source_read_ahead_shared) is the same with no thread: the
 * next chunk is read by whichever thread has time first.
 */
#ifndef VRAMTRACE_ANALYZER_CHUNK_SOURCE_H
#define VRAMTRACE_ANALYZER_CHUNK_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the bytes come from: a file (fd) or a buffer (mem), of size bytes. */
struct vt_chunk_input {
    int fd;               /* -1 for a buffer */
    const uint8_t *mem;
    uint64_t size;
};

enum vt_chunk_kind {
    VT_CHUNK_DATA,        /* raw[0..raw_len) holds the chunk's records */
    VT_CHUNK_CUT,         /* the file stops inside this chunk: why */
    VT_CHUNK_ERROR,       /* corrupt (or out of memory): why, at error_offset */
};

struct vt_chunk {
    enum vt_chunk_kind kind;
    uint64_t offset;       /* of the chunk header */
    uint64_t next_offset;  /* DATA: where the next chunk starts */
    const uint8_t *raw;    /* DATA: valid until the next vt_chunk_source_next */
    size_t raw_len;
    bool head_only;        /* DATA: raw holds the chunk's first raw_len bytes
                            * only (a head read), not its end: no footer */
    const char *cut_reason; /* CUT: why the file stops here (a constant) */
    uint64_t error_offset; /* ERROR: the byte the message names */
    char why[384];         /* ERROR: the reason, for a message */
};

/* Buffers reused from chunk to chunk (grown to the largest chunk). */
struct vt_chunk_buffers {
    uint8_t *comp, *raw;
    size_t comp_cap, raw_cap;
};

struct vt_chunk_ahead;

struct vt_chunk_source {
    struct vt_chunk_input in;
    void *dctx;                   /* ZSTD_DCtx of the inline path (made when first needed) */
    size_t head;                  /* > 0: decompress each chunk only in whole zstd blocks
                                   * up to the first that reaches head bytes */
    bool lean;                    /* no context or compressed bytes of its own: the calling
                                   * thread's, kept for every lean source it reads */
    struct vt_chunk_buffers bufs;
    struct vt_chunk_ahead *ahead; /* NULL: inline */
};

/* Returns false when out of memory. */
bool vt_chunk_source_init(struct vt_chunk_source *s, int fd, const uint8_t *mem, uint64_t size);
/* Stops the read-ahead thread, if any, and frees everything (not the fd). */
void vt_chunk_source_free(struct vt_chunk_source *s);

/* Frees the buffers and the decompression context (a source that has
 * delivered its last chunk); it can still be freed or read again. */
void vt_chunk_source_release(struct vt_chunk_source *s);

/* Up to n bytes at off; returns how many the input has there. */
size_t vt_chunk_input_read(const struct vt_chunk_input *in, uint64_t off, void *buf, size_t n);

/* Starts reading ahead from next_offset, the offset the next call of
 * vt_chunk_source_next will ask for. False (and it stays inline) if the
 * thread could not be made. */
bool vt_chunk_source_read_ahead(struct vt_chunk_source *s, uint64_t next_offset);

/* Reads ahead with no thread of its own: the next chunk is read and
 * decompressed by the first caller of vt_chunk_source_help, from any
 * thread, or else by vt_chunk_source_next when it is asked for. For a
 * reader whose threads have time to spare now and then
 * (analyzer/trace/decode_ahead.h): no third thread competes for two
 * cores. */
bool vt_chunk_source_read_ahead_shared(struct vt_chunk_source *s, uint64_t next_offset);
/* Threadless reading ahead: reads the next chunk now (on the calling
 * thread) if it waits to be read and no one else does; safe beside the
 * thread that calls vt_chunk_source_next. True if it read a chunk, false
 * at once if there was nothing to do. */
bool vt_chunk_source_help(struct vt_chunk_source *s);

/* The chunk at offset (< the input's size): the one after the previous
 * DATA chunk, or the first. */
void vt_chunk_source_next(struct vt_chunk_source *s, uint64_t offset, struct vt_chunk *out);

#endif
