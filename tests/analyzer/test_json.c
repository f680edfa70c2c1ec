/* The JSON writer: escaping and structure. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_writer.h"

static char *escaped(const char *s, size_t len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    vt_json_write_escaped(f, s, len);
    fclose(f);
    return buf;
}

static void check(const char *in, size_t len, const char *want)
{
    char *got = escaped(in, len);
    assert_string_equal(got, want);
    free(got);
}

static void test_escaping(void **state)
{
    (void)state;
    check("plain", 5, "\"plain\"");
    check("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    check("l1\nl2\tx\r", 8, "\"l1\\nl2\\tx\\r\"");
    check("\x01\x1f\x7f", 3, "\"\\u0001\\u001f\\u007f\"");
    check("nul\0x", 5, "\"nul\\u0000x\"");
    check("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");          /* valid UTF-8 kept */
    check("bad\xff\xc3", 5, "\"bad\\ufffd\\ufffd\"");    /* invalid bytes replaced */
    check("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\""); /* a surrogate is invalid */
    check("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"");          /* overlong */
}

/* A compact document written into memory. */
struct doc {
    char *text;
    size_t len;
    FILE *f;
    struct vt_json j;
};

static void doc_open(struct doc *d)
{
    d->text = NULL;
    d->len = 0;
    d->f = open_memstream(&d->text, &d->len);
    assert_non_null(d->f);
    vt_json_init(&d->j, d->f, false);
}

/* Closes the stream, compares what it holds, frees it. */
static void doc_check(struct doc *d, const char *want)
{
    fclose(d->f);
    assert_string_equal(d->text, want);
    free(d->text);
}

static void test_structure(void **state)
{
    (void)state;
    struct doc d;
    doc_open(&d);
    struct vt_json *j = &d.j;
    vt_json_begin_object(j);
    vt_json_key(j, "a");
    vt_json_uint(j, 18446744073709551615ull);
    vt_json_key(j, "b");
    vt_json_begin_array(j);
    vt_json_int(j, -3);
    vt_json_null(j);
    vt_json_bool(j, true);
    vt_json_string(j, NULL);
    vt_json_begin_object(j);
    vt_json_end_object(j);
    vt_json_end_array(j);
    vt_json_key(j, "c\"");
    vt_json_double(j, 1.0 / 0.0);
    vt_json_end_object(j);
    doc_check(&d, "{\"a\":18446744073709551615,\"b\":[-3,null,true,null,{}],\"c\\\"\":null}");
}

static void test_numbers(void **state)
{
    (void)state;
    struct doc d;
    doc_open(&d);
    struct vt_json *j = &d.j;
    vt_json_begin_array(j);
    vt_json_uint(j, 0);
    vt_json_int(j, INT64_MIN);
    vt_json_int(j, INT64_MAX);
    vt_json_fixed(j, 12345, 3);
    vt_json_fixed(j, 5, 3);
    vt_json_fixed(j, 7, 0);
    vt_json_fixed(j, UINT64_MAX, 19);
    vt_json_fixed(j, 1, 25);
    vt_json_double(j, 0.1);
    vt_json_double(j, -1e300);
    vt_json_end_array(j);
    doc_check(&d, "[0,-9223372036854775808,9223372036854775807,12.345,0.005,7,"
                  "1.8446744073709551615,0.0000000000000000001,0.1,-1e+300]");
}

/* Longer than the writer's buffer, with escapes and UTF-8 across its
 * edges; the FILE has each top-level value as soon as it ends, so what the
 * caller writes between values stays between them. */
static void test_buffered(void **state)
{
    (void)state;
    enum { PIECES = VT_OUT_BUFFER_BYTES }; /* 3 or 4 bytes each */
    static char in[4 * PIECES], want[7 * PIECES + 64], plain[2 * PIECES];
    size_t len = 0, w = 0;
    want[w++] = '[';
    want[w++] = '"';
    for (size_t i = 0; i < PIECES; i++) {
        /* in: "a\"é" in turns with "b\nc"; out: a\"é and b\nc */
        const char *piece = i % 2 ? "b\nc" : "a\"\xc3\xa9";
        const char *out = i % 2 ? "b\\nc" : "a\\\"\xc3\xa9";
        size_t pl = strlen(piece), ol = strlen(out);
        memcpy(in + len, piece, pl);
        len += pl;
        memcpy(want + w, out, ol);
        w += ol;
    }
    memset(plain, 'z', sizeof plain); /* one run longer than the buffer */
    memcpy(want + w, "\",\"", 3);
    w += 3;
    memcpy(want + w, plain, sizeof plain);
    w += sizeof plain;
    const char *tail = "\"]X[1]\n";
    memcpy(want + w, tail, strlen(tail) + 1);
    w += strlen(tail);

    struct doc d;
    doc_open(&d);
    struct vt_json *j = &d.j;
    vt_json_begin_array(j);
    vt_json_stringn(j, in, len);
    vt_json_stringn(j, plain, sizeof plain);
    vt_json_end_array(j);
    fputc('X', d.f);
    vt_json_begin_array(j);
    vt_json_uint(j, 1);
    vt_json_end_array(j);
    vt_json_newline(j);
    fflush(d.f);
    assert_int_equal(d.len, w); /* all of it in the FILE before fclose */
    doc_check(&d, want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_buffered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
