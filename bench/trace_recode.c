/*
 * Where a trace's bytes go: reads a vramtrace trace and re-encodes its
 * memory events and stack nodes with the real encoder, under variants of
 * chunking, time unit, fields and zstd level, and prints one line per
 * variant: "label bytes events". Used by scripts/bench.sh (trace size) to
 * tell which change to the writer or the format would pay. Give it a trace
 * recorded with VRAMTRACE_TIME_UNIT_NS=1: a coarser unit cannot be undone.
 *
 *   trace_recode TRACE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "trace_encoder.h"
#include "trace_reader.h"

struct variant {
    const char *label;
    size_t chunk_raw;     /* close a chunk at this many bytes of records */
    int level;            /* zstd level */
    uint64_t time_unit;   /* encoder's time unit, ns */
    int drop;             /* 1: times zero, 2: also addresses zero */
};

#define VARIANTS(X)                                                         \
    X("1MiB-chunks,zstd3,unit-1ns", 1u << 20, 3, 1, 0)                        \
    X("1MiB-chunks,zstd3,unit-1us(default)", 1u << 20, 3, 1000, 0)            \
    X("8MiB-chunks,zstd3,unit-1us", 8u << 20, 3, 1000, 0)                     \
    X("1MiB-chunks,zstd9,unit-1us", 1u << 20, 9, 1000, 0)                     \
    X("1MiB-chunks,zstd3,unit-10us", 1u << 20, 3, 10000, 0)                   \
    X("1MiB-chunks,zstd3,unit-1ms", 1u << 20, 3, 1000000, 0)                  \
    X("1MiB-chunks,zstd3,unit-10ms(heaptrack's)", 1u << 20, 3, 10000000, 0)   \
    X("1MiB-chunks,no-time", 1u << 20, 3, 1, 1)                               \
    X("1MiB-chunks,no-time,no-address", 1u << 20, 3, 1, 2)

static const struct variant variants[] = {
#define VARIANT_ROW(l, c, z, t, d) {l, c, z, t, d},
    VARIANTS(VARIANT_ROW)
#undef VARIANT_ROW
};

struct sink {
    struct vt_encoder enc;
    struct vt_bytes frame;
    ZSTD_CCtx *cctx;
    size_t bytes;
};

static void flush(struct sink *s)
{
    if (s->enc.raw.len == 0)
        return;
    if (vt_chunk_frame(&s->enc, s->cctx, &s->frame) != 0) {
        fprintf(stderr, "trace_recode: compression failed\n");
        exit(1);
    }
    s->bytes += s->frame.len;
    vt_encoder_begin_chunk(&s->enc);
}

/* Re-encodes the file under one variant; returns bytes, sets *events. */
static size_t recode(const char *path, const struct variant *v, uint64_t *events)
{
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open(path, &r, &err) != 0) {
        fprintf(stderr, "%s\n", err.message);
        exit(2);
    }
    struct sink s = {.bytes = VT_PREAMBLE_SIZE};
    vt_encoder_init(&s.enc);
    vt_encoder_set_time_unit(&s.enc, v->time_unit);
    s.cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_compressionLevel, v->level);
    ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_checksumFlag, 1);
    struct vt_record rec;
    int rc;
    *events = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        if (rec.type == VT_REC_STACK_NODE) {
            vt_encode_stack_node(&s.enc, rec.u.stack_node.parent, rec.u.stack_node.ip);
        } else if (rec.type == VT_REC_MEM) {
            struct vt_mem_record m = {
                .op = rec.u.mem.op, .kind = rec.u.mem.kind, .api = rec.u.mem.api,
                .label = rec.u.mem.label, .thread = rec.u.mem.thread,
                .time_ns = v->drop ? 0 : rec.time_ns,
                .device = rec.u.mem.device, .addr = v->drop == 2 ? 0 : rec.u.mem.addr,
                .size = rec.u.mem.size, .stack = rec.u.mem.stack,
                .result = rec.u.mem.result, .aux = rec.u.mem.aux,
                .free_bytes = rec.u.mem.free_bytes, .total_bytes = rec.u.mem.total_bytes,
            };
            vt_encode_mem(&s.enc, &m);
            (*events)++;
        }
        if (s.enc.raw.len >= v->chunk_raw)
            flush(&s);
    }
    if (rc < 0) {
        fprintf(stderr, "%s\n", vt_reader_error(r)->message);
        exit(2);
    }
    flush(&s);
    vt_reader_close(r);
    vt_encoder_free(&s.enc);
    vt_bytes_free(&s.frame);
    ZSTD_freeCCtx(s.cctx);
    return s.bytes;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s TRACE\n", argv[0]);
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    uint64_t events = 0;
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        size_t bytes = recode(argv[1], &variants[i], &events);
        if (i == 0)
            printf("as-written-by-the-tracer %lld %llu\n", (long long)st.st_size,
                   (unsigned long long)events);
        printf("%s %zu %llu\n", variants[i].label, bytes, (unsigned long long)events);
    }
    return 0;
}
