/*
 * A small streaming JSON writer: commas, nesting and string escaping done
 * once. Strings from traces are arbitrary bytes (paths, thread names), so
 * the writer emits valid UTF-8 JSON whatever it is given: control
 * characters are escaped and bytes that are not valid UTF-8 become U+FFFD.
 *
 * A document of megabytes is millions of keys and values, so the writer
 * fills a buffer of its own and hands the FILE whole blocks: the FILE has
 * everything once a top-level value has ended (or at vt_json_newline at the
 * top level), and not before. A caller writes to the FILE itself only
 * between top-level values; whitespace inside a document goes through
 * vt_json_newline.
 */
#ifndef VRAMTRACE_COMMON_JSON_WRITER_H
#define VRAMTRACE_COMMON_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "out_buffer.h"

#define VT_JSON_MAX_DEPTH 64

struct vt_json {
    int depth;
    bool pretty;
    bool after_key;
    bool has_items[VT_JSON_MAX_DEPTH];
    struct vt_out_buffer buf;
};

void vt_json_init(struct vt_json *j, FILE *out, bool pretty);
void vt_json_begin_object(struct vt_json *j);
void vt_json_end_object(struct vt_json *j);
void vt_json_begin_array(struct vt_json *j);
void vt_json_end_array(struct vt_json *j);
/* A key inside an object; the next value call is its value. */
void vt_json_key(struct vt_json *j, const char *key);
void vt_json_string(struct vt_json *j, const char *s); /* NULL -> null */
void vt_json_stringn(struct vt_json *j, const char *s, size_t len);
void vt_json_uint(struct vt_json *j, uint64_t v);
void vt_json_int(struct vt_json *j, int64_t v);
void vt_json_double(struct vt_json *j, double v);
/* v / 10^decimals written exactly with that many decimals ("12.345"):
 * microseconds from nanoseconds, without a double's rounding. */
void vt_json_fixed(struct vt_json *j, uint64_t v, unsigned decimals);
void vt_json_bool(struct vt_json *j, bool v);
void vt_json_null(struct vt_json *j);
/* A key and its value in one call. */
void vt_json_kv_string(struct vt_json *j, const char *key, const char *s);
void vt_json_kv_uint(struct vt_json *j, const char *key, uint64_t v);
void vt_json_kv_int(struct vt_json *j, const char *key, int64_t v);
void vt_json_kv_double(struct vt_json *j, const char *key, double v);
void vt_json_kv_bool(struct vt_json *j, const char *key, bool v);
/* v when known, else null: a figure the input did not give. */
void vt_json_kv_uint_or_null(struct vt_json *j, const char *key, bool known, uint64_t v);
void vt_json_kv_int_or_null(struct vt_json *j, const char *key, bool known, int64_t v);
/* A newline: after a top-level value (JSON lines; the FILE then has the
 * document), or between the items of a value, where it is whitespace. */
void vt_json_newline(struct vt_json *j);

/* Writes s as a JSON string literal (with quotes) to out. */
void vt_json_write_escaped(FILE *out, const char *s, size_t len);

#endif
