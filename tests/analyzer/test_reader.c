/* The trace reader: good traces, cut traces, corrupt and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

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

static int read_expect_error(const uint8_t *data, size_t len, char *msg, size_t n)
{
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(data, len, "bad", &r, &err) != 0) {
        snprintf(msg, n, "%s", err.message);
        return -1;
    }
    size_t count;
    int rc = read_all(r, &count);
    snprintf(msg, n, "%s", rc < 0 ? vt_reader_error(r)->message : "");
    vt_reader_close(r);
    return rc;
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
    vt_encode_preamble(file);
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
                              .time_ns = 1, .size = 1, .stack = 99};
    vt_encode_mem(e, &m);
}

static void fill_bad_thread(struct vt_encoder *e)
{
    struct vt_mem_record m = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .thread = 9,
                              .time_ns = 1, .size = 1};
    vt_encode_mem(e, &m);
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

static void test_bad_records(void **state)
{
    (void)state;
    expect_record_error(fill_bad_stack, "stack node id out of range");
    expect_record_error(fill_bad_thread, "thread id refers to no thread record");
    expect_record_error(fill_bad_string, "string id out of range");
    expect_record_error(fill_overrun, "runs past the end of the chunk");
    expect_record_error(fill_unknown_type, "unknown record type");
    expect_record_error(fill_varint_overrun, "varint runs past the end");
    expect_record_error(fill_huge_thread_id, "thread id out of range");
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_trace),
        cmocka_unit_test(test_truncated_every_offset),
        cmocka_unit_test(test_corrupt_chunk_in_middle),
        cmocka_unit_test(test_bad_magic_and_version),
        cmocka_unit_test(test_hostile_sizes),
        cmocka_unit_test(test_bad_records),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
