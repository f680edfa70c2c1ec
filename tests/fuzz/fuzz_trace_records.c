/*
 * libFuzzer harness: the input is decompressed record data, which this
 * harness packs into trace files with valid zstd chunks, so that mutations
 * reach the record decoder and the replay (in fuzz_trace_file most of them
 * only break a zstd checksum). Layout of an input:
 *
 *   byte 0       report options: bits 0-2 top-1, bits 3-4 frames,
 *                bit 5 --phase, bit 6 --device 0, bit 7 --pid
 *   the rest     records; "VRAMTRC\n" starts another trace file (merged
 *                replay of several processes) of format version 2,
 *                "VRAMTRC3" one of version 3, "VRAMTRC4" one of version 4,
 *                "VRAMTRC5" one of version 5,
 *                "VTCK" another chunk
 *
 * A file is of version 2 (each record whole, its dt in place) unless the
 * separator before it says 3, 4 or 5 (the first file: if the records
 * start with "VRAMTRC3", "VRAMTRC4" or "VRAMTRC5"); a chunk of version 3
 * to 5 is taken as it is, its dt column and footer included (such a seed
 * is a decompressed chunk; version 4's memory records name sites, version
 * 5's frees carry their duration).
 *
 * Seeds: corpus/trace_records/ (real traces, unpacked by make_record_seed:
 * the version 1 traces of corpus/trace_file/ as version 2 files, *-v3 as
 * version 3, *-v4 as version 4, *-v5 as version 5).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "fuzz_trace.h"
#include "vramtrace/trace_format.h"

#define MAX_FILES 4
#define FILE_SEP "VRAMTRC" /* then '\n' (version 2), '3' to '5' (that version) */
#define FILE_SEP_LEN 8
#define CHUNK_SEP "VTCK"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct buf {
    uint8_t *p;
    size_t len, cap;
};

static void reserve(struct buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return;
    size_t cap = (b->len + more) * 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        abort();
    b->p = p;
    b->cap = cap;
}

static void append_chunk(struct buf *b, ZSTD_CCtx *cctx, const uint8_t *raw, size_t n)
{
    size_t bound = ZSTD_compressBound(n);
    reserve(b, VT_CHUNK_HEADER_SIZE + bound);
    uint8_t *hdr = b->p + b->len;
    size_t c = ZSTD_compress2(cctx, hdr + VT_CHUNK_HEADER_SIZE, bound, raw, n);
    if (ZSTD_isError(c))
        abort();
    vt_put_le32(hdr, VT_CHUNK_MAGIC);
    vt_put_le32(hdr + 4, (uint32_t)c);
    vt_put_le32(hdr + 8, (uint32_t)n);
    b->len += VT_CHUNK_HEADER_SIZE + c;
}

/* One trace file from records: preamble, then a chunk per piece between
 * CHUNK_SEPs (empty pieces make no chunk: the writer never writes one). */
static void build_file(struct buf *b, ZSTD_CCtx *cctx, const uint8_t *p, size_t n, int version)
{
    reserve(b, VT_PREAMBLE_SIZE);
    vt_preamble_fill(b->p, 1);
    b->p[8] = (uint8_t)version;
    b->p[9] = 0;
    b->len = VT_PREAMBLE_SIZE;
    const uint8_t *end = p + n;
    while (p < end) {
        const uint8_t *sep = memmem(p, (size_t)(end - p), CHUNK_SEP, strlen(CHUNK_SEP));
        const uint8_t *stop = sep ? sep : end;
        if (stop > p)
            append_chunk(b, cctx, p, (size_t)(stop - p));
        p = sep ? sep + strlen(CHUNK_SEP) : end;
    }
}

/* The next file separator in [p, end): "VRAMTRC\n" (version 2),
 * "VRAMTRC3" to "VRAMTRC5" (that version); NULL if none. */
static const uint8_t *next_sep(const uint8_t *p, const uint8_t *end, int *version)
{
    while (p < end) {
        const uint8_t *s = memmem(p, (size_t)(end - p), FILE_SEP, strlen(FILE_SEP));
        if (!s || end - s < FILE_SEP_LEN)
            return NULL;
        if (s[7] == '\n' || (s[7] >= '3' && s[7] <= '5')) {
            *version = s[7] == '\n' ? 2 : s[7] - '0';
            return s;
        }
        p = s + 1;
    }
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t o = data[0];
    struct vt_fuzz_options opt = {
        .top = 1u + (o & 7u),
        .frames = (o >> 3) & 3u,
        .phase_filter = (o & 0x20) != 0,
        .device_filter = (o & 0x40) != 0,
        .pid_filter = (o & 0x80) != 0,
    };
    static ZSTD_CCtx *cctx;
    if (!cctx) {
        cctx = ZSTD_createCCtx();
        if (!cctx)
            abort();
        /* As the recorder writes them: content size and checksum in each frame. */
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
        ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 1);
    }
    struct buf files[MAX_FILES] = {{0}};
    struct vt_fuzz_image images[MAX_FILES];
    size_t nfiles = 0;
    const uint8_t *p = data + 1, *end = data + size;
    int version = 2, next_version = 2;
    if (next_sep(p, end, &next_version) == p) { /* "VRAMTRC3" / "4" / "5" first */
        version = next_version;
        p += FILE_SEP_LEN;
    }
    while (nfiles < MAX_FILES) {
        const uint8_t *sep = next_sep(p, end, &next_version);
        const uint8_t *stop = sep && nfiles + 1 < MAX_FILES ? sep : end;
        build_file(&files[nfiles], cctx, p, (size_t)(stop - p), version);
        images[nfiles] = (struct vt_fuzz_image){files[nfiles].p, files[nfiles].len};
        nfiles++;
        if (stop == end)
            break;
        p = stop + FILE_SEP_LEN;
        version = next_version;
    }
    vt_fuzz_trace_images(images, nfiles, &opt);
    for (size_t i = 0; i < nfiles; i++)
        free(files[i].p);
    return 0;
}
