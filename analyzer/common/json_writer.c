/* A small streaming JSON writer; see json_writer.h. */
#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

void vt_json_init(struct vt_json *j, FILE *out, bool pretty)
{
    memset(j, 0, sizeof *j);
    j->out = out;
    j->pretty = pretty;
}

static void indent(struct vt_json *j)
{
    if (!j->pretty)
        return;
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; i++)
        fputs("  ", j->out);
}

/* Separator before a value or a key at the current level. */
static void before_item(struct vt_json *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->depth > 0) {
        if (j->has_items[j->depth])
            fputc(',', j->out);
        j->has_items[j->depth] = true;
        indent(j);
    }
}

static void open_level(struct vt_json *j, char c)
{
    before_item(j);
    fputc(c, j->out);
    if (j->depth < VT_JSON_MAX_DEPTH - 1)
        j->depth++;
    j->has_items[j->depth] = false;
}

static void close_level(struct vt_json *j, char c)
{
    bool had = j->has_items[j->depth];
    if (j->depth > 0)
        j->depth--;
    if (had)
        indent(j);
    fputc(c, j->out);
}

void vt_json_begin_object(struct vt_json *j) { open_level(j, '{'); }
void vt_json_end_object(struct vt_json *j) { close_level(j, '}'); }
void vt_json_begin_array(struct vt_json *j) { open_level(j, '['); }
void vt_json_end_array(struct vt_json *j) { close_level(j, ']'); }

void vt_json_key(struct vt_json *j, const char *key)
{
    before_item(j);
    vt_json_write_escaped(j->out, key, strlen(key));
    fputs(j->pretty ? ": " : ":", j->out);
    j->after_key = true;
}

/* Length of a valid UTF-8 sequence at s (1..4), or 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0; /* overlong or surrogate */
    return n;
}

void vt_json_write_escaped(FILE *out, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        switch (c) {
        case '"': fputs("\\\"", out); i++; continue;
        case '\\': fputs("\\\\", out); i++; continue;
        case '\n': fputs("\\n", out); i++; continue;
        case '\r': fputs("\\r", out); i++; continue;
        case '\t': fputs("\\t", out); i++; continue;
        case '\b': fputs("\\b", out); i++; continue;
        case '\f': fputs("\\f", out); i++; continue;
        default: break;
        }
        if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            i++;
            continue;
        }
        size_t n = utf8_len(s + i, len - i);
        if (n == 0) {
            fputs("\\ufffd", out);
            i++;
            continue;
        }
        fwrite(s + i, 1, n, out);
        i += n;
    }
    fputc('"', out);
}

void vt_json_string(struct vt_json *j, const char *s)
{
    if (!s) {
        vt_json_null(j);
        return;
    }
    vt_json_stringn(j, s, strlen(s));
}

void vt_json_stringn(struct vt_json *j, const char *s, size_t len)
{
    before_item(j);
    vt_json_write_escaped(j->out, s, len);
}

void vt_json_uint(struct vt_json *j, uint64_t v)
{
    before_item(j);
    fprintf(j->out, "%" PRIu64, v);
}

void vt_json_int(struct vt_json *j, int64_t v)
{
    before_item(j);
    fprintf(j->out, "%" PRId64, v);
}

void vt_json_double(struct vt_json *j, double v)
{
    before_item(j);
    if (isfinite(v))
        fprintf(j->out, "%.6g", v);
    else
        fputs("null", j->out); /* JSON has no NaN or infinity */
}

void vt_json_fixed(struct vt_json *j, uint64_t v, unsigned decimals)
{
    before_item(j);
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals && i < 19; i++)
        scale *= 10;
    if (scale == 1)
        fprintf(j->out, "%" PRIu64, v);
    else
        fprintf(j->out, "%" PRIu64 ".%0*" PRIu64, v / scale, (int)(decimals < 19 ? decimals : 19),
                v % scale);
}

void vt_json_bool(struct vt_json *j, bool v)
{
    before_item(j);
    fputs(v ? "true" : "false", j->out);
}

void vt_json_null(struct vt_json *j)
{
    before_item(j);
    fputs("null", j->out);
}

void vt_json_newline(struct vt_json *j)
{
    fputc('\n', j->out);
}

void vt_json_kv_string(struct vt_json *j, const char *key, const char *s)
{
    vt_json_key(j, key);
    vt_json_string(j, s);
}

void vt_json_kv_uint(struct vt_json *j, const char *key, uint64_t v)
{
    vt_json_key(j, key);
    vt_json_uint(j, v);
}

void vt_json_kv_int(struct vt_json *j, const char *key, int64_t v)
{
    vt_json_key(j, key);
    vt_json_int(j, v);
}

void vt_json_kv_double(struct vt_json *j, const char *key, double v)
{
    vt_json_key(j, key);
    vt_json_double(j, v);
}

void vt_json_kv_bool(struct vt_json *j, const char *key, bool v)
{
    vt_json_key(j, key);
    vt_json_bool(j, v);
}

void vt_json_kv_uint_or_null(struct vt_json *j, const char *key, bool known, uint64_t v)
{
    vt_json_key(j, key);
    if (known)
        vt_json_uint(j, v);
    else
        vt_json_null(j);
}

void vt_json_kv_int_or_null(struct vt_json *j, const char *key, bool known, int64_t v)
{
    vt_json_key(j, key);
    if (known)
        vt_json_int(j, v);
    else
        vt_json_null(j);
}
