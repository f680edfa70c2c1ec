/*
 * Where a trace's bytes go: reads a vramtrace trace and re-encodes its
 * memory events and stack nodes under variants of chunking, time unit,
 * fields, zstd settings and record layout, and prints one line per
 * variant: "label bytes events compress_ns_per_event". Used by
 * scripts/bench.sh (trace size) to tell which change to the writer or the
 * format would pay. Give it a trace recorded with VRAMTRACE_TIME_UNIT_NS=1:
 * a coarser unit cannot be undone.
 *
 *   trace_recode TRACE                 the default list of variants
 *   trace_recode TRACE SPEC...         the variants given, e.g.
 *       chunk=4M,level=5  level=3,ldm=1,wlog=24  dict=zdict:65536  layout=split
 *
 * SPEC keys (comma-separated; the defaults are the tracer's own settings):
 *   chunk=N[K|M]  close a chunk at this many bytes of records (1M)
 *   level=L       zstd level (3)
 *   strategy=S    zstd strategy 1..9 (fast .. btultra2; 0: the level's)
 *   ldm=1         long-distance matching
 *   hlog=H clog=C zstd hash and chain table logs (14, 14; 0: the level's)
 *   mml=M         zstd minimum match (6, the tracer's; 0: the level's)
 *   wlog=W        window log (16, the tracer's; 0: the level's; a frame
 *                 never needs more than its content, so above log2(chunk)
 *                 it changes nothing)
 *   unit=NS       time unit (1000)
 *   drop=1|2      1: times zero; 2: also addresses zero
 *   coalesce=US   an event less than US microseconds after the last time
 *                 written is given that time (every time within US of the
 *                 truth; events further apart keep theirs exactly)
 *   interval=MS   also close a chunk when its events span MS milliseconds
 *                 (the tracer's flush interval, 100; 0: by size only)
 *   prefix=1      every chunk its own frame, compressed with the previous
 *                 chunk's decompressed bytes as its prefix (zstd
 *                 refPrefix: a reader has them, having read that chunk)
 *   stream=N[K|M] one zstd stream across chunks: each chunk (records,
 *                 dt column, footer, and a 12-byte header of its own)
 *                 ends with ZSTD_e_flush, so a reader decodes every
 *                 chunk written before a crash; the frame ends (and the
 *                 window starts afresh) every N raw bytes (stream=1: at
 *                 every chunk, as the format does now)
 *   dict=raw:N    every chunk after the first compressed with the last N
 *                 bytes of the first chunk's records as a raw-content
 *                 dictionary (a reader has them once it has read chunk 0:
 *                 no bytes stored)
 *   dict=zdict:N  a dictionary of N bytes trained (ZDICT) on the first
 *                 chunk, stored in the trace (its zstd-compressed size is
 *                 counted), used for every later chunk
 *   layout=L      the MEM record's layout (format ideas; not readable by
 *                 any reader, only measured; none given: the format as it
 *                 is, version 4 - site ids, the dt column run-length
 *                 coded, trace_encoder.c):
 *                   v2     format version 2: the dt field in its record
 *                          (plus version 3's 4-byte footer a chunk)
 *                   split  the dt field in the chunk's dt column as
 *                          plain varints (what format version 3 is, plus
 *                          the closing count of version 4's run-length
 *                          column: a byte a chunk; the other layouts keep
 *                          the dt in the record unless given with split)
 *                   serial a FREE whose address an earlier ALLOC gave names
 *                          that ALLOC by how many allocs ago it was
 *                          (uv age+1; 0: address follows as da)
 *                   site   allocation-site ids: (op, kind, api, label,
 *                          thread, device, stack, result, aux) -> id,
 *                          defined inline at first use; the record is
 *                          type, site, zigzag size delta to the site's
 *                          last size, dt, da (the measurement that led to
 *                          format version 4, which defines sites in SITE
 *                          records and restarts size deltas every chunk)
 *                   site+serial, split+serial, site+split+serial
 * Every variant keeps every chunk one independent zstd frame with fresh
 * deltas (ids, the site table and the dictionary are file-wide, as the
 * format's ids already are).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zdict.h>
#include <zstd.h>

#include "trace_encoder.h"
#include "trace_reader.h"

enum { L_SPLIT = 1, L_SERIAL = 2, L_SITE = 4, L_V2 = 8 };

struct variant {
    char label[200];
    size_t chunk_raw;
    int level, strategy, ldm, wlog, hlog, clog, mml;
    uint64_t time_unit;
    int drop;
    int dict;        /* 0 none, 1 raw, 2 zdict */
    size_t dict_size;
    int layout;      /* L_* bits */
    uint64_t coalesce_ns; /* an event less than this after the last time
                             written takes that time (error < this) */
    uint64_t interval_ns; /* close a chunk when its events span this long */
    int prefix;      /* each chunk a frame, the previous chunk its prefix */
    size_t stream;   /* 0: a frame a chunk; else one zstd stream flushed
                        at every chunk's end, a new frame every N raw bytes */
};

