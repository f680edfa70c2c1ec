#define _GNU_SOURCE /* mkstemp */
/* The trace reader: good traces, cut traces, corrupt and hostile input. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "decode_ahead.h"
#include "trace_builder.h"
#include "trace_reader.h"

/* A trace with every record type, in three chunks plus a trailer chunk. */
static void build_sample(struct tb *b)
{
    tb_init(b);
    tb_standard_header(b, 4242, 0xab, 1ull << 30);
    static const uint8_t build_id[] = {0xde, 0xad, 0xbe, 0xef};
    vt_encode_module(&b->enc, 1, 0x7f0000000000, 0x7f0000001000, 0x7f0000009000, "/lib/libx.so",
                     build_id, sizeof build_id);
    vt_encode_string(&b->enc, "forward", 7);
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, 5000, 0, 0x7000000000, 1 << 20, TB_STACK_A);
    tb_flush(b);
    vt_encode_range_push(&b->enc, TB_MAIN, 6000, 0, 1);
    tb_alloc(b, VT_KIND_DEVICE, TB_AUTOGRAD, 7000, 0, 0x7000100000, 2 << 20, TB_STACK_B);
    vt_encode_range_pop(&b->enc, TB_MAIN, 8000, 0);
    vt_encode_mark(&b->enc, TB_MAIN, 8500, 0, 1);
    tb_flush(b);
    vt_encode_range_start(&b->enc, TB_MAIN, 9000, 77, 0, 1);
    vt_encode_range_end(&b->enc, TB_AUTOGRAD, 9500, 77);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, 10000, 0, 0x7000000000);
    tb_fail(b, VT_KIND_DEVICE, TB_MAIN, 11000, 0, 4ull << 30, TB_STACK_C, 100, 1ull << 30);
    vt_encode_module_unload(&b->enc, 1);
    vt_encode_lost(&b->enc, 3);
    tb_trailer(b, 12000);
}

static int read_all(struct vt_reader *r, size_t *count)
{
    struct vt_record rec;
    int rc;
    *count = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        (*count)++;
    return rc;
}

static void test_good_trace(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b);
    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "sample", &r, &err), 0);
    struct vt_record rec;
    size_t n = 0, mems = 0;
    int rc;
    uint64_t last_addr = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        n++;
        switch (rec.type) {
        case VT_REC_PROCESS:
            assert_int_equal(rec.u.process->pid, 4242);
            assert_string_equal(rec.u.process->hostname, "testhost");
            assert_int_equal(rec.u.process->argc, 2);
            assert_string_equal(rec.u.process->argv[1], "train.py");
            assert_string_equal(rec.u.process->env[0].name, "RANK");
            break;
        case VT_REC_MODULE:
            assert_string_equal(rec.u.module->path, "/lib/libx.so");
            assert_int_equal(rec.u.module->load_bias, 0x7f0000000000);
            assert_int_equal(rec.u.module->build_id_len, 4);
            assert_int_equal(rec.u.module->build_id[3], 0xef);
            break;
        case VT_REC_DEVICE:
            assert_int_equal(rec.u.device->uuid[0], 0xab);
            assert_int_equal(rec.u.device->total_bytes, 1ull << 30);
            break;
        case VT_REC_MEM:
            mems++;
            if (mems == 2) {
                /* Deltas restart per chunk: absolute values come back. */
                assert_int_equal(rec.time_ns, 7000);
                assert_int_equal(rec.u.mem.addr, 0x7000100000);
                assert_int_equal(rec.u.mem.thread, TB_AUTOGRAD);
            }
            if (mems == 4) {
                assert_int_equal(rec.u.mem.result, 2);
                assert_int_equal(rec.u.mem.free_bytes, 100);
                assert_int_equal(rec.u.mem.total_bytes, 1ull << 30);
                assert_int_equal(rec.u.mem.size, 4ull << 30);
            }
            last_addr = rec.u.mem.addr;
            break;
        case VT_REC_RANGE_START:
            assert_int_equal(rec.u.range.range_id, 77);
            assert_string_equal(vt_reader_string(r, rec.u.range.name), "forward");
            break;
        case VT_REC_LOST:
            assert_int_equal(rec.u.lost.count, 3);
            break;
        case VT_REC_TRAILER:
            assert_int_equal(rec.time_ns, 12000);
            break;
        default:
            break;
        }
    }
    (void)last_addr;
    assert_int_equal(rc, 0);
    assert_int_equal(mems, 4);
    assert_false(vt_reader_truncated(r));
    assert_true(vt_reader_has_trailer(r));
    assert_int_equal(vt_reader_end_offset(r), b.file.len);
    assert_string_equal(vt_reader_thread(r, TB_AUTOGRAD)->name, "pt_autograd_0");
    assert_string_equal(vt_reader_api(r, TB_API_ALLOC), "cuMemAlloc_v2");
    uint64_t parent, ip;
    assert_true(vt_reader_stack_node(r, TB_STACK_C, &parent, &ip));
    assert_int_equal(ip, 0x3000);
    assert_false(vt_reader_stack_node(r, 4, &parent, &ip));
    assert_true(vt_reader_module_at(r, 0)->unloaded);
    assert_true(n > 20);
    vt_reader_close(r);
    tb_free(&b);
}

/* Every prefix of a trace is either a readable prefix (truncated, records
 * of whole chunks only) or a clear error; never a crash. */
static void test_truncated_every_offset(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b);
    size_t full_count;
    struct vt_reader *r;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "full", &r, NULL), 0);
    assert_int_equal(read_all(r, &full_count), 0);
    vt_reader_close(r);
    for (size_t len = 0; len < b.file.len; len++) {
        uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees overreads */
        memcpy(copy, b.file.data, len);
        struct vt_read_error err;
        int rc = vt_reader_open_memory(copy, len, "cut", &r, &err);
        if (rc != 0) {
            assert_int_equal(len, 0); /* only the empty file is not a trace */
            assert_non_null(strstr(err.message, "cut: byte 0"));
            free(copy);
            continue;
        }
        size_t count;
        assert_int_equal(read_all(r, &count), 0);
        assert_true(vt_reader_truncated(r));
        assert_non_null(strstr(vt_reader_truncation_note(r), "truncated"));
        assert_true(count < full_count);
        assert_true(vt_reader_end_offset(r) <= len);
        /* A cut exactly after a chunk keeps all of that chunk. */
        for (uint64_t c = 1; c < b.chunks && c < 64; c++)
            if (len == b.chunk_offsets[c])
                assert_int_equal(vt_reader_end_offset(r), len);
        vt_reader_close(r);
        free(copy);
    }
    tb_free(&b);
}

/* Reads to the end as a job's replay reads (past_sites: by batches of
 * memory events past the site records, vt_reader_events_past_sites), or a
 * record at a time; the error's message in msg. */
static int read_expect_error_as(const uint8_t *data, size_t len, char *msg, size_t n,
                                bool past_sites)
{
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(data, len, "bad", &r, &err) != 0) {
        snprintf(msg, n, "%s", err.message);
        return -1;
    }
    int rc;
    if (past_sites) {
        vt_reader_events_past_sites(r);
        struct vt_replay_mem evs[16];
        struct vt_record rec;
        do
            while (vt_reader_next_mem_events(r, evs, 16) == 16)
                ;
        while ((rc = vt_reader_next(r, &rec)) > 0);
    } else {
        size_t count;
        rc = read_all(r, &count);
    }
    snprintf(msg, n, "%s", rc < 0 ? vt_reader_error(r)->message : "");
    vt_reader_close(r);
    return rc;
}

