/* Records -> bytes, and chunk framing. See trace_encoder.h. */
#include "trace_encoder.h"

#include <stdlib.h>
#include <string.h>

#include <zstd.h>

void vt_bytes_free(struct vt_bytes *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

bool vt_bytes_reserve(struct vt_bytes *b, size_t n)
{
    if (b->failed)
        return false;
    if (b->cap - b->len >= n)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap - b->len < n)
        cap *= 2;
    uint8_t *p = realloc(b->data, cap);
    if (!p) {
        b->failed = true;
        return false;
    }
    b->data = p;
    b->cap = cap;
    return true;
}

void vt_encoder_init(struct vt_encoder *e)
{
    memset(e, 0, sizeof *e);
    e->time_unit_ns = 1;
}

void vt_encoder_set_time_unit(struct vt_encoder *e, uint64_t unit_ns)
{
    uint8_t pre[VT_PREAMBLE_SIZE]; /* the unit as the preamble will state it */
    vt_preamble_fill(pre, unit_ns);
    e->time_unit_ns = (uint64_t)pre[12] | (uint64_t)pre[13] << 8 | (uint64_t)pre[14] << 16 |
                      (uint64_t)pre[15] << 24;
}

void vt_encoder_set_time_slack(struct vt_encoder *e, uint64_t slack_ns)
{
    e->slack_ns = slack_ns;
}

void vt_encoder_free(struct vt_encoder *e)
{
    vt_bytes_free(&e->raw);
    vt_bytes_free(&e->dts);
    vt_bytes_free(&e->zout);
    vt_site_table_free(&e->sites);
    memset(e, 0, sizeof *e);
}

void vt_encoder_begin_chunk(struct vt_encoder *e)
{
    e->raw.len = 0; /* the time unit stays: it is the file's */
    e->raw.failed = false;
    e->dts.len = 0;
    e->dts.failed = false;
    e->dt_zeros = 0;
    memset(&e->delta, 0, sizeof e->delta);
    e->have_time = false;
    e->records = 0;
    e->stream_open = false;
    e->streamed = 0;
    e->zout.len = 0;
    e->zout.failed = false;
    e->head_block = 0;
}

void vt_encoder_stream(struct vt_encoder *e, void *cctx)
{
    e->stream = cctx;
}

/* Compresses len bytes at src into the chunk's frame (zout), which it
 * begins if it is not yet; end: ZSTD_e_end closes it. False if memory ran
 * out or zstd failed. */
static bool stream_feed(struct vt_encoder *e, const uint8_t *src, size_t len,
                        ZSTD_EndDirective end)
{
    ZSTD_CCtx *cctx = e->stream;
    if (!e->stream_open) {
        e->zout.len = 0;
        e->zout.failed = false;
        if (!vt_bytes_reserve(&e->zout, VT_CHUNK_HEADER_SIZE))
            return false;
        e->zout.len = VT_CHUNK_HEADER_SIZE;
        /* each chunk its own frame: no state kept from earlier chunks */
        ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
        e->stream_open = true;
    }
    ZSTD_inBuffer in = {src, len, 0};
    for (;;) {
        /* room for a whole compressed block: zstd writes straight into
         * zout and never touches its own output buffer */
        if (!vt_bytes_reserve(&e->zout, ZSTD_compressBound(ZSTD_BLOCKSIZE_MAX)))
            return false;
        ZSTD_outBuffer o = {e->zout.data, e->zout.cap, e->zout.len};
        size_t left = ZSTD_compressStream2(cctx, &o, &in, end);
        if (ZSTD_isError(left))
            return false;
        e->zout.len = o.pos;
        if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
            return true;
    }
}

/* A streaming encoder's records so far into the frame (end: continue, or
 * flush to end a block there). */
static void stream_out(struct vt_encoder *e, ZSTD_EndDirective end)
{
    if (!stream_feed(e, e->raw.data, e->raw.len, end)) {
        e->raw.failed = true; /* the chunk fails as a whole */
        return;
    }
    e->streamed += e->raw.len;
    e->raw.len = 0;
}

