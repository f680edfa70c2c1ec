/*
 * The pure parts of the recorder: varints, the encoder (its output decoded
 * by the analyzer's reader must give back the records put in), chunk
 * framing, the stack trie and string interning.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stack_trie.h"
#include "string_table.h"
#include "trace_check.h"
#include "trace_encoder.h"

static void test_uvarint_round_trip(void **state)
{
    (void)state;
    const uint64_t values[] = {0, 1, 127, 128, 255, 16383, 16384, 1u << 31, 1ull << 32,
                               (1ull << 63) - 1, 1ull << 63, UINT64_MAX};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        uint8_t buf[VT_UVARINT_MAX];
        size_t n = vt_put_uvarint(buf, values[i]);
        assert_true(n >= 1 && n <= VT_UVARINT_MAX);
        /* the length is what LEB128 says: 7 bits a byte */
        size_t bits = 1;
        for (uint64_t v = values[i]; v >>= 1;)
            bits++;
        assert_int_equal(n, (bits + 6) / 7);
        const uint8_t *p = buf;
        uint64_t back = 0;
        assert_int_equal(vt_get_uvarint(&p, buf + n, &back), 0);
        assert_true(back == values[i]);
        assert_ptr_equal(p, buf + n);
        /* cut short: an error, never a value */
        if (n > 1) {
            p = buf;
            assert_int_equal(vt_get_uvarint(&p, buf + n - 1, &back), -1);
        }
    }
    /* pseudo-random values */
    uint64_t x = 0x12345678abcdefull;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (i % 64);
        uint8_t buf[VT_UVARINT_MAX];
        size_t n = vt_put_uvarint(buf, v);
        const uint8_t *p = buf;
        uint64_t back;
        assert_int_equal(vt_get_uvarint(&p, buf + n, &back), 0);
        assert_true(back == v);
    }
}

static void test_zigzag_round_trip(void **state)
{
    (void)state;
    const int64_t values[] = {0, 1, -1, 2, -2, 63, -64, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
        assert_true(vt_unzigzag(vt_zigzag(values[i])) == values[i]);
    /* small magnitudes stay small: that is the point of zigzag */
    assert_true(vt_zigzag(0) == 0);
    assert_true(vt_zigzag(-1) == 1);
    assert_true(vt_zigzag(1) == 2);
    assert_true(vt_zigzag(-64) == 127);
}

/* A us (delta: ds) field back from its bytes; its length checked. */
static uint64_t shifted_round_trip(uint64_t v, bool delta, size_t *len)
{
    uint8_t buf[VT_SHIFTED_MAX];
    size_t n = vt_put_shifted(buf, v, delta);
    assert_true(n >= 1 && n <= VT_SHIFTED_MAX);
    const uint8_t *p = buf;
    uint64_t back = ~v;
    assert_int_equal(vt_get_shifted(&p, buf + n, delta, &back), 0);
    assert_ptr_equal(p, buf + n);
    p = buf; /* cut short: an error, never a value */
    uint64_t cut;
    assert_int_equal(vt_get_shifted(&p, buf + n - 1, delta, &cut), -1);
    *len = n;
    return back;
}

static void test_shifted_round_trip(void **state)
{
    (void)state;
    const uint64_t values[] = {0, 1, 2, 3, 512, 2ull << 20, 5ull << 26, 1ull << 57,
                               (1ull << 58) - 1, 1ull << 58, (1ull << 58) + 1, 3ull << 62,
                               1ull << 63, (1ull << 63) + 1, UINT64_MAX - 1, UINT64_MAX};
    size_t n;
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        uint64_t v = values[i];
        assert_true(shifted_round_trip(v, false, &n) == v);
        /* the escape only where the odd part has 58 bits or more */
        uint64_t m = v ? v >> __builtin_ctzll(v) : 0;
        assert_int_equal(vt_shifted_code(v, false) == VT_SHIFTED_ESCAPE, m >> 58 != 0);
        for (int sign = 0; sign < 2; sign++) {
            uint64_t d = sign ? 0 - v : v;
            assert_true(shifted_round_trip(d, true, &n) == d);
        }
    }
    /* trailing zeros are counted, not written: 5 << 26 (a plain varint of 4
     * bytes), a negative 2 MiB stride (a zigzag of 4 bytes) */
    assert_int_equal(shifted_round_trip(5ull << 26, false, &n), 5ull << 26);
    assert_int_equal(n, 2);
    assert_true(shifted_round_trip(0 - (2ull << 20), true, &n) == 0 - (2ull << 20));
    assert_int_equal(n, 1);
    /* codes 2 to 63 hold no value */
    for (uint8_t code = 2; code < 64; code++) {
        const uint8_t *p = &code;
        uint64_t v;
        assert_int_equal(vt_get_shifted(&p, &code + 1, false, &v), -1);
        p = &code;
        assert_int_equal(vt_get_shifted(&p, &code + 1, true, &v), -1);
    }
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 100000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = (x >> (i % 64)) << (i % 61);
        assert_true(shifted_round_trip(v, false, &n) == v);
        assert_true(shifted_round_trip(v, true, &n) == v);
    }
}