static const char *default_specs[] = {
    "unit=1",
    "unit=1000",
    "level=1",
    "level=5",
    "level=7",
    "level=9",
    "level=3,ldm=1",
    "chunk=4M",
    "chunk=16M",
    "chunk=64K",
    "chunk=64K,dict=raw:112K",
    "dict=raw:112K",
    "layout=v2",
    "layout=split",
    "layout=serial",
    "layout=site",
    "layout=site+split+serial",
    "layout=site+split+serial,level=9",
    "unit=10000",
    "unit=1000000",
    "unit=10000000",
    "drop=1",
    "drop=2",
};

static size_t parse_size(const char *s)
{
    char *end;
    size_t v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return v;
}

static void parse_spec(const char *spec, struct variant *v)
{
    *v = (struct variant){.chunk_raw = 1u << 20, .level = VT_ZSTD_LEVEL,
                          .hlog = VT_ZSTD_HASH_LOG, .clog = VT_ZSTD_CHAIN_LOG,
                          .wlog = VT_ZSTD_WINDOW_LOG, .mml = VT_ZSTD_MIN_MATCH,
                          .time_unit = 1000};
    snprintf(v->label, sizeof v->label, "%s", spec);
    char buf[400];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *val = strchr(kv, '=');
        if (!val) {
            fprintf(stderr, "trace_recode: bad spec item '%s'\n", kv);
            exit(2);
        }
        *val++ = 0;
        if (!strcmp(kv, "chunk"))
            v->chunk_raw = parse_size(val);
        else if (!strcmp(kv, "level"))
            v->level = atoi(val);
        else if (!strcmp(kv, "strategy"))
            v->strategy = atoi(val);
        else if (!strcmp(kv, "ldm"))
            v->ldm = atoi(val);
        else if (!strcmp(kv, "wlog"))
            v->wlog = atoi(val);
        else if (!strcmp(kv, "mml"))
            v->mml = atoi(val);
        else if (!strcmp(kv, "hlog"))
            v->hlog = atoi(val);
        else if (!strcmp(kv, "clog"))
            v->clog = atoi(val);
        else if (!strcmp(kv, "unit"))
            v->time_unit = strtoull(val, NULL, 10);
        else if (!strcmp(kv, "coalesce"))
            v->coalesce_ns = strtoull(val, NULL, 10) * 1000ull;
        else if (!strcmp(kv, "interval"))
            v->interval_ns = strtoull(val, NULL, 10) * 1000000ull;
        else if (!strcmp(kv, "prefix"))
            v->prefix = atoi(val);
        else if (!strcmp(kv, "stream"))
            v->stream = parse_size(val);
        else if (!strcmp(kv, "drop"))
            v->drop = atoi(val);
        else if (!strncmp(val, "raw:", 4) && !strcmp(kv, "dict"))
            v->dict = 1, v->dict_size = parse_size(val + 4);
        else if (!strncmp(val, "zdict:", 6) && !strcmp(kv, "dict"))
            v->dict = 2, v->dict_size = parse_size(val + 6);
        else if (!strcmp(kv, "layout")) {
            v->layout = (strstr(val, "split") ? L_SPLIT : 0) | (strstr(val, "serial") ? L_SERIAL : 0) |
                        (strstr(val, "site") ? L_SITE : 0) | (strstr(val, "v2") ? L_V2 : 0);
        } else {
            fprintf(stderr, "trace_recode: unknown key '%s'\n", kv);
            exit(2);
        }
    }
}