/* The records so far (the process record, first of its file) end the
 * chunk's first zstd block: the analyzer groups a job's traces by what that
 * record says before it replays any, and so reads a block of a few hundred
 * bytes, not the whole first chunk twice. A streaming encoder flushes them
 * into the frame now; vt_chunk_frame ends the block there. Only at the
 * chunk's start: records before it would make it no head. */
static void end_head_block(struct vt_encoder *e)
{
    if (e->raw.failed || e->streamed != 0 || e->records != 1)
        return;
    if (e->stream)
        stream_out(e, ZSTD_e_flush);
    else
        e->head_block = e->raw.len;
}

/* A streaming encoder's records into the frame once they make a piece. */
static inline void stream_pump(struct vt_encoder *e)
{
    if (e->stream && e->raw.len >= VT_STREAM_PIECE && !e->raw.failed)
        stream_out(e, ZSTD_e_continue);
}

void vt_encode_preamble(uint8_t out[VT_PREAMBLE_SIZE], uint64_t time_unit_ns)
{
    vt_preamble_fill(out, time_unit_ns);
}

/* ---- field writers: each reserves its own room ---- */

static void put_byte(struct vt_encoder *e, uint8_t v)
{
    if (vt_bytes_reserve(&e->raw, 1))
        e->raw.data[e->raw.len++] = v;
}

static void put_uv(struct vt_encoder *e, uint64_t v)
{
    if (vt_bytes_reserve(&e->raw, VT_UVARINT_MAX))
        e->raw.len += vt_put_uvarint(e->raw.data + e->raw.len, v);
}

static void put_raw(struct vt_encoder *e, const void *p, size_t n)
{
    if (n && vt_bytes_reserve(&e->raw, n)) {
        memcpy(e->raw.data + e->raw.len, p, n);
        e->raw.len += n;
    }
}

static void put_str(struct vt_encoder *e, const char *s, size_t len)
{
    if (!s)
        len = 0;
    if (len > VT_STRING_MAX)
        len = VT_STRING_MAX; /* a reader rejects longer strings */
    put_uv(e, len);
    put_raw(e, s, len);
}

static void put_cstr(struct vt_encoder *e, const char *s)
{
    put_str(e, s, s ? strlen(s) : 0);
}

/* A time in the file's units, and the dt field that writes it: the time
 * since the previous timed record of the chunk (the first timed record
 * carries the whole value). The writer emits records in time order, so a
 * time earlier than the last one cannot come from it; if a caller does
 * that anyway it is clamped (delta 0) rather than wrapped into a huge
 * unsigned value. */
static uint64_t dt_units(struct vt_encoder *e, uint64_t time_ns)
{
    uint64_t t = e->time_unit_ns == 1 ? time_ns : time_ns / e->time_unit_ns;
    if (!e->have_time) {
        e->have_time = true;
        e->delta.last_time = t;
        return t;
    }
    if (t < e->delta.last_time)
        t = e->delta.last_time;
    uint64_t dt = t - e->delta.last_time;
    e->delta.last_time = t;
    return dt;
}

/* The time a record is written with (vt_encoder_set_time_slack). */
static uint64_t slack_time(struct vt_encoder *e, uint64_t time_ns, bool may_lag)
{
    if (may_lag && e->slack_open && time_ns >= e->slack_anchor_ns &&
        time_ns - e->slack_anchor_ns < e->slack_ns)
        return e->slack_anchor_ns;
    e->slack_open = may_lag && e->slack_ns != 0;
    e->slack_anchor_ns = time_ns;
    return time_ns;
}

/* A dt to the chunk's dt column, run-length coded (format version 4,
 * trace_format.h): a 0 is counted, a value is written after the count of
 * zeros before it; vt_chunk_frame writes the last count. The caller has
 * reserved 2 * VT_UVARINT_MAX bytes of dts. */
static inline __attribute__((always_inline)) void column_dt(struct vt_encoder *e, uint64_t dt)
{
    if (dt == 0) {
        e->dt_zeros++;
        return;
    }
    e->dts.len += vt_put_uvarint(e->dts.data + e->dts.len, e->dt_zeros);
    e->dts.len += vt_put_uvarint(e->dts.data + e->dts.len, dt);
    e->dt_zeros = 0;
}