static int read_expect_error(const uint8_t *data, size_t len, char *msg, size_t n)
{
    return read_expect_error_as(data, len, msg, n, false);
}

static void test_corrupt_chunk_in_middle(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b);
    assert_true(b.chunks >= 3);
    /* Flip a byte inside the second chunk's zstd frame. */
    size_t at = b.chunk_offsets[1] + VT_CHUNK_HEADER_SIZE + 6;
    b.file.data[at] ^= 0x5a;
    char msg[600], want[64];
    assert_int_equal(read_expect_error(b.file.data, b.file.len, msg, sizeof msg), -1);
    snprintf(want, sizeof want, "bad: byte %zu", b.chunk_offsets[1]);
    assert_non_null(strstr(msg, "corrupt chunk"));
    /* the offset named is the chunk's or a byte of its frame */
    char want2[64];
    snprintf(want2, sizeof want2, "bad: byte %zu", b.chunk_offsets[1] + VT_CHUNK_HEADER_SIZE);
    assert_true(strstr(msg, want) != NULL);
    (void)want2;
    tb_free(&b);
}

static void test_bad_magic_and_version(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b);
    char msg[600];
    b.file.data[0] = 'X';
    assert_int_equal(read_expect_error(b.file.data, b.file.len, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "byte 0"));
    assert_non_null(strstr(msg, "not a vramtrace trace"));
    b.file.data[0] = 'V';
    b.file.data[8] = 99;
    assert_int_equal(read_expect_error(b.file.data, b.file.len, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "byte 8"));
    assert_non_null(strstr(msg, "version 99"));
    tb_free(&b);
}

static void test_hostile_sizes(void **state)
{
    (void)state;
    char msg[600];
    uint8_t file[VT_PREAMBLE_SIZE + VT_CHUNK_HEADER_SIZE + 8] = {0};
    vt_encode_preamble(file, 1);
    uint8_t *h = file + VT_PREAMBLE_SIZE;
    vt_put_le32(h, VT_CHUNK_MAGIC);
    /* A compressed size over the limit is refused before allocating (and
     * is not mistaken for a cut file although the file is shorter). */
    vt_put_le32(h + 4, 0xffffffffu);
    vt_put_le32(h + 8, 100);
    assert_int_equal(read_expect_error(file, sizeof file, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "exceeds the limit"));
    assert_non_null(strstr(msg, "byte 20"));
    vt_put_le32(h + 4, 8);
    vt_put_le32(h + 8, 0xfffffff0u);
    assert_int_equal(read_expect_error(file, sizeof file, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "raw size"));
    /* Garbage where a zstd frame should be. */
    vt_put_le32(h + 8, 100);
    memset(h + VT_CHUNK_HEADER_SIZE, 0x41, 8);
    assert_int_equal(read_expect_error(file, sizeof file, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "corrupt chunk"));
    /* Bad chunk magic. */
    vt_put_le32(h, 0x12345678);
    assert_int_equal(read_expect_error(file, sizeof file, msg, sizeof msg), -1);
    assert_non_null(strstr(msg, "bad chunk magic"));
}

/* Records whose content is wrong inside a valid chunk. */
static void expect_record_error(void (*fill)(struct vt_encoder *), const char *reason)
{
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 1, 1, 1 << 20);
    fill(&b.enc);
    tb_flush(&b);
    char msg[600];
    assert_int_equal(read_expect_error(b.file.data, b.file.len, msg, sizeof msg), -1);
    if (!strstr(msg, reason))
        fail_msg("message '%s' lacks '%s'", msg, reason);
    char want[32];
    snprintf(want, sizeof want, "byte %d", VT_PREAMBLE_SIZE);
    assert_non_null(strstr(msg, want));
    tb_free(&b);
}

static void fill_bad_stack(struct vt_encoder *e)
{
    struct vt_mem_record m = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .thread = 1,
                              .size = 1, .stack = 99};
    vt_encode_mem(e, 1, &m);
}

static void fill_bad_thread(struct vt_encoder *e)
{
    struct vt_mem_record m = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .thread = 9,
                              .size = 1};
    vt_encode_mem(e, 1, &m);
}

static void fill_bad_string(struct vt_encoder *e)
{
    vt_encode_range_push(e, 1, 10, 0, 5);
}

static void fill_overrun(struct vt_encoder *e)
{
    /* A string record claiming more bytes than the chunk holds. */
    uint8_t rec[3] = {VT_REC_STRING, 0x80 | 100, 0x01};
    vt_bytes_reserve(&e->raw, sizeof rec);
    memcpy(e->raw.data + e->raw.len, rec, sizeof rec);
    e->raw.len += sizeof rec;
}

static void fill_unknown_type(struct vt_encoder *e)
{
    vt_bytes_reserve(&e->raw, 1);
    e->raw.data[e->raw.len++] = 200;
}

/* The bytes just outside the records' list: no record has type 0, and 19
 * (PART) is the last (docs/internals/FORMAT.md, "Records"). */
static void fill_type_zero(struct vt_encoder *e)
{
    vt_bytes_reserve(&e->raw, 1);
    e->raw.data[e->raw.len++] = 0;
}

static void fill_type_past_last(struct vt_encoder *e)
{
    vt_bytes_reserve(&e->raw, 1);
    e->raw.data[e->raw.len++] = 20;
}

static void fill_varint_overrun(struct vt_encoder *e)
{
    static const uint8_t rec[] = {VT_REC_LOST, 0xff, 0xff, 0xff};
    vt_bytes_reserve(&e->raw, sizeof rec);
    memcpy(e->raw.data + e->raw.len, rec, sizeof rec);
    e->raw.len += sizeof rec;
}

static void fill_huge_thread_id(struct vt_encoder *e)
{
    vt_encode_thread(e, 1ull << 40, 5, "x", 1);
}

/* A timed record whose dt the column does not have (version 4: the
 * column holds only its closing count, 0). */
static void fill_column_short(struct vt_encoder *e)
{
    vt_encode_range_push(e, 1, 10, 0, 0);
    e->dts.len = 0;
}

/* A dt column with a value no record takes (version 4: the pair (0, 10)
 * of the range's time, then 7 zeros to come and the closing count, 0: a
 * byte left). */
static void fill_column_left(struct vt_encoder *e)
{
    vt_encode_range_push(e, 1, 10, 0, 0);
    vt_bytes_reserve(&e->dts, 1);
    e->dts.data[e->dts.len++] = 7;
}

/* Version 4: a column whose last count promises more zeros than there are
 * timed records. */
static void fill_column_zeros_left(struct vt_encoder *e)
{
    vt_encode_range_push(e, 1, 10, 0, 0);
    e->dt_zeros = 3;
}

/* Version 3: a chunk whose footer names more records than it holds, or
 * that has no footer. */