/* ---- encoder -> bytes -> reader ---- */

struct file_builder {
    struct vt_encoder enc;
    struct vt_bytes file;
    struct vt_bytes frame;
    size_t chunks;
};

static void fb_init(struct file_builder *b)
{
    memset(b, 0, sizeof *b);
    vt_encoder_init(&b->enc);
    assert_true(vt_bytes_reserve(&b->file, VT_PREAMBLE_SIZE));
    vt_encode_preamble(b->file.data, b->enc.time_unit_ns);
    b->file.len = VT_PREAMBLE_SIZE;
}

static void fb_end_chunk(struct file_builder *b)
{
    assert_int_equal(vt_chunk_frame(&b->enc, NULL, &b->frame), 0);
    assert_true(vt_bytes_reserve(&b->file, b->frame.len));
    memcpy(b->file.data + b->file.len, b->frame.data, b->frame.len);
    b->file.len += b->frame.len;
    b->chunks++;
    vt_encoder_begin_chunk(&b->enc);
}

static void fb_free(struct file_builder *b)
{
    vt_encoder_free(&b->enc);
    vt_bytes_free(&b->file);
    vt_bytes_free(&b->frame);
}

static const uint8_t uuid[VT_UUID_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};

static void build_sample(struct file_builder *b)
{
    fb_init(b);
    const char *argv[] = {"python", "train.py", "--lr=0.1"};
    const struct vt_env_var env[] = {{"RANK", "3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}};
    struct vt_process_info p = {
        .pid = 4242, .ppid = 1, .start_realtime_ns = 1700000000123456789ull,
        .start_mono_ns = 5000, .hostname = "node7", .exe = "/usr/bin/python3",
        .argc = 3, .argv = argv, .nenv = 2, .env = env, .tool_version = "0.1.0",
        .stack_depth = 64, .flush_interval_ms = 100,
    };
    vt_encode_process(&b->enc, &p);
    const uint8_t bid[] = {0xde, 0xad, 0xbe, 0xef};
    vt_encode_module(&b->enc, 1, 0x400000, 0x400000, 0x480000, "/usr/bin/python3", bid, 4);
    vt_encode_module(&b->enc, 2, 0x7f0000000000, 0x7f0000001000, 0x7f0000100000, "/lib/libx.so", NULL, 0);
    vt_encode_thread(&b->enc, 1, 777, "python3", 7);
    vt_encode_device(&b->enc, 0, uuid, "Sim GPU", 7, 80ull << 30);
    vt_encode_stack_node(&b->enc, 0, 0x401000);
    vt_encode_stack_node(&b->enc, 1, 0x7f0000002000);
    vt_encode_string(&b->enc, "train", 5);
    vt_encode_api(&b->enc, 1, "cuMemAlloc_v2");
    vt_encode_api(&b->enc, 3, "cudaMalloc");
    struct vt_mem_record ok = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .label = 3,
                               .thread = 1, .device = 0, .addr = 0x7f00deadb000,
                               .size = 1 << 20, .stack = 2, .result = 0, .aux = 0};
    vt_encode_mem(&b->enc, 10000, &ok);
    struct vt_mem_record oom = ok;
    oom.addr = 0;
    oom.size = 100ull << 30;
    oom.result = 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    oom.free_bytes = 1ull << 30;
    oom.total_bytes = 80ull << 30;
    oom.device = -1;
    vt_encode_mem(&b->enc, 10500, &oom);
    vt_encode_range_push(&b->enc, 1, 11000, 0, 1);
    vt_encode_mark(&b->enc, 1, 11000, 0, 1);
    vt_encode_range_start(&b->enc, 1, 12000, 99, 0, 1);
    fb_end_chunk(b);
    /* second chunk: fresh delta state, ids from the first chunk still valid */
    vt_encode_range_end(&b->enc, 1, 13000, 99);
    struct vt_mem_record fr = {.op = VT_OP_FREE, .kind = VT_KIND_DEVICE, .api = 1, .thread = 1,
                               .device = 0, .addr = 0x7f00deadb000, .stack = 1,
                               .duration_ns = 2500};
    vt_encode_mem(&b->enc, 14000, &fr);
    fr.addr = 0x1000; /* a lower address: negative delta */
    fr.duration_ns = 0;
    vt_encode_mem(&b->enc, 14001, &fr);
    vt_encode_range_pop(&b->enc, 1, 15000, 0);
    vt_encode_lost(&b->enc, 3);
    vt_encode_trailer(&b->enc, 16000, 9, 2, 3);
    fb_end_chunk(b);
}


/* A PART record (format version 5) reads back field for field; in a file
 * that says version 4 it is refused, naming why. */
static void build_parts(struct file_builder *b)
{
    fb_init(b);
    vt_encode_thread(&b->enc, 1, 777, "python3", 7);
    vt_encode_string(&b->enc, "first-step", 10);
    vt_encode_string(&b->enc, "AdamW", 5);
    vt_encode_string(&b->enc, "bfloat16", 8);
    vt_encode_string(&b->enc, "head.weight", 11);
    struct vt_part_record c = {.thread = 1, .census = 3,
                               .part = VT_PART_CENSUS, .device = -1, .bytes = 3,
                               .elements = 1, .dtype = 2, .name = 1};
    vt_encode_part(&b->enc, 20000, &c);
    struct vt_part_record t = {.thread = 1, .census = 3,
                               .part = VT_PART_OPTIMIZER_STATE, .device = 1,
                               .addr = 0x7f00deadb000, .bytes = 8u << 20,
                               .elements = 4u << 20, .dtype = 3, .name = 4};
    vt_encode_part(&b->enc, 20001, &t);
    fb_end_chunk(b);
}

static void test_part_records(void **state)
{
    (void)state;
    struct file_builder b;
    build_parts(&b);
    struct tc_trace *t = tc_load_memory(b.file.data, b.file.len);
    assert_int_equal(t->rc, 0);
    assert_int_equal(tc_count(t, VT_REC_PART), 2);
    const struct vt_record *c = &t->recs[5], *x = &t->recs[6];
    assert_int_equal(c->type, VT_REC_PART);
    assert_int_equal(c->u.part.part, VT_PART_CENSUS);
    assert_int_equal(c->u.part.census, 3);
    assert_int_equal(c->u.part.device, -1);
    assert_int_equal(c->u.part.bytes, VT_PART_SAW_MODEL | VT_PART_SAW_OPTIMIZER);
    assert_int_equal(c->time_ns, 20000);
    assert_int_equal(x->u.part.part, VT_PART_OPTIMIZER_STATE);
    assert_int_equal(x->u.part.device, 1);
    assert_true(x->u.part.addr == 0x7f00deadb000);
    assert_int_equal(x->u.part.bytes, 8u << 20);
    assert_int_equal(x->u.part.elements, 4u << 20);
    assert_string_equal(vt_reader_string(t->reader, x->u.part.dtype), "bfloat16");
    assert_string_equal(vt_reader_string(t->reader, x->u.part.name), "head.weight");
    assert_int_equal(x->time_ns, 20001);
    tc_free(t);
    /* the same bytes in a file of version 4: refused */
    b.file.data[8] = 4;
    t = tc_load_memory(b.file.data, b.file.len);
    assert_int_equal(t->rc, -1);
    assert_non_null(strstr(vt_reader_error(t->reader)->message, "part record"));
    tc_free(t);
    fb_free(&b);
}

static void test_encoder_output_decodes(void **state)
{
    (void)state;
    struct file_builder b;
    build_sample(&b);
    struct tc_trace *t = tc_load_memory(b.file.data, b.file.len);
    assert_int_equal(t->open_rc, 0);
    if (t->rc < 0)
        fail_msg("%s", vt_reader_error(t->reader)->message);
    assert_int_equal(t->rc, 0);
    assert_false(vt_reader_truncated(t->reader));
    assert_int_equal(vt_reader_chunks(t->reader), 2);

    static const enum vt_record_type order[] = {
        VT_REC_PROCESS, VT_REC_MODULE, VT_REC_MODULE, VT_REC_THREAD, VT_REC_DEVICE,
        VT_REC_STACK_NODE, VT_REC_STACK_NODE, VT_REC_STRING, VT_REC_API, VT_REC_API,
        VT_REC_SITE, VT_REC_MEM, VT_REC_SITE, VT_REC_MEM, VT_REC_RANGE_PUSH, VT_REC_MARK,
        VT_REC_RANGE_START, VT_REC_RANGE_END, VT_REC_SITE, VT_REC_MEM, VT_REC_MEM,
        VT_REC_RANGE_POP, VT_REC_LOST, VT_REC_TRAILER};
    assert_int_equal(t->n, sizeof order / sizeof order[0]);
    for (size_t i = 0; i < t->n; i++)
        assert_int_equal(t->recs[i].type, order[i]);

    const struct vt_process_info *p = t->recs[0].u.process;
    assert_int_equal(p->pid, 4242);
    assert_int_equal(p->ppid, 1);
    assert_true(p->start_realtime_ns == 1700000000123456789ull);
    assert_int_equal(p->start_mono_ns, 5000);
    assert_string_equal(p->hostname, "node7");
    assert_string_equal(p->exe, "/usr/bin/python3");
    assert_int_equal(p->argc, 3);
    assert_string_equal(p->argv[2], "--lr=0.1");
    assert_int_equal(p->nenv, 2);
    assert_string_equal(p->env[1].name, "CUDA_VISIBLE_DEVICES");
    assert_string_equal(p->env[1].value, "0,1");
    assert_string_equal(p->tool_version, "0.1.0");
    assert_int_equal(p->stack_depth, 64);
    assert_int_equal(p->flush_interval_ms, 100);

    const struct vt_module_info *m = t->recs[1].u.module;
    assert_int_equal(m->id, 1);
    assert_int_equal(m->load_bias, 0x400000);
    assert_int_equal(m->end, 0x480000);
    assert_string_equal(m->path, "/usr/bin/python3");
    assert_int_equal(m->build_id_len, 4);
    assert_int_equal(m->build_id[3], 0xef);
    assert_int_equal(t->recs[2].u.module->build_id_len, 0);

    assert_int_equal(t->recs[3].u.thread->os_tid, 777);
    assert_string_equal(t->recs[3].u.thread->name, "python3");
    const struct vt_device_info *d = t->recs[4].u.device;
    assert_memory_equal(d->uuid, uuid, VT_UUID_SIZE);
    assert_string_equal(d->name, "Sim GPU");
    assert_true(d->total_bytes == 80ull << 30);

    assert_int_equal(t->recs[6].u.stack_node.id, 2);
    assert_int_equal(t->recs[6].u.stack_node.parent, 1);
    assert_true(t->recs[6].u.stack_node.ip == 0x7f0000002000);
    assert_string_equal(t->recs[7].u.string.text, "train");
    assert_string_equal(t->recs[9].u.api.name, "cudaMalloc");

    const struct vt_record *ok = &t->recs[11];
    assert_int_equal(ok->u.mem.op, VT_OP_ALLOC);
    assert_int_equal(ok->u.mem.api, 1);
    assert_int_equal(ok->u.mem.label, 3);
    assert_int_equal(ok->time_ns, 10000);
    assert_int_equal(ok->u.mem.device, 0);
    assert_true(ok->u.mem.addr == 0x7f00deadb000);
    assert_int_equal(ok->u.mem.size, 1 << 20);
    assert_int_equal(ok->u.mem.stack, 2);
    const struct vt_record *oom = &t->recs[13];
    assert_int_equal(oom->time_ns, 10500);
    assert_int_equal(oom->u.mem.result, 2);
    assert_int_equal(oom->u.mem.device, -1);
    assert_true(oom->u.mem.addr == 0);
    assert_true(oom->u.mem.free_bytes == 1ull << 30);
    assert_true(oom->u.mem.total_bytes == 80ull << 30);
    assert_int_equal(t->recs[16].u.range.range_id, 99);
    assert_int_equal(t->recs[16].u.range.name, 1);

    /* chunk 2 */
    assert_int_equal(t->recs[17].time_ns, 13000);
    assert_int_equal(t->recs[17].u.range.range_id, 99);
    assert_true(t->recs[19].u.mem.addr == 0x7f00deadb000);
    assert_int_equal(t->recs[19].u.mem.op, VT_OP_FREE);
    assert_true(t->recs[20].u.mem.addr == 0x1000);
    assert_int_equal(t->recs[20].time_ns, 14001);
    /* a free's duration (format version 5): the return's time, rounded
     * down to the unit, less the free's; an allocation has none */
    uint64_t unit = b.enc.time_unit_ns;
    assert_int_equal(t->recs[19].u.mem.duration_ns, (14000 + 2500) / unit * unit - 14000 / unit * unit);
    assert_int_equal(t->recs[20].u.mem.duration_ns, 0);
    assert_int_equal(oom->u.mem.duration_ns, 0);
    /* sites: each new one defined right before its first record; the
     * second free reuses the first's */
    assert_int_equal(t->recs[10].u.site.id, 1);
    assert_int_equal(t->recs[10].u.site.stack, 2);
    assert_int_equal(t->recs[12].u.site.id, 2);
    assert_int_equal(t->recs[12].u.site.result, 2);
    assert_int_equal(t->recs[12].u.site.device, -1);
    assert_int_equal(t->recs[18].u.site.id, 3);
    assert_int_equal(t->recs[18].u.site.op, VT_OP_FREE);
    assert_int_equal(t->recs[11].u.mem.site, 1);
    assert_int_equal(t->recs[13].u.mem.site, 2);
    assert_int_equal(t->recs[19].u.mem.site, 3);
    assert_int_equal(t->recs[20].u.mem.site, 3);
    assert_int_equal(t->recs[22].u.lost.count, 3);
    assert_int_equal(t->recs[23].time_ns, 16000);
    assert_int_equal(t->recs[23].u.trailer.events, 9);
    assert_int_equal(t->recs[23].u.trailer.chunks, 2);
    assert_int_equal(t->recs[23].u.trailer.lost, 3);
    tc_free(t);
    fb_free(&b);
}

/* The time slack's rule (vt_encoder_set_time_slack), record by record:
 * a MEM record that did not fail takes the previous such record's written
 * time while it is less than the slack after it; failures, ranges, the
 * first event after them and events past the slack keep their own; the
 * written time carries over a chunk boundary. */
static void test_time_slack(void **state)
{
    (void)state;
    struct file_builder b;
    fb_init(&b);
    vt_encoder_set_time_slack(&b.enc, 1000);
    struct vt_process_info p = {.pid = 1, .hostname = "h", .exe = "x", .tool_version = "0"};
    vt_encode_process(&b.enc, &p); /* a reader wants it first */
    vt_encode_thread(&b.enc, 1, 777, "t", 1);
    vt_encode_api(&b.enc, 1, "cuMemAlloc_v2");
    struct vt_mem_record m = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .thread = 1,
                              .device = 0, .addr = 0x1000, .size = 512};
    static const struct {
        uint64_t time_ns;
        int result; /* -1: a range push instead of a MEM record */
        bool end_chunk_before;
        uint64_t written;
    } steps[] = {
        {10000, 0, false, 10000}, /* first: its own */
        {10400, 0, false, 10000}, /* within 1000 of 10000 */
        {10999, 0, false, 10000},
        {11000, 0, false, 11000}, /* 1000 after: its own, the new anchor */
        {11500, 0, true, 11000},  /* a new chunk: still 11000 */
        {11600, 2, false, 11600}, /* a failure: its own */
        {11700, 0, false, 11700}, /* after a failure: its own */
        {11800, 0, false, 11700},
        {11900, -1, false, 11900}, /* a range: its own */
        {12000, 0, false, 12000},  /* after a range: its own */
    };
    size_t n = sizeof steps / sizeof steps[0];
    for (size_t i = 0; i < n; i++) {
        if (steps[i].end_chunk_before)
            fb_end_chunk(&b);
        if (steps[i].result < 0) {
            vt_encode_range_push(&b.enc, 1, steps[i].time_ns, 0, 0);
            continue;
        }
        m.result = (uint64_t)steps[i].result;
        vt_encode_mem(&b.enc, steps[i].time_ns, &m);
    }
    fb_end_chunk(&b);
    struct tc_trace *t = tc_load_memory(b.file.data, b.file.len);
    if (t->rc < 0)
        fail_msg("%s", vt_reader_error(t->reader)->message);
    size_t timed = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->recs[i].type != VT_REC_MEM && t->recs[i].type != VT_REC_RANGE_PUSH)
            continue;
        assert_true(timed < n);
        if (t->recs[i].time_ns != steps[timed].written)
            fail_msg("step %zu: written at %llu, expected %llu", timed,
                     (unsigned long long)t->recs[i].time_ns,
                     (unsigned long long)steps[timed].written);
        timed++;
    }
    assert_int_equal(timed, n);
    tc_free(t);
    fb_free(&b);
}

