/*
 * Python frames in the trace format, without a Python: the writer's
 * renumbering of code ids (python_codes.c), the reader's PY_CODE records
 * (order checked, bad input an error with a byte offset) and the analyzer's
 * resolution of tagged ips (python_frames.c through vt_symbolize).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "python_codes.h"
#include "symbolize.h"
#include "trace_encoder.h"
#include "trace_reader.h"

struct built {
    struct vt_encoder enc;
    struct vt_bytes file, frame;
};

static void begin(struct built *b)
{
    memset(b, 0, sizeof *b);
    vt_encoder_init(&b->enc);
    assert_true(vt_bytes_reserve(&b->file, VT_PREAMBLE_SIZE));
    vt_encode_preamble(b->file.data, b->enc.time_unit_ns);
    b->file.len = VT_PREAMBLE_SIZE;
    struct vt_process_info p = {.pid = 7, .hostname = "h", .exe = "python3",
                                 .tool_version = "t", .stack_depth = 64};
    vt_encode_process(&b->enc, &p);
}

static void end(struct built *b)
{
    assert_int_equal(vt_chunk_frame(&b->enc, NULL, &b->frame), 0);
    assert_true(vt_bytes_reserve(&b->file, b->frame.len));
    memcpy(b->file.data + b->file.len, b->frame.data, b->frame.len);
    b->file.len += b->frame.len;
}

static void release(struct built *b)
{
    vt_encoder_free(&b->enc);
    vt_bytes_free(&b->file);
    vt_bytes_free(&b->frame);
}

/* Reads every record; returns the last next() result. */
static int read_all(struct vt_reader *r, unsigned *py_codes)
{
    struct vt_record rec;
    int rc;
    *py_codes = 0;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        if (rec.type == VT_REC_PY_CODE)
            (*py_codes)++;
    return rc;
}

static void test_writer_renumbers_in_order_of_use(void **state)
{
    (void)state;
    struct vt_encoder enc;
    vt_encoder_init(&enc);
    vt_py_codes_reset();
    uint64_t scratch[8];
    const uint64_t native[2] = {0x401000, 0x402000};
    assert_ptr_equal(vt_py_codes_prepare(&enc, native, 2, scratch), native);
    assert_int_equal(enc.records, 0);

    /* Recorder ids 7, 3, 7: the file calls them 1, 2, 1. */
    const uint64_t ips[4] = {0x401000, vt_py_frame_ip(7, 12), vt_py_frame_ip(3, 40),
                             vt_py_frame_ip(7, 99)};
    const uint64_t *out = vt_py_codes_prepare(&enc, ips, 4, scratch);
    assert_ptr_equal(out, scratch);
    assert_int_equal(out[0], 0x401000);
    assert_int_equal(out[1], vt_py_frame_ip(1, 12));
    assert_int_equal(out[2], vt_py_frame_ip(2, 40));
    assert_int_equal(out[3], vt_py_frame_ip(1, 99));
    assert_int_equal(enc.records, 2); /* one PY_CODE per code, once */
    out = vt_py_codes_prepare(&enc, ips + 2, 1, scratch);
    assert_int_equal(out[0], vt_py_frame_ip(2, 40));
    assert_int_equal(enc.records, 2);

    /* A new file describes its codes again, from 1. */
    vt_py_codes_reset();
    out = vt_py_codes_prepare(&enc, ips + 2, 1, scratch);
    assert_int_equal(out[0], vt_py_frame_ip(1, 40));
    assert_int_equal(enc.records, 3);
    vt_encoder_free(&enc);
    vt_py_codes_reset();
}

static void test_reader_and_symbolizer(void **state)
{
    (void)state;
    struct built b;
    begin(&b);
    vt_encode_py_code(&b.enc, 1, "Model.forward", 13, "/src/train.py", 13, 20);
    vt_encode_py_code(&b.enc, 2, "<module>", 8, "/src/train.py", 13, 1);
    vt_encode_stack_node(&b.enc, 0, vt_py_frame_ip(2, 77));  /* node 1 */
    vt_encode_stack_node(&b.enc, 1, vt_py_frame_ip(1, 25));  /* node 2 */
    vt_encode_stack_node(&b.enc, 2, vt_py_frame_ip(9, 5));   /* node 3: code 9 undescribed */
    end(&b);

    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "mem", &r, &err), 0);
    unsigned n;
    assert_int_equal(read_all(r, &n), 0);
    assert_int_equal(n, 2);
    const struct vt_py_code_info *c = vt_reader_py_code(r, 1);
    assert_non_null(c);
    assert_string_equal(c->qualname, "Model.forward");
    assert_string_equal(c->filename, "/src/train.py");
    assert_int_equal(c->first_line, 20);
    assert_null(vt_reader_py_code(r, 0));
    assert_null(vt_reader_py_code(r, 3));

    struct vt_symbolize_options opt = {.disabled = true};
    struct vt_symbolizer *s = vt_symbolizer_new(r, &opt);
    assert_non_null(s);
    const struct vt_frame *f;
    assert_int_equal(vt_symbolize(s, vt_py_frame_ip(1, 25), &f), 1);
    assert_string_equal(f->function, "Model.forward");
    assert_string_equal(f->file, "/src/train.py");
    assert_int_equal(f->line, 25);
    assert_string_equal(f->module, "python");
    assert_int_equal(vt_symbolize(s, vt_py_frame_ip(9, 5), &f), 1);
    assert_non_null(strstr(f->function, "not described"));
    assert_null(f->file);
    assert_int_equal(f->line, 5);
    assert_string_equal(f->module, "python");
    vt_symbolizer_free(s);
    vt_reader_close(r);
    release(&b);
}

static void test_reader_refuses_out_of_order_ids(void **state)
{
    (void)state;
    struct built b;
    begin(&b);
    vt_encode_py_code(&b.enc, 2, "f", 1, "x.py", 4, 1);
    end(&b);
    struct vt_reader *r;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_memory(b.file.data, b.file.len, "mem", &r, &err), 0);
    unsigned n;
    assert_int_equal(read_all(r, &n), -1);
    const char *msg = vt_reader_error(r)->message;
    assert_non_null(strstr(msg, "mem: byte 16"));
    assert_non_null(strstr(msg, "python code id out of order"));
    vt_reader_close(r);
    release(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_renumbers_in_order_of_use),
        cmocka_unit_test(test_reader_and_symbolizer),
        cmocka_unit_test(test_reader_refuses_out_of_order_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