void vt_encoder_column_dt(struct vt_encoder *e, uint64_t dt)
{
    if (vt_bytes_reserve(&e->dts, 2 * VT_UVARINT_MAX))
        column_dt(e, dt);
}

/* The dt field goes to the chunk's dt column (format version 3 and 4). */
static void put_dt(struct vt_encoder *e, uint64_t time_ns)
{
    time_ns = slack_time(e, time_ns, false);
    vt_encoder_column_dt(e, dt_units(e, time_ns));
}

static void begin(struct vt_encoder *e, enum vt_record_type t)
{
    put_byte(e, (uint8_t)t);
    e->records++;
}

/* ---- records ---- */

void vt_encode_process(struct vt_encoder *e, const struct vt_process_info *p)
{
    begin(e, VT_REC_PROCESS);
    put_uv(e, p->pid);
    put_uv(e, p->ppid);
    put_uv(e, p->start_realtime_ns);
    put_uv(e, p->start_mono_ns);
    put_cstr(e, p->hostname);
    put_cstr(e, p->exe);
    put_uv(e, p->argc);
    for (size_t i = 0; i < p->argc; i++)
        put_cstr(e, p->argv[i]);
    put_uv(e, p->nenv);
    for (size_t i = 0; i < p->nenv; i++) {
        put_cstr(e, p->env[i].name);
        put_cstr(e, p->env[i].value);
    }
    put_cstr(e, p->tool_version);
    put_uv(e, p->stack_depth);
    put_uv(e, p->flush_interval_ms);
    end_head_block(e);
}

void vt_encode_module(struct vt_encoder *e, uint64_t id, uint64_t load_bias,
                      uint64_t start, uint64_t end, const char *path,
                      const uint8_t *build_id, size_t build_id_len)
{
    begin(e, VT_REC_MODULE);
    put_uv(e, id);
    put_uv(e, load_bias);
    put_uv(e, start);
    put_uv(e, end);
    put_cstr(e, path);
    if (build_id_len > VT_BUILD_ID_MAX)
        build_id_len = VT_BUILD_ID_MAX;
    put_str(e, (const char *)build_id, build_id_len);
}

void vt_encode_module_unload(struct vt_encoder *e, uint64_t id)
{
    begin(e, VT_REC_MODULE_UNLOAD);
    put_uv(e, id);
}

void vt_encode_thread(struct vt_encoder *e, uint64_t id, uint64_t os_tid,
                      const char *name, size_t name_len)
{
    begin(e, VT_REC_THREAD);
    put_uv(e, id);
    put_uv(e, os_tid);
    put_str(e, name, name_len);
}

void vt_encode_device(struct vt_encoder *e, uint64_t ordinal,
                      const uint8_t uuid[VT_UUID_SIZE], const char *name,
                      size_t name_len, uint64_t total_bytes)
{
    begin(e, VT_REC_DEVICE);
    put_uv(e, ordinal);
    put_raw(e, uuid, VT_UUID_SIZE);
    put_str(e, name, name_len);
    put_uv(e, total_bytes);
}

/* A node's parent is mostly the node before it, and its ip near that
 * node's: the distance and the difference (format version 7) make the
 * records of a stack's frames small and alike (a job's ranks define
 * thousands, each rank at its own module bases, before their first
 * event), where absolute ids and ips were 6 bytes that zstd matched in
 * short pieces. */
void vt_encode_stack_node(struct vt_encoder *e, uint64_t parent, uint64_t ip)
{
    uint64_t id = ++e->stack_nodes;
    begin(e, VT_REC_STACK_NODE);
    put_uv(e, id - parent);
    put_uv(e, vt_zigzag((int64_t)(ip - e->delta.last_ip)));
    e->delta.last_ip = ip;
    stream_pump(e);
}

void vt_encode_string(struct vt_encoder *e, const char *text, size_t len)
{
    begin(e, VT_REC_STRING);
    put_str(e, text, len);
}