/* The chunk layout, checked byte by byte against the format header. */
static void test_chunk_framing(void **state)
{
    (void)state;
    struct file_builder b;
    build_sample(&b);
    const uint8_t *f = b.file.data;
    assert_memory_equal(f, VT_FILE_MAGIC, VT_FILE_MAGIC_LEN);
    assert_int_equal(f[8] | f[9] << 8, VT_FORMAT_VERSION);
    assert_int_equal(vt_get_le32(f + 12), 1); /* time unit: the builder's 1 ns */
    size_t off = VT_PREAMBLE_SIZE, chunks = 0;
    while (off < b.file.len) {
        assert_int_equal(vt_get_le32(f + off), VT_CHUNK_MAGIC);
        uint32_t csize = vt_get_le32(f + off + 4);
        assert_true(vt_get_le32(f + off + 8) > 0);
        /* a zstd frame: magic 0xFD2FB528, checksum flag set (bit 2 of FHD) */
        assert_int_equal(vt_get_le32(f + off + 12), 0xFD2FB528u);
        assert_true(f[off + 16] & 0x04);
        off += VT_CHUNK_HEADER_SIZE + csize;
        chunks++;
    }
    assert_int_equal(off, b.file.len);
    assert_int_equal(chunks, 2);
    fb_free(&b);
}