/* ---- a small open-addressing map u64 key -> u64 value ---- */
struct map {
    uint64_t *keys, *vals; /* key 0 = empty: callers add 1 to keys */
    size_t cap, n;
};
static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}
static uint64_t *map_slot(struct map *m, uint64_t key, int *found)
{
    if (2 * (m->n + 1) > m->cap) {
        struct map o = *m;
        m->cap = o.cap ? 2 * o.cap : 1024;
        m->keys = calloc(m->cap, 8);
        m->vals = calloc(m->cap, 8);
        m->n = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.keys[i]) {
                int f;
                *map_slot(m, o.keys[i], &f) = o.vals[i];
            }
        free(o.keys);
        free(o.vals);
    }
    size_t i = mix(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    *found = m->keys[i] == key;
    if (!*found) {
        m->keys[i] = key;
        m->n++;
    }
    return &m->vals[i];
}
static void map_del(struct map *m, uint64_t key)
{ /* backward-shift deletion */
    size_t i = mix(key) & (m->cap - 1);
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->keys[i])
        return;
    size_t j = i;
    for (;;) {
        m->keys[i] = 0;
        for (;;) {
            j = (j + 1) & (m->cap - 1);
            if (!m->keys[j]) {
                m->n--;
                return;
            }
            size_t h = mix(m->keys[j]) & (m->cap - 1);
            if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
                continue;
            break;
        }
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        i = j;
    }
}

struct sink {
    const struct variant *v;
    struct vt_encoder enc;
    struct vt_bytes frame;
    ZSTD_CCtx *cctx;
    ZSTD_CDict *cdict;
    size_t bytes, chunks;
    size_t stream_raw; /* stream=N: raw bytes fed to the current frame */
    struct vt_bytes prev; /* prefix=1: the previous chunk, decompressed */
    double compress_ns;
    /* layouts */
    struct map live;  /* addr+1 -> alloc serial */
    uint64_t allocs;
    struct map sites; /* hash of the site tuple -> (site id, last size) index */
    uint64_t nsites, *site_size;
    size_t site_cap;
};

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void put_uv(struct vt_bytes *b, uint64_t v)
{
    if (vt_bytes_reserve(b, VT_UVARINT_MAX))
        b->len += vt_put_uvarint(b->data + b->len, v);
}

static void make_dict(struct sink *s)
{
    const struct variant *v = s->v;
    const uint8_t *raw = s->enc.raw.data;
    size_t len = s->enc.raw.len;
    if (v->dict == 1) {
        size_t n = len < v->dict_size ? len : v->dict_size;
        s->cdict = ZSTD_createCDict(raw + len - n, n, v->level);
        return;
    }
    /* ZDICT: samples are 4 KiB slices of the first chunk */
    size_t ns = len / 4096;
    if (ns < 8)
        return;
    size_t *sizes = malloc(ns * sizeof *sizes);
    for (size_t i = 0; i < ns; i++)
        sizes[i] = 4096;
    void *dict = malloc(v->dict_size);
    size_t dn = ZDICT_trainFromBuffer(dict, v->dict_size, raw, sizes, (unsigned)ns);
    free(sizes);
    if (ZDICT_isError(dn)) {
        fprintf(stderr, "trace_recode: ZDICT: %s\n", ZDICT_getErrorName(dn));
        free(dict);
        return;
    }
    /* stored in the trace, compressed */
    size_t bound = ZSTD_compressBound(dn);
    void *tmp = malloc(bound);
    size_t cn = ZSTD_compress(tmp, bound, dict, dn, 19);
    s->bytes += VT_CHUNK_HEADER_SIZE + cn;
    free(tmp);
    s->cdict = ZSTD_createCDict(dict, dn, v->level);
    free(dict);
}

/* The chunk's decompressed bytes as vt_chunk_frame assembles them (records,
 * dt column with its closing count, footer), after hdr zero bytes. */