static void test_bad_chunk_footer(void **state)
{
    (void)state;
    char msg[600];
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 1, 1, 1 << 20);
    tb_flush(&b);
    /* a second chunk: raw bytes {0xff, 0xff, 0, 0} (L 65535 of 0), then {9, 9} */
    for (int k = 0; k < 2; k++) {
        struct tb c;
        tb_init(&c);
        c.file.len = 0;
        static const uint8_t footer[] = {0xff, 0xff, 0, 0};
        vt_bytes_reserve(&c.enc.raw, sizeof footer);
        memcpy(c.enc.raw.data, footer, k == 0 ? 4 : 2);
        c.enc.raw.len = k == 0 ? 4 : 2;
        /* vt_chunk_frame adds a footer of its own: frame by hand */
        struct vt_bytes frame = {0};
        size_t bound = 64;
        vt_bytes_reserve(&frame, VT_CHUNK_HEADER_SIZE + bound);
        size_t n = ZSTD_compress(frame.data + VT_CHUNK_HEADER_SIZE, bound, c.enc.raw.data,
                                 c.enc.raw.len, 1);
        assert_false(ZSTD_isError(n));
        vt_put_le32(frame.data, VT_CHUNK_MAGIC);
        vt_put_le32(frame.data + 4, (uint32_t)n);
        vt_put_le32(frame.data + 8, (uint32_t)c.enc.raw.len);
        struct vt_bytes file = {0};
        vt_bytes_reserve(&file, b.file.len + VT_CHUNK_HEADER_SIZE + n);
        memcpy(file.data, b.file.data, b.file.len);
        memcpy(file.data + b.file.len, frame.data, VT_CHUNK_HEADER_SIZE + n);
        file.len = b.file.len + VT_CHUNK_HEADER_SIZE + n;
        assert_int_equal(read_expect_error(file.data, file.len, msg, sizeof msg), -1);
        const char *want = k == 0 ? "records of 65535 bytes in a chunk of 4 bytes"
                                  : "2 bytes, too short for its footer";
        if (!strstr(msg, want))
            fail_msg("message '%s' lacks '%s'", msg, want);
        vt_bytes_free(&frame);
        vt_bytes_free(&file);
        tb_free(&c);
    }
    tb_free(&b);
}

static void test_bad_records(void **state)
{
    (void)state;
    expect_record_error(fill_bad_stack, "stack node id out of range");
    expect_record_error(fill_bad_thread, "thread id refers to no thread record");
    expect_record_error(fill_bad_string, "string id out of range");
    expect_record_error(fill_overrun, "runs past the end of the chunk");
    expect_record_error(fill_unknown_type, "unknown record type");
    expect_record_error(fill_type_zero, "unknown record type");
    expect_record_error(fill_type_past_last, "unknown record type");
    expect_record_error(fill_varint_overrun, "varint runs past the end");
    expect_record_error(fill_huge_thread_id, "thread id out of range");
    expect_record_error(fill_column_short, "dt column ends before its timed records");
    expect_record_error(fill_column_left, "1 bytes of its dt column after the last timed record");
    expect_record_error(fill_column_zeros_left, "its dt column counts 3 more times than it has");
}

/* ---- the MEM fast path (decoding without per-field bounds checks) ---- */

static uint64_t next_random(uint64_t *state)
{ /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value of a random bit length, so that varints of every length from 1
 * to 10 bytes occur, with the edges 2^7k - 1 and 2^7k among them. */
static uint64_t any_length(uint64_t *state)
{
    uint64_t r = next_random(state);
    unsigned bits = (unsigned)(r % 65);
    switch (r >> 60) {
    case 0: /* all ones: the largest value of its length */
        return bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
    case 1: /* a power of two: one more byte than the value below it */
        return bits == 64 ? 0 : 1ull << bits;
    default:
        return bits == 0 ? 0 : next_random(state) >> (64 - bits);
    }
}

#define FAST_RECORDS 3000

/* Every field of every MEM record comes back as written, whether it was
 * decoded by the fast path (most of the chunk) or the checked decoder (the
 * last records of each chunk, closer to its end than the largest record). */
/* The lists made from records.def against the format's table of records
 * (docs/internals/FORMAT.md, "Records"), written out here by hand: every
 * type byte, its name in `vramtrace dump`, and whether it holds a time. */
static void test_record_list(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        bool timed;
    } want[256] = {
        [1] = {"process", false},      [2] = {"module", false},
        [3] = {"module_unload", false}, [4] = {"thread", false},
        [5] = {"device", false},       [6] = {"stack_node", false},
        [7] = {"string", false},       [8] = {"api", false},
        [9] = {"mem", true},           [10] = {"range_push", true},
        [11] = {"range_pop", true},    [12] = {"range_start", true},
        [13] = {"range_end", true},    [14] = {"mark", true},
        [15] = {"lost", false},        [16] = {"trailer", true},
        [17] = {"py_code", false},     [18] = {"site", false},
        [19] = {"part", true},
    };
    for (unsigned b = 0; b < 256; b++) {
        bool valid = want[b].name != NULL;
        if (vt_record_type_valid(b) != valid)
            fail_msg("type byte %u: valid %d, the format's table says %d", b,
                     vt_record_type_valid(b), valid);
        assert_string_equal(vt_record_type_name(b), valid ? want[b].name : "?");
        if (vt_record_is_timed(b) != want[b].timed)
            fail_msg("type byte %u (%s): timed %d, the format's table says %d", b,
                     vt_record_type_name(b), vt_record_is_timed(b), want[b].timed);
    }
}

/* repeat: each drawn record is written that many times in a row (at one
 * time, one address): chunks that compress well, whose memory records the
 * fast path decodes a field at a time; drawn once, those of random
 * records, decoded three fields from one load (trace_reader.c,
 * mem_in_one_load). */
static void check_mem_fields_every_varint_length(int repeat)
{
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 7, 1, 1 << 30);
    vt_encode_api(&b.enc, 200, "cuMemAllocAsync");
    static struct vt_mem_record want[FAST_RECORDS];
    static uint64_t want_ns[FAST_RECORDS];
    uint64_t rng = 12345, t = 1;
    for (int i = 0; i < FAST_RECORDS; i += repeat) {
        struct vt_mem_record *m = &want[i];
        *m = (struct vt_mem_record){0};
        bool alloc = next_random(&rng) & 1;
        m->op = alloc ? VT_OP_ALLOC : VT_OP_FREE;
        m->kind = (uint8_t)(1 + next_random(&rng) % (VT_KIND_COUNT_ - 1));
        m->api = i % 3 == 0 ? 200 : TB_API_ALLOC;
        m->label = i % 5 == 0 ? TB_API_FREE : 0;
        m->thread = i % 2 ? TB_MAIN : TB_AUTOGRAD;
        t += any_length(&rng) >> 8; /* times only go forward */
        want_ns[i] = t;
        m->device = (int64_t)(next_random(&rng) % 5) - 1;
        m->addr = any_length(&rng);
        m->size = any_length(&rng);
        m->stack = next_random(&rng) % 4; /* 0..3: nodes of the standard header */
        m->result = i % 7 == 0 ? any_length(&rng) : 0;
        m->aux = any_length(&rng);
        if (alloc && m->result != 0) {
            m->free_bytes = any_length(&rng);
            m->total_bytes = any_length(&rng);
        }
        for (int k = 0; k < repeat && i + k < FAST_RECORDS; k++) {
            want[i + k] = *m;
            want_ns[i + k] = t;
            vt_encode_mem(&b.enc, t, m);
        }
        if (i / repeat == FAST_RECORDS / 2 / repeat)
            tb_flush(&b); /* a chunk end in the middle, too */
    }
    tb_trailer(&b, t);

    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "fast", &r, &err), 0);
    struct vt_record rec;
    int rc, n = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        if (rec.type != VT_REC_MEM)
            continue;
        assert_true(n < FAST_RECORDS);
        assert_int_equal(rec.time_ns, want_ns[n]);
        const struct vt_mem_record *m = &want[n++];
        assert_int_equal(rec.u.mem.op, m->op);
        assert_int_equal(rec.u.mem.kind, m->kind);
        assert_int_equal(rec.u.mem.api, m->api);
        assert_int_equal(rec.u.mem.label, m->label);
        assert_int_equal(rec.u.mem.thread, m->thread);
        assert_int_equal(rec.u.mem.device, m->device);
        assert_int_equal(rec.u.mem.addr, m->addr);
        assert_int_equal(rec.u.mem.size, m->size);
        assert_int_equal(rec.u.mem.stack, m->stack);
        assert_int_equal(rec.u.mem.result, m->result);
        assert_int_equal(rec.u.mem.aux, m->aux);
        assert_int_equal(rec.u.mem.free_bytes, m->free_bytes);
        assert_int_equal(rec.u.mem.total_bytes, m->total_bytes);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(n, FAST_RECORDS);
    assert_false(vt_reader_truncated(r));
    vt_reader_close(r);
    tb_free(&b);
}