/* Cut anywhere: what decodes is exactly the complete chunks before the cut,
 * never an error. */
static void test_encoder_truncation(void **state)
{
    (void)state;
    struct file_builder b;
    build_sample(&b);
    size_t first_chunk_end = VT_PREAMBLE_SIZE + VT_CHUNK_HEADER_SIZE +
                             vt_get_le32(b.file.data + VT_PREAMBLE_SIZE + 4);
    for (size_t cut = 0; cut < b.file.len; cut++) {
        struct tc_trace *t = tc_load_memory(b.file.data, cut);
        if (cut < VT_PREAMBLE_SIZE) {
            /* not even a preamble: refused or empty, never records */
            assert_int_equal(t->n, 0);
        } else {
            assert_int_equal(t->rc, 0);
            assert_true(vt_reader_truncated(t->reader));
            assert_int_equal(t->n, cut < first_chunk_end ? 0 : 17);
        }
        tc_free(t);
    }
    fb_free(&b);
}

/* A streaming encoder (vt_encoder_stream, what the writer uses) writes
 * the file the one-shot framing writes, record for record: chunks of many
 * pieces, a chunk that ends inside a piece, one that ends right after a
 * piece went out, one with a lone record, an empty piece after a chunk. */
static void encode_stream_sample(struct file_builder *b, void *cctx)
{
    vt_encoder_set_time_unit(&b->enc, 1000);
    vt_encode_thread(&b->enc, 1, 777, "python3", 7);
    vt_encode_device(&b->enc, 0, uuid, "Sim GPU", 7, 80ull << 30);
    vt_encode_stack_node(&b->enc, 0, 0x401000);
    vt_encode_api(&b->enc, 1, "cuMemAlloc_v2");
    vt_encode_api(&b->enc, 2, "cuMemFree_v2");
    vt_encode_api(&b->enc, 3, "cudaMalloc");
    uint64_t x = 88172645463325252ull;
    /* chunk ends: after 180,000 records (many pieces), after exactly the
     * records of a piece, after 1 more, at the end */
    size_t ends[] = {180000, 0, 1, 90000};
    for (size_t c = 0; c < sizeof ends / sizeof ends[0]; c++) {
        size_t n = ends[c];
        for (size_t i = 0; n == 0 || i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            struct vt_mem_record m = {
                .op = i % 2 ? VT_OP_FREE : VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1 + x % 3,
                .thread = 1, .device = 0, .addr = x & 0xffffffffff00ull, .size = x % 100000,
                .stack = 1,
            };
            vt_encode_mem(&b->enc, 1000000 + (b->chunks * 200000 + i) * 700 + x % 500, &m);
            /* the piece just went into the frame: end the chunk here */
            if (n == 0 && cctx && b->enc.streamed && b->enc.raw.len == 0)
                break;
            if (n == 0 && !cctx && b->enc.raw.len >= VT_STREAM_PIECE)
                break;
        }
        fb_end_chunk(b);
    }
}