static void assemble(struct vt_encoder *e, struct vt_bytes *in, size_t hdr)
{
    size_t records = e->raw.len;
    in->len = 0;
    vt_bytes_reserve(in, hdr + records + e->dts.len + VT_UVARINT_MAX + VT_CHUNK_FOOTER_SIZE);
    memset(in->data, 0, hdr);
    memcpy(in->data + hdr, e->raw.data, records);
    if (e->dts.len)
        memcpy(in->data + hdr + records, e->dts.data, e->dts.len);
    size_t col = e->dts.len + vt_put_uvarint(in->data + hdr + records + e->dts.len, e->dt_zeros);
    vt_put_le32(in->data + hdr + records + col, (uint32_t)records);
    in->len = hdr + records + col + VT_CHUNK_FOOTER_SIZE;
}

/* prefix=1: one frame a chunk, the previous chunk's bytes its prefix */
static void flush_prefix(struct sink *s)
{
    double t0 = now_ns();
    struct vt_bytes in = {0};
    assemble(&s->enc, &in, 0);
    size_t bound = ZSTD_compressBound(in.len);
    vt_bytes_reserve(&s->frame, bound);
    ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
    if (s->prev.len)
        ZSTD_CCtx_refPrefix(s->cctx, s->prev.data, s->prev.len);
    size_t n = ZSTD_compress2(s->cctx, s->frame.data, bound, in.data, in.len);
    if (ZSTD_isError(n)) {
        fprintf(stderr, "trace_recode: %s\n", ZSTD_getErrorName(n));
        exit(1);
    }
    s->compress_ns += now_ns() - t0;
    s->bytes += VT_CHUNK_HEADER_SIZE + n;
    vt_bytes_free(&s->prev);
    s->prev = in;
    s->chunks++;
    vt_encoder_begin_chunk(&s->enc);
}

/* stream=N: the chunk assembled as vt_chunk_frame does, behind a 12-byte
 * header, fed to one continuing zstd stream and flushed */
static void flush_stream(struct sink *s)
{
    struct vt_encoder *e = &s->enc;
    double t0 = now_ns();
    struct vt_bytes in = {0};
    assemble(e, &in, 12);
    s->stream_raw += in.len;
    ZSTD_EndDirective mode = s->stream_raw >= s->v->stream ? ZSTD_e_end : ZSTD_e_flush;
    if (mode == ZSTD_e_end)
        s->stream_raw = 0;
    ZSTD_inBuffer ib = {in.data, in.len, 0};
    size_t cap = ZSTD_compressBound(in.len) + 64;
    vt_bytes_reserve(&s->frame, cap);
    for (;;) {
        ZSTD_outBuffer ob = {s->frame.data, cap, 0};
        size_t left = ZSTD_compressStream2(s->cctx, &ob, &ib, mode);
        if (ZSTD_isError(left)) {
            fprintf(stderr, "trace_recode: %s\n", ZSTD_getErrorName(left));
            exit(1);
        }
        s->bytes += ob.pos;
        if (left == 0)
            break;
    }
    vt_bytes_free(&in);
    s->compress_ns += now_ns() - t0;
    s->chunks++;
    vt_encoder_begin_chunk(e);
}

static void flush(struct sink *s)
{
    if (s->enc.raw.len == 0)
        return;
    if (s->v->stream) {
        flush_stream(s);
        return;
    }
    if (s->v->prefix) {
        flush_prefix(s);
        return;
    }
    double t0 = now_ns();
    ZSTD_CCtx_reset(s->cctx, ZSTD_reset_session_only);
    ZSTD_CCtx_refCDict(s->cctx, s->chunks > 0 ? s->cdict : NULL);
    if (s->chunks > 0 && s->cdict) /* refCDict replaces the level */
        ZSTD_CCtx_setParameter(s->cctx, ZSTD_c_compressionLevel, s->v->level);
    if (vt_chunk_frame(&s->enc, s->cctx, &s->frame) != 0) {
        fprintf(stderr, "trace_recode: compression failed\n");
        exit(1);
    }
    s->compress_ns += now_ns() - t0;
    s->bytes += s->frame.len;
    if (s->chunks == 0 && s->v->dict)
        make_dict(s);
    s->chunks++;
    vt_encoder_begin_chunk(&s->enc);
}