static void test_mem_fields_every_varint_length(void **state)
{
    (void)state;
    check_mem_fields_every_varint_length(1);
    check_mem_fields_every_varint_length(30);
}

/* A bad SITE or MEM record (format version 4) far from the chunk's end
 * (where the fast path decodes) gets the checked decoder's error, at its
 * own record offset. dt >= 0: a MEM record, whose time goes to the chunk's
 * dt column. */
static void expect_error_mid_chunk(const uint8_t *bad, size_t len, int dt, const char *reason)
{
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 1, 1, 1 << 20);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x1000, 512, TB_STACK_A); /* site 1 */
    size_t at = b.enc.raw.len;
    vt_bytes_reserve(&b.enc.raw, len);
    memcpy(b.enc.raw.data + b.enc.raw.len, bad, len);
    b.enc.raw.len += len;
    if (dt >= 0)
        vt_encoder_column_dt(&b.enc, (uint64_t)dt);
    for (int i = 0; i < 40; i++) /* plenty of bytes after it */
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 20 + (uint64_t)i, 0, 0x2000 + (uint64_t)i, 512,
                 TB_STACK_B);
    tb_flush(&b);
    char msg[600], want[64];
    assert_int_equal(read_expect_error(b.file.data, b.file.len, msg, sizeof msg), -1);
    if (!strstr(msg, reason))
        fail_msg("message '%s' lacks '%s'", msg, reason);
    snprintf(want, sizeof want, "record at offset %zu of", at);
    if (!strstr(msg, want))
        fail_msg("message '%s' lacks '%s'", msg, want);
    char past[600]; /* read as a job's replay reads: the same error */
    assert_int_equal(read_expect_error_as(b.file.data, b.file.len, past, sizeof past, true), -1);
    assert_string_equal(past, msg);
    tb_free(&b);
}

static void test_mem_errors_mid_chunk(void **state)
{
    (void)state;
    /* a site: type, op, kind, api, label, thread, device + 1, stack, result, aux */
    static const uint8_t unknown_api[] = {VT_REC_SITE, VT_OP_ALLOC, VT_KIND_DEVICE, 77, 0, 1,
                                          1, 1, 0, 0};
    expect_error_mid_chunk(unknown_api, sizeof unknown_api, -1, "api id refers to no api record");
    static const uint8_t unknown_label[] = {VT_REC_SITE, VT_OP_ALLOC, VT_KIND_DEVICE, 1, 78, 1,
                                            1, 1, 0, 0};
    expect_error_mid_chunk(unknown_label, sizeof unknown_label, -1,
                           "label api id refers to no api record");
    static const uint8_t bad_op[] = {VT_REC_SITE, 9, VT_KIND_DEVICE, 1, 0, 1, 1, 1, 0, 0};
    expect_error_mid_chunk(bad_op, sizeof bad_op, -1, "unknown memory operation");
    static const uint8_t kind_zero[] = {VT_REC_SITE, VT_OP_FREE, 0, 2, 0, 1, 1, 0, 0, 0};
    expect_error_mid_chunk(kind_zero, sizeof kind_zero, -1, "memory kind 0");
    static const uint8_t bad_thread[] = {VT_REC_SITE, VT_OP_ALLOC, VT_KIND_DEVICE, 1, 0, 9,
                                         1, 1, 0, 0};
    expect_error_mid_chunk(bad_thread, sizeof bad_thread, -1,
                           "thread id refers to no thread record");
    static const uint8_t bad_device[] = {VT_REC_SITE, VT_OP_ALLOC, VT_KIND_DEVICE, 1, 0, 1,
                                         0x82, 0x40, 1, 0, 0}; /* 8194 */
    expect_error_mid_chunk(bad_device, sizeof bad_device, -1, "device ordinal out of range");
    static const uint8_t bad_stack[] = {VT_REC_SITE, VT_OP_ALLOC, VT_KIND_DEVICE, 1, 0, 1,
                                        1, 99, 0, 0};
    expect_error_mid_chunk(bad_stack, sizeof bad_stack, -1, "stack node id out of range");
    /* a stack node (version 7: its id less its parent's, then its ip's
     * difference): a distance of 0, and one past the root (the standard
     * header defines three nodes, so the next is node 4) */
    static const uint8_t node_self[] = {VT_REC_STACK_NODE, 0, 2};
    expect_error_mid_chunk(node_self, sizeof node_self, -1, "stack node parent id out of range");
    static const uint8_t node_before_root[] = {VT_REC_STACK_NODE, 5, 2};
    expect_error_mid_chunk(node_before_root, sizeof node_before_root, -1,
                           "stack node parent id out of range");
    /* a memory record: type, site, us size, ds address (its dt: the column) */
    static const uint8_t unknown_site[] = {VT_REC_MEM, 9, 0x40, 0x80, 0x01};
    expect_error_mid_chunk(unknown_site, sizeof unknown_site, 1,
                           "site id refers to no site record");
    static const uint8_t site_zero[] = {VT_REC_MEM, 0, 0x40, 0x80, 0x01};
    expect_error_mid_chunk(site_zero, sizeof site_zero, 1, "site id refers to no site record");
    /* an 11-byte varint (size) and a 10-byte one beyond 64 bits (address) */
    static const uint8_t long_varint[] = {VT_REC_MEM, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0x01, 2};
    expect_error_mid_chunk(long_varint, sizeof long_varint, 1, "varint runs past the end");
    static const uint8_t wide_varint[] = {VT_REC_MEM, 1, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0x02};
    expect_error_mid_chunk(wide_varint, sizeof wide_varint, 1, "varint runs past the end");
    /* shifted codes 2 to 63 (no value, and not the escape), in the size
     * and in the address; an escape whose varint runs on */
    static const uint8_t no_value_size[] = {VT_REC_MEM, 1, 2, 0};
    expect_error_mid_chunk(no_value_size, sizeof no_value_size, 1,
                           "shifted varint that holds no value");
    static const uint8_t no_value_addr[] = {VT_REC_MEM, 1, 0x40, 63};
    expect_error_mid_chunk(no_value_addr, sizeof no_value_addr, 1,
                           "shifted varint that holds no value");
    static const uint8_t long_escape[] = {VT_REC_MEM, 1, VT_SHIFTED_ESCAPE, 0xff, 0xff, 0xff,
                                          0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0};
    expect_error_mid_chunk(long_escape, sizeof long_escape, 1, "varint runs past the end");
    /* a site record in a chunk of version 4 is fine; a MEM record's fields
     * laid out as versions 1-3 wrote them are not (their op byte reads as
     * a site id, and so on): refused, never misread as another site */
    static const uint8_t old_layout[] = {VT_REC_MEM, 7, VT_KIND_DEVICE, 1, 0, 1, 1, 2, 1, 1,
                                         0, 0};
    expect_error_mid_chunk(old_layout, sizeof old_layout, 1, "corrupt chunk");
}