static void test_streamed_chunks(void **state)
{
    (void)state;
    void *cctx = vt_chunk_cctx_new();
    assert_non_null(cctx);
    struct file_builder streamed, whole;
    fb_init(&streamed);
    vt_encoder_stream(&streamed.enc, cctx);
    encode_stream_sample(&streamed, cctx);
    fb_init(&whole);
    encode_stream_sample(&whole, NULL);
    assert_int_equal(streamed.chunks, 4);
    struct tc_trace *s = tc_load_memory(streamed.file.data, streamed.file.len);
    struct tc_trace *w = tc_load_memory(whole.file.data, whole.file.len);
    assert_int_equal(s->rc, 0);
    assert_int_equal(w->rc, 0);
    assert_int_equal(vt_reader_truncated(s->reader), vt_reader_truncated(w->reader));
    assert_true(s->n > 270000);
    assert_int_equal(s->n, w->n);
    for (size_t i = 0; i < s->n; i++) {
        assert_int_equal(s->recs[i].type, w->recs[i].type);
        if (s->recs[i].type != VT_REC_MEM)
            continue;
        assert_true(s->recs[i].time_ns == w->recs[i].time_ns);
        assert_true(s->recs[i].u.mem.addr == w->recs[i].u.mem.addr);
        assert_true(s->recs[i].u.mem.size == w->recs[i].u.mem.size);
    }
    /* every chunk's header: its zstd frame and its bytes decompressed */
    size_t off = VT_PREAMBLE_SIZE, chunks = 0, woff = VT_PREAMBLE_SIZE;
    while (off < streamed.file.len) {
        const uint8_t *f = streamed.file.data + off, *g = whole.file.data + woff;
        assert_int_equal(vt_get_le32(f), VT_CHUNK_MAGIC);
        assert_int_equal(vt_get_le32(f + 8), vt_get_le32(g + 8)); /* raw bytes */
        assert_int_equal(vt_get_le32(f + 12), 0xFD2FB528u);
        off += VT_CHUNK_HEADER_SIZE + vt_get_le32(f + 4);
        woff += VT_CHUNK_HEADER_SIZE + vt_get_le32(g + 4);
        chunks++;
    }
    assert_int_equal(off, streamed.file.len);
    assert_int_equal(chunks, 4);
    tc_free(s);
    tc_free(w);
    fb_free(&streamed);
    fb_free(&whole);
    vt_chunk_cctx_free(cctx);
}