/* The MEM record in one of the measured layouts (not the format). */
static void encode_mem_layout(struct sink *s, uint64_t time_ns, const struct vt_mem_record *m)
{
    struct vt_encoder *e = &s->enc;
    struct vt_bytes *b = &e->raw;
    int lay = s->v->layout;
    if (!vt_bytes_reserve(b, 16 * VT_UVARINT_MAX))
        return;
    b->data[b->len++] = VT_REC_MEM;
    e->records++;
    if (lay & L_SITE) {
        uint64_t h = mix(m->op ^ (uint64_t)m->kind << 8 ^ m->api << 16 ^ m->label << 28 ^
                         mix(m->thread ^ (uint64_t)(m->device + 1) << 20 ^ mix(m->stack) ^
                             mix(m->result ^ mix(m->aux)))) | 1;
        int found;
        uint64_t *slot = map_slot(&s->sites, h, &found);
        if (!found) {
            *slot = ++s->nsites;
            if (s->nsites >= s->site_cap) {
                s->site_cap = s->site_cap ? 2 * s->site_cap : 1024;
                s->site_size = realloc(s->site_size, s->site_cap * 8);
            }
            s->site_size[s->nsites] = 0;
            put_uv(b, 0); /* a new site, defined here */
            b->data[b->len++] = m->op;
            b->data[b->len++] = m->kind;
            put_uv(b, m->api);
            put_uv(b, m->label);
            put_uv(b, m->thread);
            put_uv(b, m->device < 0 ? 0 : (uint64_t)m->device + 1);
            put_uv(b, m->stack);
            put_uv(b, m->result);
            put_uv(b, m->aux);
        } else {
            put_uv(b, *slot);
        }
        uint64_t id = *slot;
        put_uv(b, vt_zigzag((int64_t)(m->size - s->site_size[id])));
        s->site_size[id] = m->size;
    } else {
        b->data[b->len++] = m->op;
        b->data[b->len++] = m->kind;
        put_uv(b, m->api);
        put_uv(b, m->label);
        put_uv(b, m->thread);
    }
    /* time */
    uint64_t t = time_ns / s->v->time_unit, dt;
    if (!e->have_time) {
        e->have_time = true;
        dt = t;
    } else {
        dt = t < e->delta.last_time ? 0 : t - e->delta.last_time;
    }
    if (t > e->delta.last_time || dt == t)
        e->delta.last_time = t;
    put_uv(lay & L_SPLIT ? &e->dts : b, dt); /* the column: vt_chunk_frame writes it */
    if (!(lay & L_SITE))
        put_uv(b, m->device < 0 ? 0 : (uint64_t)m->device + 1);
    /* address */
    int coded = 0;
    if (lay & L_SERIAL) {
        int found;
        if (m->op == VT_OP_ALLOC && m->result == 0) {
            *map_slot(&s->live, m->addr + 1, &found) = ++s->allocs;
        } else if (m->op == VT_OP_FREE) {
            uint64_t *slot = map_slot(&s->live, m->addr + 1, &found);
            if (found) {
                put_uv(b, s->allocs - *slot + 1);
                coded = 1;
                e->delta.last_addr = m->addr; /* the reader knows it */
            }
            map_del(&s->live, m->addr + 1);
            if (!coded)
                put_uv(b, 0);
        }
    }
    if (!coded) {
        put_uv(b, vt_zigzag((int64_t)(m->addr - e->delta.last_addr)));
        e->delta.last_addr = m->addr;
    }
    if (!(lay & L_SITE)) {
        put_uv(b, m->size);
        put_uv(b, m->stack);
        put_uv(b, m->result);
        put_uv(b, m->aux);
    }
    if (m->op == VT_OP_ALLOC && m->result != 0) {
        put_uv(b, m->free_bytes);
        put_uv(b, m->total_bytes);
    }
}