/* ---- read ahead and batches: the same reading as one record at a time ---- */

/* Everything a reading shows, as text: each record, then how it ended. */
struct transcript {
    char *text;
    size_t len, cap;
    bool no_sites; /* site records left unsaid: a reading past them takes them unsaid */
};

static void say(struct transcript *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void say(struct transcript *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->text = realloc(t->text, t->cap);
        assert_non_null(t->text);
    }
    va_start(ap, fmt);
    vsnprintf(t->text + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static void say_record(struct transcript *t, const struct vt_record *rec)
{
    if (t->no_sites && rec->type == VT_REC_SITE)
        return;
    say(t, "%d %llu %llu %llu", (int)rec->type, (unsigned long long)rec->chunk_offset,
        (unsigned long long)rec->record_offset, (unsigned long long)rec->time_ns);
    if (rec->type == VT_REC_MEM)
        say(t, " mem %u %u %llu %llu %llu %lld %llx %llu %llu %llu %llu %llu %llu",
            rec->u.mem.op, rec->u.mem.kind, (unsigned long long)rec->u.mem.api,
            (unsigned long long)rec->u.mem.label, (unsigned long long)rec->u.mem.thread,
            (long long)rec->u.mem.device, (unsigned long long)rec->u.mem.addr,
            (unsigned long long)rec->u.mem.size, (unsigned long long)rec->u.mem.stack,
            (unsigned long long)rec->u.mem.result, (unsigned long long)rec->u.mem.aux,
            (unsigned long long)rec->u.mem.free_bytes, (unsigned long long)rec->u.mem.total_bytes);
    if (rec->type == VT_REC_STRING)
        say(t, " string %s", rec->u.string.text);
    say(t, "\n");
}

/* A memory event from vt_reader_next_mem_events against the record a
 * second reader of the same data gives one at a time. */
static void check_mem_event(const struct vt_replay_mem *ev, const struct vt_record *rec)
{
    assert_int_equal(rec->type, VT_REC_MEM);
    assert_int_equal(rec->u.mem.result, 0);
    assert_int_equal(ev->time_ns, rec->time_ns);
    assert_int_equal(ev->thread, rec->u.mem.thread);
    assert_int_equal(ev->addr, rec->u.mem.addr);
    assert_int_equal(ev->size, rec->u.mem.size);
    assert_int_equal(ev->stack, rec->u.mem.stack);
    assert_int_equal(ev->aux, rec->u.mem.aux);
    assert_int_equal(ev->device, rec->u.mem.device);
    assert_int_equal(ev->op, rec->u.mem.op);
    assert_int_equal(ev->kind, rec->u.mem.kind);
}

/* vt_decode_ahead's sink: each record said as a second reader (the twin)
 * gives it one at a time, on the reading thread, and when it comes the
 * reader's tables are those the twin has there: what the replay reads of
 * them does not change under it. */
struct decoded {
    struct transcript *t;
    struct vt_reader *r, *twin;
    pthread_t caller;
};

static void expect_same_tables(const struct decoded *d)
{
    assert_true(pthread_equal(pthread_self(), d->caller));
    assert_int_equal(vt_reader_stack_node_count(d->r), vt_reader_stack_node_count(d->twin));
    assert_int_equal(vt_reader_module_count(d->r), vt_reader_module_count(d->twin));
}

static void decoded_events(void *ctx, const struct vt_replay_mem *evs, size_t n)
{
    struct decoded *d = ctx;
    struct vt_record rec;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(vt_reader_next(d->twin, &rec), 1);
        expect_same_tables(d);
        check_mem_event(&evs[i], &rec);
        say_record(d->t, &rec);
    }
}

static void decoded_record(void *ctx, const struct vt_record *rec)
{
    struct decoded *d = ctx;
    struct vt_record twin;
    assert_int_equal(vt_reader_next(d->twin, &twin), 1);
    expect_same_tables(d);
    assert_int_equal(twin.type, rec->type);
    assert_int_equal(twin.record_offset, rec->record_offset);
    say_record(d->t, rec);
}

/* The batches that read with vt_decode_ahead: as the analysis does, and
 * with its thread started again after every stop (every_run). */
#define DECODED (1 << 20)
#define DECODED_EVERY_RUN (DECODED + 1)
/* ahead: 0 inline, 1 vt_reader_read_ahead, SHARED its threadless kind */
#define SHARED 2
/* with batch < 0: -(n | PAST_SITES) reads past the sites
 * (vt_reader_events_past_sites) */
#define PAST_SITES (1 << 20)

/* batch 0: vt_reader_next; DECODED...: vt_decode_ahead; other > 0
 * vt_reader_next_batch with that many; < 0 vt_reader_next_mem_events with
 * -batch, and vt_reader_next when it stops (the events are said as the
 * records a second reader gives). */
static void read_transcript(const uint8_t *data, size_t len, int ahead, int batch,
                            struct transcript *t)
{
    t->len = 0;
    say(t, "%s", "");
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(data, len, "t", &r, &err) != 0) {
        say(t, "open: %s\n", err.message);
        return;
    }
    if (ahead) /* it starts unless the preamble already ended the reading */
        assert_int_equal(ahead == SHARED ? vt_reader_read_ahead_shared(r) : vt_reader_read_ahead(r),
                         len >= VT_PREAMBLE_SIZE);
    struct vt_record recs[64];
    int rc;
    if (batch == 0) {
        while ((rc = vt_reader_next(r, &recs[0])) > 0)
            say_record(t, &recs[0]);
    } else if (batch >= DECODED) {
        struct decoded d = {t, r, NULL, pthread_self()};
        assert_int_equal(vt_reader_open_memory(data, len, "t", &d.twin, &err), 0);
        struct vt_decode_sink sink = {decoded_events, decoded_record, &d, batch == DECODED_EVERY_RUN};
        rc = vt_decode_ahead(r, &sink);
        assert_true(rc == 0 || rc == -1);
        vt_reader_close(d.twin);
    } else if (batch > 0) {
        while ((rc = vt_reader_next_batch(r, recs, batch)) > 0)
            for (int i = 0; i < rc; i++)
                say_record(t, &recs[i]);
    } else {
        struct vt_reader *twin;
        assert_int_equal(vt_reader_open_memory(data, len, "t", &twin, &err), 0);
        struct vt_replay_mem evs[64];
        int max = -batch & ~PAST_SITES;
        bool past = -batch & PAST_SITES;
        if (past)
            vt_reader_events_past_sites(r);
        for (;;) {
            int n = vt_reader_next_mem_events(r, evs, max);
            for (int i = 0; i < n; i++) {
                /* the twin passes the sites the reader took */
                while (assert_int_equal(vt_reader_next(twin, &recs[0]), 1),
                       past && recs[0].type == VT_REC_SITE)
                    ;
                check_mem_event(&evs[i], &recs[0]);
                say_record(t, &recs[0]);
            }
            if (n == max)
                continue;
            if ((rc = vt_reader_next(r, &recs[0])) <= 0)
                break;
            say_record(t, &recs[0]);
            while (assert_int_equal(vt_reader_next(twin, &recs[1]), 1),
                   past && recs[0].type != VT_REC_SITE && recs[1].type == VT_REC_SITE)
                ;
            assert_int_equal(recs[1].type, recs[0].type);
            assert_int_equal(recs[1].record_offset, recs[0].record_offset);
        }
        vt_reader_close(twin);
    }
    assert_int_equal(vt_reader_next(r, &recs[0]), rc); /* the end stays the end */
    say(t, "rc %d: %s; truncated %d %s; end %llu; chunks %llu records %llu\n", rc,
        rc < 0 ? vt_reader_error(r)->message : "", vt_reader_truncated(r),
        vt_reader_truncated(r) ? vt_reader_truncation_note(r) : "",
        (unsigned long long)vt_reader_end_offset(r), (unsigned long long)vt_reader_chunks(r),
        (unsigned long long)vt_reader_records(r));
    vt_reader_close(r);
}

