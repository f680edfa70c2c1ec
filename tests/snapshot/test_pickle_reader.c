/* The data-only pickle reader on byte streams written by hand (opcode by
 * opcode, values chosen so that every decoding path shows): numbers of
 * every width and sign, floats, strings, containers, memo sharing, and
 * the refusals with their byte offsets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "pickle_reader.h"

static struct vt_pickle_doc *parse_ok(const char *bytes, size_t len)
{
    struct vt_pickle_doc *doc;
    char err[256];
    int rc = vt_pickle_parse((const uint8_t *)bytes, len, "t", &doc, err, sizeof err);
    if (rc)
        fail_msg("%s", err);
    return doc;
}

static void parse_err(const char *bytes, size_t len, const char *want)
{
    struct vt_pickle_doc *doc;
    char err[256];
    assert_int_equal(vt_pickle_parse((const uint8_t *)bytes, len, "t", &doc, err, sizeof err), -1);
    if (!strstr(err, want))
        fail_msg("'%s' does not contain '%s'", err, want);
}

/* {"a": [BININT -2, BININT1 200, BININT2 65535, LONG1(3 bytes) -8388608,
 *        LONG1(8 bytes) 139833534054400, BINFLOAT 1.5, True, None],
 *  "b": (SHORT_BINUNICODE "xy", BINGET 0 -> the same list)} */
static void test_values(void **state)
{
    (void)state;
    static const char p[] =
        "\x80\x04}"                          /* PROTO 4, EMPTY_DICT */
        "(\x8c\x01" "a"                      /* MARK, "a" */
        "]\x94"                              /* EMPTY_LIST, MEMOIZE -> memo 0 */
        "(J\xfe\xff\xff\xff"                 /* BININT -2 */
        "K\xc8"                              /* BININT1 200 */
        "M\xff\xff"                          /* BININT2 65535 */
        "\x8a\x03\x00\x00\x80"               /* LONG1 -8388608 */
        "\x8a\x08\x00\x00\x00\x00\x2d\x7f\x00\x00" /* LONG1 0x7f2d00000000 */
        "G\x3f\xf8\x00\x00\x00\x00\x00\x00"  /* BINFLOAT 1.5 */
        "\x88N"                              /* NEWTRUE, NONE */
        "e"                                  /* APPENDS */
        "\x8c\x01" "b"
        "\x8c\x02" "xyh\x00\x86"             /* "xy", BINGET 0, TUPLE2 */
        "u.";                                /* SETITEMS, STOP */
    struct vt_pickle_doc *doc = parse_ok(p, sizeof p - 1);
    const struct vt_pickle_value *root = vt_pickle_doc_root(doc);
    assert_int_equal(root->type, VT_PICKLE_DICT);
    const struct vt_pickle_value *a = vt_pickle_dict_get(root, "a");
    assert_int_equal(a->type, VT_PICKLE_LIST);
    assert_int_equal(a->n, 8);
    assert_int_equal(a->items[0]->i, -2);
    assert_int_equal(a->items[1]->i, 200);
    assert_int_equal(a->items[2]->i, 65535);
    assert_int_equal(a->items[3]->i, -8388608);
    assert_int_equal(a->items[4]->i, 0x7f2d00000000ll);
    assert_true(a->items[5]->type == VT_PICKLE_FLOAT && a->items[5]->f == 1.5);
    assert_true(a->items[6]->type == VT_PICKLE_BOOL && a->items[6]->b);
    assert_int_equal(a->items[7]->type, VT_PICKLE_NONE);
    const struct vt_pickle_value *b = vt_pickle_dict_get(root, "b");
    assert_int_equal(b->type, VT_PICKLE_TUPLE);
    assert_string_equal(b->items[0]->s, "xy");
    assert_ptr_equal(b->items[1], a); /* memoized: the same object, as in Python */
    assert_int_equal(a->items[0]->offset, 10); /* BININT's byte offset */
    vt_pickle_doc_free(doc);
}

/* LONG1 of 9 bytes: fits when the 9th byte is sign extension, else big. */
static void test_long_widths(void **state)
{
    (void)state;
    static const char fits[] = "\x80\x04\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\xff.";
    struct vt_pickle_doc *doc = parse_ok(fits, sizeof fits - 1);
    assert_false(vt_pickle_doc_root(doc)->big);
    assert_int_equal(vt_pickle_doc_root(doc)->i, -1);
    vt_pickle_doc_free(doc);
    static const char big[] = "\x80\x04\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.";
    doc = parse_ok(big, sizeof big - 1);
    assert_true(vt_pickle_doc_root(doc)->big);
    vt_pickle_doc_free(doc);
}

static void test_refusals(void **state)
{
    (void)state;
    parse_err("\x80\x04" "cos\nsystem\n.", 13, "byte 2: opcode GLOBAL");
    parse_err("\x80\x04NN\x93.", 6, "byte 4: opcode STACK_GLOBAL");
    parse_err("\x80\x04N)R.", 6, "byte 4: opcode REDUCE");
    parse_err("\x80\x04h\x00.", 5, "no such memo entry");
    parse_err("\x80\x04X\x10\x00\x00\x00" "ab.", 10, "runs past the end");
    parse_err("\x80\x04N", 3, "without STOP");
    parse_err("N.", 2, "not a pickle");
    parse_err("\x80\x04" "e.", 4, "without a MARK");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_long_widths),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