void vt_encode_api(struct vt_encoder *e, uint64_t id, const char *name)
{
    begin(e, VT_REC_API);
    put_uv(e, id);
    put_cstr(e, name);
}

void vt_encode_py_code(struct vt_encoder *e, uint64_t id, const char *qualname, size_t qualname_len,
                       const char *filename, size_t filename_len, uint64_t first_line)
{
    begin(e, VT_REC_PY_CODE);
    put_uv(e, id);
    put_str(e, qualname, qualname_len);
    put_str(e, filename, filename_len);
    put_uv(e, first_line);
}

/* Largest SITE record: type, op, kind, then 7 varints; largest MEM
 * record: type, then 3 varints and 2 shifted fields (the dt is in the
 * column). */
#define VT_SITE_RECORD_MAX (3 + 7 * VT_UVARINT_MAX)
#define VT_MEM_RECORD_MAX (1 + 3 * VT_UVARINT_MAX + 2 * VT_SHIFTED_MAX)

/* The writer's per-event record, after its site's record if the site is
 * new: one capacity check for both instead of one per field (same bytes
 * as put_uv and put_dt would give; tests/record/test_encoder decodes
 * them). The address is a "ds" field: the difference to the chunk's
 * previous address as a shifted varint, as the size is a "us" (their
 * trailing zero bits counted, not written: trace_format.h). The size is
 * not a difference: one to the site's previous size was 3% bigger on
 * random sizes and 17% on sizes drawn from a small set (bench/synth_trace),
 * and no smaller on a loop, where zstd matches a repeated size anyway. */
void vt_encode_mem(struct vt_encoder *e, uint64_t call_ns, const struct vt_mem_record *m)
{
    if (!vt_bytes_reserve(&e->raw, VT_SITE_RECORD_MAX + VT_MEM_RECORD_MAX) ||
        !vt_bytes_reserve(&e->dts, 4 * VT_UVARINT_MAX)) /* a free's dt and duration */
        return;
    const struct vt_site_fields key = {
        .op = m->op, .kind = m->kind, .api = m->api, .label = m->label, .thread = m->thread,
        .device1 = m->device < 0 ? 0 : (uint64_t)m->device + 1, .stack = m->stack,
        .result = m->result, .aux = m->aux,
    };
    bool added;
    uint64_t id = vt_site_table_id(&e->sites, &key, &added);
    if (id == 0) {
        e->raw.failed = true; /* out of memory: the chunk fails as a whole */
        return;
    }
    uint8_t *p = e->raw.data + e->raw.len;
    if (added) {
        *p++ = (uint8_t)VT_REC_SITE;
        e->records++;
        *p++ = key.op;
        *p++ = key.kind;
        p += vt_put_uvarint(p, key.api);
        p += vt_put_uvarint(p, key.label);
        p += vt_put_uvarint(p, key.thread);
        p += vt_put_uvarint(p, key.device1);
        p += vt_put_uvarint(p, key.stack);
        p += vt_put_uvarint(p, key.result);
        p += vt_put_uvarint(p, key.aux);
    }
    uint64_t time_ns = slack_time(e, call_ns, m->result == 0);
    column_dt(e, dt_units(e, time_ns));
    if (m->op == VT_OP_FREE) {
        /* Its duration, next in the column (format version 5): the
         * return's time in units less the written time (delta.last_time,
         * maybe early by the slack), so that the sum is the return rounded
         * down, as any other time of the file. In the column, not the
         * record: it varies (0 or 1 unit, mostly) where the record repeats,
         * and a column of mostly 0 is runs of 0. */
        uint64_t end_ns = call_ns + m->duration_ns;
        uint64_t end = e->time_unit_ns == 1 ? end_ns : end_ns / e->time_unit_ns;
        column_dt(e, end > e->delta.last_time ? end - e->delta.last_time : 0);
    }
    *p++ = (uint8_t)VT_REC_MEM;
    e->records++;
    p += vt_put_uvarint(p, id);
    p += vt_put_shifted(p, m->size, false);
    p += vt_put_shifted(p, m->addr - e->delta.last_addr, true);
    e->delta.last_addr = m->addr;
    if (vt_mem_has_device_figures(m->op, m->kind, m->result)) {
        p += vt_put_uvarint(p, m->free_bytes);
        p += vt_put_uvarint(p, m->total_bytes);
    }
    e->raw.len = (size_t)(p - e->raw.data);
    stream_pump(e);
}