/* The sample, then chunks of memory records of every field length: most
 * are decoded by the reader's fast path, and batches end inside chunks. */
static void build_long_sample(struct tb *l)
{
    tb_init(l);
    tb_standard_header(l, 7, 0xcd, 1ull << 34);
    uint64_t t = 1000;
    for (int chunk = 0; chunk < 3; chunk++) {
        for (int i = 0; i < 300; i++) {
            uint64_t addr = 0x7f0000000000ull + ((uint64_t)i * 0x9e3779b97ull % (1ull << 40));
            t += (uint64_t)(i % 7) * ((uint64_t)1 << (i % 30));
            tb_alloc(l, VT_KIND_DEVICE, i % 2 ? TB_MAIN : TB_AUTOGRAD, t, i % 3 - 1, addr,
                     (uint64_t)1 << (i % 40), (uint64_t)(i % 4));
            if (i % 5 == 0)
                tb_free_mem(l, VT_KIND_DEVICE, TB_MAIN, t + 1, 0, addr);
            if (i % 50 == 0)
                tb_fail(l, VT_KIND_DEVICE, TB_MAIN, t + 2, 0, 1ull << 35, TB_STACK_C, 5, 1ull << 34);
        }
        tb_flush(l);
    }
    tb_trailer(l, t + 10);
}

static void expect_same_transcript(const struct transcript *got, const struct transcript *want,
                                   size_t len, int ahead, int batch)
{
    if (got->len != want->len || memcmp(got->text, want->text, want->len) != 0)
        fail_msg("file of %zu bytes, read ahead %d, batch %d: reading differs:\n%s\n"
                 "---- one record at a time:\n%s",
                 len, ahead, batch, got->text, want->text);
}

static void expect_same_readings(const uint8_t *data, size_t len, struct transcript *want,
                                 struct transcript *got)
{
    static const int batches[] = {1, 2, 7, 64, -1, -7, -32, DECODED, DECODED_EVERY_RUN};
    read_transcript(data, len, false, 0, want);
    for (size_t i = 0; i < sizeof batches / sizeof *batches; i++) {
        for (int ahead = 0; ahead <= SHARED; ahead++) {
            read_transcript(data, len, ahead, batches[i], got);
            expect_same_transcript(got, want, len, ahead, batches[i]);
        }
    }
    /* Past the sites: the same records but the sites, the same end, and
     * the same count of records read (the sites among them). */
    struct transcript unsaid = {.no_sites = true}, got_unsaid = {.no_sites = true};
    read_transcript(data, len, false, 0, &unsaid);
    static const int past[] = {-(1 | PAST_SITES), -(7 | PAST_SITES), -(64 | PAST_SITES)};
    for (size_t i = 0; i < sizeof past / sizeof *past; i++) {
        for (int ahead = 0; ahead <= SHARED; ahead++) {
            read_transcript(data, len, ahead, past[i], &got_unsaid);
            expect_same_transcript(&got_unsaid, &unsaid, len, ahead, past[i]);
        }
    }
    free(unsaid.text);
    free(got_unsaid.text);
}

static void test_read_ahead_and_batches_read_the_same(void **state)
{
    (void)state;
    struct tb b;
    build_long_sample(&b);
    struct transcript want = {0}, got = {0};
    expect_same_readings(b.file.data, b.file.len, &want, &got);
    assert_non_null(strstr(want.text, "rc 0: ; truncated 0"));
    /* cut anywhere (near chunk boundaries all of them, elsewhere some) */
    for (size_t len = 1; len < b.file.len; len += len % 389 < 3 ? 1 : 127)
        expect_same_readings(b.file.data, len, &want, &got);
    static const size_t around[] = {0, 1, 3, 4, 11, 12, 13};
    for (size_t c = 0; c < b.chunks && c < 64; c++)
        for (size_t d = 0; d < sizeof around / sizeof *around; d++)
            if (b.chunk_offsets[c] + around[d] < b.file.len)
                expect_same_readings(b.file.data, b.chunk_offsets[c] + around[d], &want, &got);
    /* one corrupt byte: in chunk headers and frames */
    uint8_t *copy = malloc(b.file.len);
    assert_non_null(copy);
    for (size_t at = VT_PREAMBLE_SIZE; at < b.file.len; at += at % 401 < 4 ? 1 : 97) {
        memcpy(copy, b.file.data, b.file.len);
        copy[at] ^= 0x5a;
        expect_same_readings(copy, b.file.len, &want, &got);
    }
    /* data after the trailer */
    uint8_t *twice = malloc(2 * b.file.len);
    assert_non_null(twice);
    memcpy(twice, b.file.data, b.file.len);
    memcpy(twice + b.file.len, b.file.data + VT_PREAMBLE_SIZE, b.file.len - VT_PREAMBLE_SIZE);
    expect_same_readings(twice, 2 * b.file.len - VT_PREAMBLE_SIZE, &want, &got);
    assert_non_null(strstr(want.text, "data after the trailer"));
    free(twice);
    free(copy);
    free(want.text);
    free(got.text);
    tb_free(&b);
}

/* Many memory events in chunks of thousands, with definitions among them
 * now and then (stack nodes, strings, modules), each followed by events
 * that use them, and a range, a failure, runs of marks here and there. */
static void build_interleaved(struct tb *b)
{
    tb_init(b);
    tb_standard_header(b, 9, 0xee, 1ull << 40);
    uint64_t t = 1000, nodes = 3, modules = 0;
    for (int chunk = 0; chunk < 6; chunk++) {
        for (int i = 0; i < 4000; i++) {
            if (i % 997 == 0) {
                vt_encode_string(&b->enc, "phase", 5);
                vt_encode_stack_node(&b->enc, nodes, 0x4000 + nodes);
                nodes++;
                if (i % 1994 == 0) {
                    modules++;
                    vt_encode_module(&b->enc, modules, 0, 0x10000 * modules,
                                     0x10000 * modules + 0x1000, "/lib/liby.so", NULL, 0);
                }
            }
            if (i % 1500 == 700)
                vt_encode_range_push(&b->enc, TB_MAIN, t, 0, 1);
            for (int k = 0; i % 1300 == 650 && k < 40; k++) /* more than a batch holds */
                vt_encode_mark(&b->enc, TB_AUTOGRAD, t, 0, 1);
            uint64_t addr = 0x7f0000000000ull + (uint64_t)i * 0x100000;
            tb_alloc(b, VT_KIND_DEVICE, i % 2 ? TB_MAIN : TB_AUTOGRAD, t++, 0, addr, 4096, nodes);
            tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, addr);
            if (i % 2500 == 1)
                tb_fail(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 1ull << 42, nodes, 5, 1ull << 40);
        }
        tb_flush(b);
    }
    tb_trailer(b, t);
}

