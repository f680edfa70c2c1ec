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

static void test_structure(void **state)
{
    (void)state;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    struct vt_json j;
    vt_json_init(&j, f, false);
    vt_json_begin_object(&j);
    vt_json_key(&j, "a");
    vt_json_uint(&j, 18446744073709551615ull);
    vt_json_key(&j, "b");
    vt_json_begin_array(&j);
    vt_json_int(&j, -3);
    vt_json_null(&j);
    vt_json_bool(&j, true);
    vt_json_string(&j, NULL);
    vt_json_begin_object(&j);
    vt_json_end_object(&j);
    vt_json_end_array(&j);
    vt_json_key(&j, "c\"");
    vt_json_double(&j, 1.0 / 0.0);
    vt_json_end_object(&j);
    fclose(f);
    assert_string_equal(buf, "{\"a\":18446744073709551615,\"b\":[-3,null,true,null,{}],\"c\\\"\":null}");
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_structure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