void vt_encode_range_push(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                          uint64_t domain, uint64_t name)
{
    begin(e, VT_REC_RANGE_PUSH);
    put_uv(e, thread);
    put_dt(e, time_ns);
    put_uv(e, domain);
    put_uv(e, name);
}

void vt_encode_range_pop(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                         uint64_t domain)
{
    begin(e, VT_REC_RANGE_POP);
    put_uv(e, thread);
    put_dt(e, time_ns);
    put_uv(e, domain);
}

void vt_encode_range_start(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                           uint64_t range_id, uint64_t domain, uint64_t name)
{
    begin(e, VT_REC_RANGE_START);
    put_uv(e, thread);
    put_dt(e, time_ns);
    put_uv(e, range_id);
    put_uv(e, domain);
    put_uv(e, name);
}

void vt_encode_range_end(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                         uint64_t range_id)
{
    begin(e, VT_REC_RANGE_END);
    put_uv(e, thread);
    put_dt(e, time_ns);
    put_uv(e, range_id);
}

void vt_encode_mark(struct vt_encoder *e, uint64_t thread, uint64_t time_ns,
                    uint64_t domain, uint64_t name)
{
    begin(e, VT_REC_MARK);
    put_uv(e, thread);
    put_dt(e, time_ns);
    put_uv(e, domain);
    put_uv(e, name);
}

void vt_encode_part(struct vt_encoder *e, uint64_t time_ns, const struct vt_part_record *p)
{
    begin(e, VT_REC_PART);
    put_uv(e, p->thread);
    put_dt(e, time_ns);
    put_uv(e, p->census);
    put_byte(e, p->part);
    put_uv(e, p->device < 0 ? 0 : (uint64_t)p->device + 1);
    put_uv(e, p->addr);
    put_uv(e, p->bytes);
    put_uv(e, p->elements);
    put_uv(e, p->dtype);
    put_uv(e, p->name);
}

void vt_encode_lost(struct vt_encoder *e, uint64_t count)
{
    begin(e, VT_REC_LOST);
    put_uv(e, count);
}

void vt_encode_trailer(struct vt_encoder *e, uint64_t time_ns, uint64_t events,
                       uint64_t chunks, uint64_t lost)
{
    begin(e, VT_REC_TRAILER);
    put_dt(e, time_ns);
    put_uv(e, events);
    put_uv(e, chunks);
    put_uv(e, lost);
}

/* ---- chunk framing ---- */

void *vt_chunk_cctx_new(void)
{
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (!c)
        return NULL;
    if (ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, VT_ZSTD_LEVEL)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_hashLog, VT_ZSTD_HASH_LOG)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_chainLog, VT_ZSTD_CHAIN_LOG)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_windowLog, VT_ZSTD_WINDOW_LOG)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_minMatch, VT_ZSTD_MIN_MATCH)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 1))) {
        ZSTD_freeCCtx(c);
        return NULL;
    }
    return c;
}

void vt_chunk_cctx_free(void *cctx)
{
    ZSTD_freeCCtx(cctx);
}

/* The tail of the records as raw holds it, the dt column with its last
 * count of zeros, the footer (the chunk's record bytes, records_total):
 * appended to raw (room reserved by the caller); returns the bytes added. */
static size_t append_column_footer(struct vt_encoder *e, size_t records_total)
{
    size_t records = e->raw.len;
    if (e->dts.len)
        memcpy(e->raw.data + records, e->dts.data, e->dts.len);
    size_t column = e->dts.len + vt_put_uvarint(e->raw.data + records + e->dts.len, e->dt_zeros);
    vt_put_le32(e->raw.data + records + column, (uint32_t)records_total);
    e->raw.len = records + column + VT_CHUNK_FOOTER_SIZE;
    return column + VT_CHUNK_FOOTER_SIZE;
}

