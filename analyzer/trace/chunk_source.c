/* Reading and decompressing chunks, inline or ahead; see chunk_source.h. */
#define _GNU_SOURCE
#include "chunk_source.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "vramtrace/trace_format.h"

size_t vt_chunk_input_read(const struct vt_chunk_input *in, uint64_t off, void *buf, size_t n)
{
    if (off >= in->size)
        return 0;
    if (n > in->size - off)
        n = (size_t)(in->size - off);
    if (in->fd < 0) {
        memcpy(buf, in->mem + off, n);
        return n;
    }
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(in->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    return got;
}

/* ---- one chunk ---- */

/* Both return false: the chunk holds no data. */
static bool chunk_cut(struct vt_chunk *c, const char *why)
{
    c->kind = VT_CHUNK_CUT;
    c->cut_reason = why;
    return false;
}

static bool chunk_error(struct vt_chunk *c, uint64_t at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool chunk_error(struct vt_chunk *c, uint64_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
    c->kind = VT_CHUNK_ERROR;
    c->error_offset = at;
    return false;
}

static bool fit(uint8_t **buf, size_t *cap, size_t n)
{
    if (n <= *cap)
        return true;
    free(*buf);
    *buf = malloc(n);
    *cap = *buf ? n : 0;
    return *buf != NULL;
}

/* The end of the zstd block that starts at pos of a frame of size bytes
 * (RFC 8878: a 3-byte header, little-endian: last-block bit, 2 bits of
 * type, 21 of size; an RLE block holds one byte), or size where the frame
 * ends there or is not a block there (zstd then says what is wrong). */
static size_t block_end(const uint8_t *frame, size_t size, size_t pos)
{
    if (size - pos < 3)
        return size;
    uint32_t h = (uint32_t)frame[pos] | (uint32_t)frame[pos + 1] << 8 |
                 (uint32_t)frame[pos + 2] << 16;
    size_t len = (h >> 1 & 3) == 1 ? 1 : h >> 3;
    if ((h & 1) || len > size - pos - 3)
        return size; /* the last block: its checksum too */
    return pos + 3 + len;
}

/* The size of a zstd frame's header, magic number included (RFC 8878:
 * the descriptor byte says which fields follow), or size if it is not
 * there (zstd then says what is wrong). */
static size_t frame_header_end(const uint8_t *frame, size_t size)
{
    static const uint8_t dict_id[4] = {0, 1, 2, 4}, content_size[4] = {0, 2, 4, 8};
    if (size < 5)
        return size;
    uint8_t d = frame[4];
    bool single_segment = d >> 5 & 1;
    size_t n = 5 + !single_segment + dict_id[d & 3] +
               (d >> 6 == 0 ? single_segment : content_size[d >> 6]);
    return n < size ? n : size;
}

/* What a head read reads of the compressed chunk first: the frame's
 * header and the head's block (a few hundred bytes) in one read. */
#define VT_HEAD_READ_FIRST 4096

/* The compressed bytes of the chunk at off read up to n (at most csize) into
 * b->comp, of which *have are there; false: a read error. */
static bool comp_upto(const struct vt_chunk_input *in, uint64_t off, struct vt_chunk_buffers *b,
                      size_t *have, size_t n, size_t csize)
{
    if (n > csize)
        n = csize;
    if (n <= *have)
        return true;
    if (vt_chunk_input_read(in, off + VT_CHUNK_HEADER_SIZE + *have, b->comp + *have, n - *have) !=
        n - *have)
        return false;
    *have = n;
    return true;
}

/* Reads, checks and decompresses the chunk at off (< in->size) into b.
 * Returns true for data, false for a cut or an error (c says which). */
static bool fetch(const struct vt_chunk_input *in, ZSTD_DCtx *dctx, struct vt_chunk_buffers *b,
                  uint64_t off, size_t head, struct vt_chunk *c)
{
    c->offset = off;
    c->raw = NULL;
    c->raw_len = 0;
    c->head_only = false;
    uint8_t hdr[VT_CHUNK_HEADER_SIZE];
    size_t n = vt_chunk_input_read(in, off, hdr, sizeof hdr);
    uint8_t magic[4];
    vt_put_le32(magic, VT_CHUNK_MAGIC);
    if (memcmp(hdr, magic, n < 4 ? n : 4) != 0)
        return chunk_error(c, off, "bad chunk magic (corrupt file)");
    if (n < sizeof hdr)
        return chunk_cut(c, "chunk header cut short");
    uint32_t csize = vt_get_le32(hdr + 4);
    uint32_t rsize = vt_get_le32(hdr + 8);
    if (csize > VT_CHUNK_MAX_COMPRESSED)
        return chunk_error(c, off + 4, "chunk compressed size %" PRIu32 " exceeds the limit %u", csize,
                     VT_CHUNK_MAX_COMPRESSED);
    if (rsize > VT_CHUNK_MAX_RAW)
        return chunk_error(c, off + 8, "chunk raw size %" PRIu32 " exceeds the limit %u", rsize,
                     VT_CHUNK_MAX_RAW);
    if (csize == 0)
        return chunk_error(c, off + 4, "chunk with an empty zstd frame");
    if (csize > in->size - off - VT_CHUNK_HEADER_SIZE)
        return chunk_cut(c, "last chunk cut short");
    if (!fit(&b->comp, &b->comp_cap, csize))
        return chunk_error(c, off, "out of memory for a chunk of %" PRIu32 " bytes", csize);
    /* A head read reads what its blocks take (comp_upto), not the chunk */
    bool head_read = head && head < rsize;
    size_t have = 0;
    if (!comp_upto(in, off, b, &have, head_read ? VT_HEAD_READ_FIRST : csize, csize))
        return chunk_error(c, off, "read error");
    unsigned long long content = ZSTD_getFrameContentSize(b->comp, have);
    if (content == ZSTD_CONTENTSIZE_ERROR)
        return chunk_error(c, off, "corrupt chunk: not a zstd frame");
    if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != rsize)
        return chunk_error(c, off, "corrupt chunk: zstd frame holds %llu bytes, header says %" PRIu32,
                     content, rsize);
    if (head_read) {
        /* Only the chunk's first zstd blocks, up to the first that reaches
         * head bytes (a trace's head: what the process record says, which
         * the tracer ends a block with): the frame is fed a block at a time,
         * so that what follows the head stays compressed. */
        if (!fit(&b->raw, &b->raw_cap, rsize))
            return chunk_error(c, off, "out of memory for a chunk of %" PRIu32 " bytes", rsize);
        ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
        ZSTD_inBuffer zin = {b->comp, frame_header_end(b->comp, csize), 0};
        ZSTD_outBuffer zout = {b->raw, rsize, 0};
        size_t rc = 1;
        do {
            if (!comp_upto(in, off, b, &have, zin.size + 3, csize)) /* the block's header */
                return chunk_error(c, off, "read error");
            zin.size = block_end(b->comp, csize, zin.size);
            if (!comp_upto(in, off, b, &have, zin.size, csize))
                return chunk_error(c, off, "read error");
            do {
                rc = ZSTD_decompressStream(dctx, &zout, &zin);
                if (ZSTD_isError(rc))
                    return chunk_error(c, off, "corrupt chunk: zstd: %s", ZSTD_getErrorName(rc));
            } while (rc != 0 && zin.pos < zin.size);
        } while (zout.pos < head && rc != 0 && zin.size < csize);
        c->kind = VT_CHUNK_DATA;
        c->raw = b->raw;
        c->raw_len = zout.pos;
        c->head_only = rc != 0; /* the frame not all read */
        c->next_offset = off + VT_CHUNK_HEADER_SIZE + csize;
        return true;
    }
    if (!fit(&b->raw, &b->raw_cap, rsize))
        return chunk_error(c, off, "out of memory for a chunk of %" PRIu32 " bytes", rsize);
    size_t got = ZSTD_decompressDCtx(dctx, b->raw, rsize, b->comp, csize);
    if (ZSTD_isError(got))
        return chunk_error(c, off, "corrupt chunk: zstd: %s", ZSTD_getErrorName(got));
    if (got != rsize)
        return chunk_error(c, off, "corrupt chunk: decompressed to %zu bytes, header says %" PRIu32,
                     got, rsize);
    c->kind = VT_CHUNK_DATA;
    c->raw = b->raw;
    c->raw_len = rsize;
    c->next_offset = off + VT_CHUNK_HEADER_SIZE + csize;
    return true;
}

/* ---- reading ahead ---- */

struct vt_chunk_ahead {
    pthread_t thread;
    bool threadless;           /* no thread: helpers and the reader read ahead */
    pthread_mutex_t lock;
    pthread_cond_t cond;       /* any change of full, busy, stop or done */
    struct vt_chunk_input in;
    ZSTD_DCtx *dctx;
    struct vt_chunk_buffers bufs; /* the reading's; slot.raw points into bufs.raw */
    struct vt_chunk slot;      /* the next chunk, when full */
    uint64_t next;             /* the offset read next */
    bool full, stop, done;     /* done: the thread has returned */
    bool busy;                 /* a chunk is being read into the slot */
    bool ended;                /* a cut or an error ended the reading */
};

/* With a->lock held: reads the next chunk into the slot (the lock let go
 * meanwhile) if it is free and no one else reads it. False if there was
 * nothing to do. */
static bool ahead_step(struct vt_chunk_ahead *a)
{
    uint64_t off = a->next;
    if (a->full || a->busy || a->stop || a->ended || off >= a->in.size)
        return false; /* the reader stops at the end of the file without asking */
    a->busy = true;
    pthread_mutex_unlock(&a->lock);
    /* The slot is the reading's until it is marked full. */
    (void)fetch(&a->in, a->dctx, &a->bufs, off, 0, &a->slot);
    pthread_mutex_lock(&a->lock);
    a->busy = false;
    a->full = true;
    pthread_cond_broadcast(&a->cond);
    if (a->slot.kind != VT_CHUNK_DATA)
        a->ended = true; /* a cut or an error ends the reading */
    else
        a->next = a->slot.next_offset;
    return true;
}

static void *read_ahead_main(void *arg)
{
    struct vt_chunk_ahead *a = arg;
    pthread_mutex_lock(&a->lock);
    while (!a->stop && !a->ended && a->next < a->in.size)
        if (!ahead_step(a))
            pthread_cond_wait(&a->cond, &a->lock); /* till the slot is taken */
    a->done = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static void stop_ahead(struct vt_chunk_source *s)
{
    struct vt_chunk_ahead *a = s->ahead;
    if (!a)
        return;
    pthread_mutex_lock(&a->lock);
    a->stop = true;
    pthread_cond_broadcast(&a->cond);
    while (a->threadless && a->busy) /* a helper's chunk */
        pthread_cond_wait(&a->cond, &a->lock);
    pthread_mutex_unlock(&a->lock);
    if (!a->threadless)
        pthread_join(a->thread, NULL);
    pthread_cond_destroy(&a->cond);
    pthread_mutex_destroy(&a->lock);
    ZSTD_freeDCtx(a->dctx);
    free(a->bufs.comp);
    free(a->bufs.raw);
    free(a);
    s->ahead = NULL;
}

static bool start_ahead(struct vt_chunk_source *s, uint64_t next_offset, bool threadless)
{
    if (s->ahead)
        return true;
    struct vt_chunk_ahead *a = calloc(1, sizeof *a);
    if (!a)
        return false;
    a->in = s->in;
    a->next = next_offset;
    a->threadless = threadless;
    a->dctx = ZSTD_createDCtx();
    if (!a->dctx || pthread_mutex_init(&a->lock, NULL) != 0) {
        ZSTD_freeDCtx(a->dctx);
        free(a);
        return false;
    }
    if (pthread_cond_init(&a->cond, NULL) != 0) {
        pthread_mutex_destroy(&a->lock);
        ZSTD_freeDCtx(a->dctx);
        free(a);
        return false;
    }
    if (!threadless && pthread_create(&a->thread, NULL, read_ahead_main, a) != 0) {
        pthread_cond_destroy(&a->cond);
        pthread_mutex_destroy(&a->lock);
        ZSTD_freeDCtx(a->dctx);
        free(a);
        return false;
    }
    s->ahead = a;
    return true;
}

bool vt_chunk_source_read_ahead(struct vt_chunk_source *s, uint64_t next_offset)
{
    return start_ahead(s, next_offset, false);
}

bool vt_chunk_source_read_ahead_shared(struct vt_chunk_source *s, uint64_t next_offset)
{
    return start_ahead(s, next_offset, true);
}

bool vt_chunk_source_help(struct vt_chunk_source *s)
{
    struct vt_chunk_ahead *a = s->ahead;
    if (!a || !a->threadless)
        return false;
    pthread_mutex_lock(&a->lock);
    bool did = ahead_step(a);
    pthread_mutex_unlock(&a->lock);
    return did;
}

/* The chunk read ahead, if it is the one at offset: its raw buffer
 * becomes the caller's (the caller's previous one goes to the reading).
 * Threadless, the caller reads it itself if no helper has begun. */
static bool take_ahead(struct vt_chunk_source *s, uint64_t offset, struct vt_chunk *out)
{
    struct vt_chunk_ahead *a = s->ahead;
    pthread_mutex_lock(&a->lock);
    while (!a->full) {
        if (a->threadless) {
            if (ahead_step(a))
                continue; /* read here */
            if (!a->busy)
                break; /* the reading ended */
        } else if (a->done) {
            break;
        }
        pthread_cond_wait(&a->cond, &a->lock);
    }
    bool ok = a->full && a->slot.offset == offset;
    if (ok) {
        *out = a->slot;
        uint8_t *raw = a->bufs.raw;
        size_t raw_cap = a->bufs.raw_cap;
        a->bufs.raw = s->bufs.raw;
        a->bufs.raw_cap = s->bufs.raw_cap;
        s->bufs.raw = raw;
        s->bufs.raw_cap = raw_cap;
        a->full = false;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->lock);
    return ok;
}

/* ---- a thread's context for lean sources ---- */

/* A lean source (a group's traces read in turn) keeps no decompression
 * context or compressed bytes between its chunks; the thread that reads
 * them keeps one of each for every lean source it reads, rather than
 * making a context and a buffer a chunk: a job's thousands of ranks read on
 * a few threads. Freed when the thread ends (the main thread's at exit). */
struct lean_scratch {
    ZSTD_DCtx *dctx;
    uint8_t *comp;
    size_t comp_cap;
};

static pthread_key_t lean_key;
static bool lean_key_made;
static pthread_once_t lean_once = PTHREAD_ONCE_INIT;
static _Thread_local struct lean_scratch *lean_mine;

static void lean_scratch_free(void *p)
{
    struct lean_scratch *ls = p;
    ZSTD_freeDCtx(ls->dctx);
    free(ls->comp);
    free(ls);
}

static void lean_key_make(void)
{
    lean_key_made = pthread_key_create(&lean_key, lean_scratch_free) == 0;
}

/* This thread's, made at its first lean chunk; NULL if out of memory. */
static struct lean_scratch *lean_scratch(void)
{
    if (lean_mine)
        return lean_mine;
    pthread_once(&lean_once, lean_key_make);
    struct lean_scratch *ls = calloc(1, sizeof *ls);
    if (!lean_key_made || !ls || !(ls->dctx = ZSTD_createDCtx()) ||
        pthread_setspecific(lean_key, ls) != 0) {
        if (ls)
            ZSTD_freeDCtx(ls->dctx);
        free(ls);
        return NULL;
    }
    return lean_mine = ls;
}

/* ---- the source ---- */

bool vt_chunk_source_init(struct vt_chunk_source *s, int fd, const uint8_t *mem, uint64_t size)
{
    memset(s, 0, sizeof *s);
    s->in.fd = fd;
    s->in.mem = mem;
    s->in.size = size;
    return true; /* the decompression context is made at the first chunk */
}

void vt_chunk_source_release(struct vt_chunk_source *s)
{
    struct vt_chunk_input in = s->in;
    size_t head = s->head;
    bool lean = s->lean;
    vt_chunk_source_free(s);
    s->in = in;
    s->head = head;
    s->lean = lean;
}

void vt_chunk_source_free(struct vt_chunk_source *s)
{
    stop_ahead(s);
    ZSTD_freeDCtx(s->dctx);
    free(s->bufs.comp);
    free(s->bufs.raw);
    memset(s, 0, sizeof *s);
}

void vt_chunk_source_next(struct vt_chunk_source *s, uint64_t offset, struct vt_chunk *out)
{
    if (s->ahead) {
        if (take_ahead(s, offset, out))
            return;
        /* not the chunk asked for (never expected): inline from here */
        if (s->ahead->threadless) {
            /* kept till the source is freed: a helper may be looking */
            pthread_mutex_lock(&s->ahead->lock);
            s->ahead->stop = true;
            pthread_mutex_unlock(&s->ahead->lock);
        } else {
            stop_ahead(s);
        }
    }
    if (s->lean) {
        /* the thread's context and compressed bytes (a group of 64 traces
         * holding their own held 6 MiB of contexts) */
        struct lean_scratch *ls = lean_scratch();
        if (!ls) {
            (void)chunk_error(out, offset, "out of memory for a decompression context");
            out->offset = offset;
            return;
        }
        struct vt_chunk_buffers b = {ls->comp, s->bufs.raw, ls->comp_cap, s->bufs.raw_cap};
        (void)fetch(&s->in, ls->dctx, &b, offset, s->head, out);
        ls->comp = b.comp;
        ls->comp_cap = b.comp_cap;
        s->bufs.raw = b.raw;
        s->bufs.raw_cap = b.raw_cap;
        return;
    }
    if (!s->dctx && !(s->dctx = ZSTD_createDCtx())) {
        (void)chunk_error(out, offset, "out of memory for a decompression context");
        out->offset = offset;
        return;
    }
    (void)fetch(&s->in, s->dctx, &s->bufs, offset, s->head, out);
}