/* vt_decode_ahead decodes on a thread of its own: every record must come
 * in file order, and no definition may reach the reader's tables before
 * the records ahead of it have been consumed (decoded_events checks the
 * tables at each). Cut and corrupt copies: the same end and error. */
static void test_decode_ahead_keeps_definitions_in_order(void **state)
{
    (void)state;
    struct tb b;
    build_interleaved(&b);
    struct transcript want = {0}, got = {0};
    expect_same_readings(b.file.data, b.file.len, &want, &got);
    assert_non_null(strstr(want.text, "rc 0: ; truncated 0"));
    assert_true(b.events > 40000);
    /* cut in the middle of a chunk, or a byte there corrupt */
    for (size_t c = 1; c + 1 < b.chunks; c += 2)
        expect_same_readings(b.file.data, (b.chunk_offsets[c] + b.chunk_offsets[c + 1]) / 2, &want,
                             &got);
    uint8_t *copy = malloc(b.file.len);
    assert_non_null(copy);
    for (size_t c = 2; c + 1 < b.chunks; c += 3) {
        memcpy(copy, b.file.data, b.file.len);
        copy[(b.chunk_offsets[c] + b.chunk_offsets[c + 1]) / 2] ^= 0x5a;
        expect_same_readings(copy, b.file.len, &want, &got);
    }
    free(copy);
    free(want.text);
    free(got.text);
    tb_free(&b);
}

/* A trace followed while it is written (vt_reader_follow, `vramtrace top`):
 * the file grows by step bytes at a time, cut anywhere - in the preamble,
 * a chunk's header, its compressed bytes - and after each step the reader
 * reads on. It must deliver exactly the records of the whole file, once
 * each and in order, and never an error. */
struct seen {
    enum vt_record_type type;
    uint64_t chunk_offset, record_offset;
};

static size_t collect(struct vt_reader *r, struct seen *out, size_t n, size_t max)
{
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        assert_true(n < max);
        out[n++] = (struct seen){rec.type, rec.chunk_offset, rec.record_offset};
    }
    assert_int_equal(rc, 0); /* a cut is an end for now, never an error */
    return n;
}

static void test_follow_growing_file(void **state)
{
    (void)state;
    struct tb b;
    build_sample(&b);
    enum { MAX = 4096 };
    static struct seen want[MAX], got[MAX];
    struct vt_reader *r;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "full", &r, NULL), 0);
    size_t nwant = collect(r, want, 0, MAX);
    vt_reader_close(r);
    static const size_t steps[] = {1, 7, 64, 1000};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        char path[] = "/tmp/vt-follow-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        size_t written = 1; /* an empty file is not a trace yet: one byte first */
        assert_int_equal(write(fd, b.file.data, written), 1);
        struct vt_read_error err;
        assert_int_equal(vt_reader_open(path, &r, &err), 0);
        size_t ngot = collect(r, got, 0, MAX);
        while (written < b.file.len) {
            size_t n = b.file.len - written < steps[k] ? b.file.len - written : steps[k];
            assert_int_equal(write(fd, b.file.data + written, n), (ssize_t)n);
            written += n;
            /* it grew, no trailer yet: read on (0 only while the preamble
             * is still incomplete) */
            int rc = vt_reader_follow(r);
            assert_int_equal(rc, written < 16 ? 0 : 1);
            ngot = collect(r, got, ngot, MAX);
        }
        assert_int_equal(ngot, nwant);
        for (size_t i = 0; i < nwant; i++) {
            assert_int_equal(got[i].type, want[i].type);
            assert_int_equal(got[i].chunk_offset, want[i].chunk_offset);
            assert_int_equal(got[i].record_offset, want[i].record_offset);
        }
        assert_true(vt_reader_has_trailer(r));
        assert_false(vt_reader_truncated(r));
        /* ended: bytes after the trailer are not read */
        assert_int_equal(write(fd, "junk", 4), 4);
        assert_int_equal(vt_reader_follow(r), 0);
        vt_reader_close(r);
        close(fd);
        unlink(path);
    }
    /* a memory reader has nothing to follow */
    assert_int_equal(vt_reader_open_memory(b.file.data, 20, "cut", &r, NULL), 0);
    collect(r, got, 0, MAX);
    assert_int_equal(vt_reader_follow(r), 0);
    vt_reader_close(r);
    tb_free(&b);
}

/* A head reader (vt_reader_open_head) reads the process record from the
 * chunk's first zstd block only (the encoder ends a block with it), though
 * the chunk's dt column and footer lie at its end: none of the chunk's
 * allocations follows it, never with a time made up. A head past that
 * block reads the chunk whole. The head used to take the footer from its own
 * last bytes: every head read failed, and the analysis decompressed each
 * trace's chunk whole twice. */
static void head_reads_the_process_record(bool streaming)
{
    struct tb b;
    tb_init(&b);
    if (streaming) /* as the recorder's writer compresses: piece by piece */
        vt_encoder_stream(&b.enc, b.cctx);
    tb_standard_header(&b, 4242, 0xab, 1ull << 30);
    for (uint64_t i = 0; i < 3000; i++) /* one chunk, far longer than the head */
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 1000 + i * 10, 0, 0x7000000000 + (i << 20), 4096,
                 TB_STACK_A);
    tb_trailer(&b, 1000000);
    char path[] = "/tmp/vt-head-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(tb_write(&b, path), 0);

    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_head(path, 1, &r, &err), 0);
    struct vt_record rec;
    assert_int_equal(vt_reader_next(r, &rec), 1);
    assert_int_equal(rec.type, VT_REC_PROCESS);
    assert_non_null(vt_reader_process(r));
    assert_int_equal(vt_reader_process(r)->pid, 4242);
    int rc;
    size_t mem = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        mem += rec.type == VT_REC_MEM;
    assert_true(rc == 0 || rc == -1); /* the head's end, or a record it cut */
    assert_int_equal(mem, 0);
    vt_reader_close(r);

    /* a head past the process record's block: the rest of the chunk */
    assert_int_equal(vt_reader_open_head(path, 512, &r, &err), 0);
    size_t read = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        read += rec.type == VT_REC_MEM;
    assert_int_equal(rc, 0);
    assert_int_equal(read, 3000);
    vt_reader_close(r);

    /* the whole reader reads every allocation */
    assert_int_equal(vt_reader_open(path, &r, &err), 0);
    size_t allocs = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        allocs += rec.type == VT_REC_MEM;
    assert_int_equal(rc, 0);
    assert_int_equal(allocs, 3000);
    vt_reader_close(r);
    unlink(path);
    tb_free(&b);
}

static void test_head_reads_the_process_record(void **state)
{
    (void)state;
    head_reads_the_process_record(false);
    head_reads_the_process_record(true);
}