/* Re-encodes the file under one variant; returns bytes, sets *events. */
static size_t recode(const char *path, const struct variant *v, uint64_t *events, double *cns)
{
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open(path, &r, &err) != 0) {
        fprintf(stderr, "%s\n", err.message);
        exit(2);
    }
    struct sink s = {.v = v, .bytes = VT_PREAMBLE_SIZE};
    vt_encoder_init(&s.enc);
    vt_encoder_set_time_unit(&s.enc, v->time_unit);
    s.cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_compressionLevel, v->level);
    ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_contentSizeFlag, 1);
    if (v->strategy)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_strategy, v->strategy);
    if (v->ldm)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_enableLongDistanceMatching, 1);
    if (v->wlog)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_windowLog, v->wlog);
    if (v->mml)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_minMatch, v->mml);
    if (v->hlog)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_hashLog, v->hlog);
    if (v->clog)
        ZSTD_CCtx_setParameter(s.cctx, ZSTD_c_chainLog, v->clog);
    struct vt_record rec;
    int rc;
    uint64_t chunk_start = 0, anchor = 0;
    *events = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        if (rec.type == VT_REC_STACK_NODE) {
            vt_encode_stack_node(&s.enc, rec.u.stack_node.parent, rec.u.stack_node.ip);
        } else if (rec.type == VT_REC_MEM) {
            struct vt_mem_record m = {
                .op = rec.u.mem.op, .kind = rec.u.mem.kind, .api = rec.u.mem.api,
                .label = rec.u.mem.label, .thread = rec.u.mem.thread,
                .device = rec.u.mem.device, .addr = v->drop == 2 ? 0 : rec.u.mem.addr,
                .size = rec.u.mem.size, .stack = rec.u.mem.stack,
                .result = rec.u.mem.result, .aux = rec.u.mem.aux,
                .free_bytes = rec.u.mem.free_bytes, .total_bytes = rec.u.mem.total_bytes,
            };
            uint64_t time_ns = v->drop ? 0 : rec.time_ns;
            if (v->coalesce_ns) {
                if (anchor && time_ns >= anchor && time_ns - anchor < v->coalesce_ns)
                    time_ns = anchor;
                else
                    anchor = time_ns;
            }
            if (v->layout)
                encode_mem_layout(&s, time_ns, &m);
            else
                vt_encode_mem(&s.enc, time_ns, &m);
            (*events)++;
        }
        bool late = false;
        if (v->interval_ns && rec.type == VT_REC_MEM) {
            if (chunk_start == 0)
                chunk_start = rec.time_ns;
            late = rec.time_ns - chunk_start >= v->interval_ns;
        }
        if (vt_encoder_chunk_size(&s.enc) >= v->chunk_raw || late) {
            flush(&s);
            chunk_start = 0;
        }
    }
    if (rc < 0) {
        fprintf(stderr, "%s\n", vt_reader_error(r)->message);
        exit(2);
    }
    flush(&s);
    vt_reader_close(r);
    vt_encoder_free(&s.enc);
    vt_bytes_free(&s.frame);
    vt_bytes_free(&s.prev);
    ZSTD_freeCCtx(s.cctx);
    ZSTD_freeCDict(s.cdict);
    free(s.live.keys);
    free(s.live.vals);
    free(s.sites.keys);
    free(s.sites.vals);
    free(s.site_size);
    *cns = *events ? s.compress_ns / (double)*events : 0;
    return s.bytes;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s TRACE [SPEC...]\n", argv[0]);
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 2;
    }
    const char **specs = argc > 2 ? (const char **)argv + 2 : default_specs;
    size_t nspecs = argc > 2 ? (size_t)argc - 2 : sizeof default_specs / sizeof *default_specs;
    uint64_t events = 0;
    for (size_t i = 0; i < nspecs; i++) {
        struct variant v;
        parse_spec(specs[i], &v);
        double cns;
        size_t bytes = recode(argv[1], &v, &events, &cns);
        if (i == 0)
            printf("as-written-by-the-tracer %lld %llu -\n", (long long)st.st_size,
                   (unsigned long long)events);
        printf("%s %zu %llu %.1f\n", v.label, bytes, (unsigned long long)events, cns);
        fflush(stdout);
    }
    return 0;
}