/* ---- trie and strings ---- */

struct node_log {
    uint64_t ids[64], parents[64], ips[64];
    size_t n;
};

static void log_node(void *ctx, uint64_t id, uint64_t parent, uint64_t ip)
{
    struct node_log *l = ctx;
    l->ids[l->n] = id;
    l->parents[l->n] = parent;
    l->ips[l->n] = ip;
    l->n++;
}

static void test_trie_dedup_and_prefix_sharing(void **state)
{
    (void)state;
    struct vt_stack_trie t;
    struct node_log log = {0};
    vt_trie_init(&t);
    /* innermost first, as unw_backtrace gives them */
    const uint64_t a[] = {0xa, 0xb, 0xc};
    const uint64_t b[] = {0xd, 0xb, 0xc}; /* same callers, other leaf */
    const uint64_t c[] = {0xb, 0xc};      /* a prefix of both */
    assert_int_equal(vt_trie_insert(&t, NULL, 0, log_node, &log), 0);
    uint64_t ia = vt_trie_insert(&t, a, 3, log_node, &log);
    assert_int_equal(log.n, 3);
    /* ids 1.. in order of creation, outermost frame first */
    assert_int_equal(log.ids[0], 1);
    assert_int_equal(log.parents[0], 0);
    assert_int_equal(log.ips[0], 0xc);
    assert_int_equal(log.ips[2], 0xa);
    assert_int_equal(ia, 3);
    assert_int_equal(vt_trie_insert(&t, a, 3, log_node, &log), ia); /* same stack, same node */
    assert_int_equal(log.n, 3);                                      /* nothing new */
    uint64_t ib = vt_trie_insert(&t, b, 3, log_node, &log);
    assert_int_equal(log.n, 4); /* one new edge: the leaf */
    assert_int_equal(log.parents[3], 2);
    assert_true(ib != ia);
    assert_int_equal(vt_trie_insert(&t, c, 2, log_node, &log), 2);
    assert_int_equal(log.n, 4);
    /* many stacks: the table grows and keeps every edge */
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t s[2] = {0x1000 + i, 0xc};
        uint64_t id = vt_trie_insert(&t, s, 2, NULL, NULL);
        assert_int_equal(id, 5 + i);
    }
    for (uint64_t i = 0; i < 5000; i++) {
        uint64_t s[2] = {0x1000 + i, 0xc};
        assert_int_equal(vt_trie_insert(&t, s, 2, NULL, NULL), 5 + i);
    }
    vt_trie_free(&t);
}