static void test_open_errors(void **state)
{
    (void)state;
    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open("/nonexistent/x.vtrace", &r, &err), -1);
    assert_non_null(strstr(err.message, "/nonexistent/x.vtrace"));
    assert_int_equal(vt_reader_open("/", &r, &err), -1);
    assert_int_equal(vt_reader_open_memory("", 0, "empty", &r, &err), -1);
    assert_non_null(strstr(err.message, "empty: byte 0"));
}

/* Stack nodes are kept compact (analyzer/trace/stack_nodes.h: runs of
 * children after their parents, ips by their 4 GiB span): a random trie of
 * long runs and branches, its ips first in few spans and then in more than
 * the span table holds, reads back as written, record by record, from the
 * tables while read and after the reader is released. */
static void test_stack_nodes_read_back(void **state)
{
    (void)state;
    enum { NODES = 6000 };
    uint64_t *parent = malloc(NODES * sizeof *parent), *ip = malloc(NODES * sizeof *ip);
    assert_non_null(parent);
    assert_non_null(ip);
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4343, 0xcd, 1ull << 30);
    const uint64_t base = 3; /* the header's three nodes */
    uint64_t x = 88172645463325252ull;
    for (uint64_t k = 0; k < NODES; k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t id = base + k + 1;
        /* a branch one node in eight (to any node before, or the root) */
        parent[k] = x % 8 ? id - 1 : (x >> 8) % id;
        /* 4 spans for the first half, then a span a node: the table fills */
        uint64_t span = k < NODES / 2 ? 0x7f00 + (x >> 20) % 4 : 0x10000 + k;
        ip[k] = span << 32 | (uint32_t)(x >> 24);
        vt_encode_stack_node(&b.enc, parent[k], ip[k]);
        if (k % 1000 == 999)
            tb_flush(&b);
    }
    tb_trailer(&b, 1000);
    struct vt_reader *r;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "nodes", &r, NULL), 0);
    struct vt_record rec;
    int rc;
    uint64_t seen = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0) {
        if (rec.type != VT_REC_STACK_NODE || rec.u.stack_node.id <= base)
            continue;
        uint64_t k = rec.u.stack_node.id - base - 1;
        assert_int_equal(k, seen);
        assert_int_equal(rec.u.stack_node.parent, parent[k]);
        assert_int_equal(rec.u.stack_node.ip, ip[k]);
        seen++;
    }
    assert_int_equal(rc, 0);
    assert_int_equal(seen, NODES);
    for (int pass = 0; pass < 2; pass++) {
        assert_int_equal(vt_reader_stack_node_count(r), base + NODES);
        for (uint64_t k = 0; k < NODES; k++) {
            uint64_t p, i;
            assert_true(vt_reader_stack_node(r, base + k + 1, &p, &i));
            if (p != parent[k] || i != ip[k])
                fail_msg("node %llu: parent %llu ip %#llx, written %llu %#llx",
                         (unsigned long long)(base + k + 1), (unsigned long long)p,
                         (unsigned long long)i, (unsigned long long)parent[k],
                         (unsigned long long)ip[k]);
        }
        uint64_t p, i;
        assert_false(vt_reader_stack_node(r, base + NODES + 1, &p, &i));
        assert_false(vt_reader_stack_node(r, 0, &p, &i));
        vt_reader_release(r); /* the spare room goes: the same nodes */
    }
    vt_reader_close(r);
    tb_free(&b);
    free(parent);
    free(ip);
}

/* vt_reader_take_stack_nodes fills the tables as vt_reader_next does,
 * record for record: ips of every varint length from one byte to ten
 * (Python frames have the top bit), parents of one to three bytes, nodes
 * near a chunk's end (where its loop leaves them to the checked decoder),
 * and a node that refers to a parent not yet defined: the same error at
 * the same record, none of the nodes after it taken. */
static void test_take_stack_nodes_reads_as_next(void **state)
{
    (void)state;
    enum { NODES = 20000, BAD = 14000 }; /* BAD: in the middle of a chunk */
    for (int corrupt = 0; corrupt < 2; corrupt++) {
        struct tb b;
        tb_init(&b);
        tb_standard_header(&b, 4344, 0xce, 1ull << 30);
        uint64_t x = 2463534242ull, defined = 3; /* the header's three nodes */
        for (uint64_t k = 0; k < NODES; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            unsigned bits = (unsigned)(x % 65); /* 0 to 64: every varint length */
            uint64_t ip = bits ? (x * 0x9e3779b97f4a7c15ull) >> (64 - bits) : 0;
            uint64_t parent = x % 4 ? defined : (x >> 7) % (defined + 1);
            if (corrupt && k == BAD)
                parent = defined + 2; /* not defined yet */
            vt_encode_stack_node(&b.enc, parent, ip);
            defined++;
            if (k % 3001 == 3000) {
                tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 1000 + k, 0, 0x7000000000 + k * 4096, 4096,
                         TB_STACK_A);
                tb_flush(&b);
            }
        }
        tb_trailer(&b, 100000);
        struct vt_reader *one, *taken;
        assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "nodes", &one, NULL), 0);
        assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "nodes", &taken, NULL), 0);
        struct vt_record rec;
        int rc_one, rc_taken;
        size_t n_one = 0, n_taken = 0, took = 0;
        while ((rc_one = vt_reader_next(one, &rec)) > 0)
            n_one++;
        for (;;) {
            size_t n = vt_reader_take_stack_nodes(taken);
            took += n;
            n_taken += n;
            if ((rc_taken = vt_reader_next(taken, &rec)) <= 0)
                break;
            n_taken++;
        }
        assert_int_equal(rc_taken, rc_one);
        assert_int_equal(rc_one, corrupt ? -1 : 0);
        assert_true(took > NODES / 2);
        assert_int_equal(n_taken, n_one);
        assert_int_equal(vt_reader_records(taken), vt_reader_records(one));
        if (corrupt)
            assert_string_equal(vt_reader_error(taken)->message, vt_reader_error(one)->message);
        uint64_t count = vt_reader_stack_node_count(one);
        assert_int_equal(count, corrupt ? 3 + BAD : 3 + NODES);
        assert_int_equal(vt_reader_stack_node_count(taken), count);
        for (uint64_t id = 1; id <= count; id++) {
            uint64_t p1, i1, p2, i2;
            assert_true(vt_reader_stack_node(one, id, &p1, &i1));
            assert_true(vt_reader_stack_node(taken, id, &p2, &i2));
            if (p1 != p2 || i1 != i2)
                fail_msg("node %llu: taken %llu %#llx, read %llu %#llx", (unsigned long long)id,
                         (unsigned long long)p2, (unsigned long long)i2, (unsigned long long)p1,
                         (unsigned long long)i1);
        }
        vt_reader_close(one);
        vt_reader_close(taken);
        tb_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_trace),
        cmocka_unit_test(test_truncated_every_offset),
        cmocka_unit_test(test_corrupt_chunk_in_middle),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_hostile_sizes),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_record_list),
        cmocka_unit_test(test_bad_chunk_footer),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_mem_fields_every_varint_length),
        cmocka_unit_test(test_mem_errors_mid_chunk),
        cmocka_unit_test(test_read_ahead_and_batches_read_the_same),
        cmocka_unit_test(test_decode_ahead_keeps_definitions_in_order),
        cmocka_unit_test(test_follow_growing_file),
        cmocka_unit_test(test_head_reads_the_process_record),
        cmocka_unit_test(test_stack_nodes_read_back),
        cmocka_unit_test(test_take_stack_nodes_reads_as_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