static void put_chunk_header(uint8_t *h, size_t compressed, size_t raw)
{
    vt_put_le32(h, VT_CHUNK_MAGIC);
    vt_put_le32(h + 4, (uint32_t)compressed);
    vt_put_le32(h + 8, (uint32_t)raw);
}

/* vt_chunk_frame of a streaming encoder: the rest of the records and the
 * column end the frame begun in zout, which becomes out. */
static int stream_frame(struct vt_encoder *e, struct vt_bytes *out)
{
    size_t records = e->raw.len;
    size_t tail = append_column_footer(e, e->streamed + records);
    bool ok = stream_feed(e, e->raw.data, e->raw.len, ZSTD_e_end);
    e->raw.len = records;
    e->stream_open = false; /* a failed frame is not continued */
    size_t compressed = e->zout.len - VT_CHUNK_HEADER_SIZE;
    if (!ok || compressed > VT_CHUNK_MAX_COMPRESSED)
        return -1;
    put_chunk_header(e->zout.data, compressed, e->streamed + records + tail);
    struct vt_bytes done = e->zout;
    e->zout = *out;
    e->zout.len = 0;
    e->zout.failed = false;
    *out = done;
    return 0;
}

/* ZSTD_compress2 of src, with its first head bytes a block of their own
 * (end_head_block): the same frame, content size in its header. Returns
 * the frame's size or a zstd error code. */
static size_t compress_with_head(ZSTD_CCtx *cctx, uint8_t *dst, size_t cap, const uint8_t *src,
                                 size_t len, size_t head)
{
    size_t rc = ZSTD_CCtx_setPledgedSrcSize(cctx, len);
    if (ZSTD_isError(rc))
        return rc;
    ZSTD_outBuffer o = {dst, cap, 0};
    ZSTD_inBuffer in = {src, head, 0};
    do {
        rc = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_flush);
        if (ZSTD_isError(rc))
            return rc;
    } while (rc != 0 || in.pos < in.size);
    in.size = len;
    do {
        rc = ZSTD_compressStream2(cctx, &o, &in, ZSTD_e_end);
        if (ZSTD_isError(rc))
            return rc;
    } while (rc != 0);
    return o.pos;
}

int vt_chunk_frame(struct vt_encoder *e, void *cctx, struct vt_bytes *out)
{
    if (e->raw.failed || e->dts.failed || vt_encoder_chunk_size(e) > VT_CHUNK_MAX_RAW)
        return -1;
    /* records, the dt column with its last count of zeros, the footer (the
     * records' length): appended for the call and taken off again (a
     * failed reserve left failed set) */
    size_t records = e->raw.len;
    if (!vt_bytes_reserve(&e->raw, e->dts.len + VT_UVARINT_MAX + VT_CHUNK_FOOTER_SIZE))
        return -1;
    if (e->stream)
        return stream_frame(e, out);
    void *own = NULL;
    if (!cctx) {
        own = cctx = vt_chunk_cctx_new();
        if (!cctx)
            return -1;
    }
    append_column_footer(e, records);
    int rc = -1;
    size_t bound = ZSTD_compressBound(e->raw.len);
    out->len = 0;
    out->failed = false;
    if (!vt_bytes_reserve(out, VT_CHUNK_HEADER_SIZE + bound))
        goto done;
    /* Each chunk is its own frame: ZSTD_compress2 starts a new frame and
     * keeps no dictionary state from earlier chunks. */
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_only);
    size_t n = e->head_block && e->head_block < records
                   ? compress_with_head(cctx, out->data + VT_CHUNK_HEADER_SIZE, bound, e->raw.data,
                                        e->raw.len, e->head_block)
                   : ZSTD_compress2(cctx, out->data + VT_CHUNK_HEADER_SIZE, bound, e->raw.data,
                                    e->raw.len);
    if (ZSTD_isError(n) || n > VT_CHUNK_MAX_COMPRESSED)
        goto done;
    put_chunk_header(out->data, n, e->raw.len);
    out->len = VT_CHUNK_HEADER_SIZE + n;
    rc = 0;
done:
    e->raw.len = records;
    if (own)
        vt_chunk_cctx_free(own);
    return rc;
}