static void test_string_interning(void **state)
{
    (void)state;
    struct vt_string_table s;
    int is_new;
    vt_strings_init(&s);
    assert_int_equal(vt_strings_intern(&s, "train", 5, &is_new), 1);
    assert_true(is_new);
    assert_int_equal(vt_strings_intern(&s, "eval", 4, &is_new), 2);
    assert_int_equal(vt_strings_intern(&s, "train", 5, &is_new), 1);
    assert_false(is_new);
    assert_int_equal(vt_strings_intern(&s, "trai", 4, &is_new), 3); /* a prefix is another string */
    assert_int_equal(vt_strings_intern(&s, "", 0, &is_new), 4);
    char name[32];
    for (int i = 0; i < 1000; i++) {
        int n = snprintf(name, sizeof name, "phase-%d", i);
        assert_int_equal(vt_strings_intern(&s, name, (size_t)n, &is_new), 5 + i);
    }
    assert_int_equal(vt_strings_intern(&s, "phase-500", 9, &is_new), 505);
    vt_strings_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uvarint_round_trip),
        cmocka_unit_test(test_zigzag_round_trip),
        cmocka_unit_test(test_shifted_round_trip),
        cmocka_unit_test(test_encoder_output_decodes),
        cmocka_unit_test(test_part_records),
        cmocka_unit_test(test_time_slack),
        cmocka_unit_test(test_chunk_framing),
        cmocka_unit_test(test_encoder_truncation),
        cmocka_unit_test(test_streamed_chunks),
        cmocka_unit_test(test_trie_dedup_and_prefix_sharing),
        cmocka_unit_test(test_string_interning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
