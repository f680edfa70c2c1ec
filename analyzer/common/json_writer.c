/* A small streaming JSON writer; see json_writer.h. */
#include "json_writer.h"

#include <math.h>
#include <string.h>

void vt_json_init(struct vt_json *j, FILE *out, bool pretty)
{
    j->depth = 0;
    j->pretty = pretty;
    j->after_key = false;
    memset(j->has_items, 0, sizeof j->has_items);
    vt_out_buffer_init(&j->buf, out);
}

static void put(struct vt_json *j, const void *s, size_t n)
{
    vt_out_buffer_put(&j->buf, s, n);
}

static void put_char(struct vt_json *j, char c)
{
    vt_out_buffer_byte(&j->buf, (unsigned char)c);
}

/* A value has ended: at the top level the FILE gets the document now, so
 * that whatever the caller writes next comes after it. */
static void value_done(struct vt_json *j)
{
    if (j->depth == 0)
        vt_out_buffer_flush(&j->buf);
}

static void indent(struct vt_json *j)
{
    if (!j->pretty)
        return;
    size_t n = 2 * (size_t)j->depth;
    unsigned char *p = vt_out_buffer_room(&j->buf, n + 1);
    p[0] = '\n';
    memset(p + 1, ' ', n);
    j->buf.used += n + 1;
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
            put_char(j, ',');
        j->has_items[j->depth] = true;
        indent(j);
    }
}

static void open_level(struct vt_json *j, char c)
{
    before_item(j);
    put_char(j, c);
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
    put_char(j, c);
    value_done(j);
}

void vt_json_begin_object(struct vt_json *j) { open_level(j, '{'); }
void vt_json_end_object(struct vt_json *j) { close_level(j, '}'); }
void vt_json_begin_array(struct vt_json *j) { open_level(j, '['); }
void vt_json_end_array(struct vt_json *j) { close_level(j, ']'); }

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

/* 1 for a byte written as it is inside a string: printable ASCII but the
 * quote and the backslash. Everything else is looked at one by one. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20: '"' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50: '\\' */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, /* 0x70: DEL */
    /* 0x80-0xff: part of a UTF-8 sequence, checked */
};

/* The escape of a byte that is not plain and not part of a valid UTF-8
 * sequence; returns its length. */
static size_t escape_of(unsigned char c, char out[6])
{
    static const char hex[] = "0123456789abcdef";
    const char *two = NULL;
    switch (c) {
    case '"': two = "\\\""; break;
    case '\\': two = "\\\\"; break;
    case '\n': two = "\\n"; break;
    case '\r': two = "\\r"; break;
    case '\t': two = "\\t"; break;
    case '\b': two = "\\b"; break;
    case '\f': two = "\\f"; break;
    default: break;
    }
    if (two) {
        memcpy(out, two, 2);
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        memcpy(out, "\\u00", 4);
        out[4] = hex[c >> 4];
        out[5] = hex[c & 0xf];
        return 6;
    }
    memcpy(out, "\\ufffd", 6); /* a byte of no valid UTF-8 sequence */
    return 6;
}

/* s as a JSON string literal, copied in runs of plain bytes. */
static void put_escaped(struct vt_json *j, const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    put_char(j, '"');
    size_t i = 0;
    while (i < len) {
        size_t end = i;
        while (end < len && plain_byte[s[end]])
            end++;
        put(j, s + i, end - i);
        if (end == len)
            break;
        i = end;
        size_t n = s[i] >= 0x80 ? utf8_len(s + i, len - i) : 0;
        if (n > 0) {
            put(j, s + i, n);
            i += n;
        } else {
            char esc[6];
            put(j, esc, escape_of(s[i], esc));
            i++;
        }
    }
    put_char(j, '"');
}

void vt_json_write_escaped(FILE *out, const char *s, size_t len)
{
    struct vt_json j;
    vt_json_init(&j, out, false);
    put_escaped(&j, s, len);
    vt_out_buffer_flush(&j.buf);
}

void vt_json_key(struct vt_json *j, const char *key)
{
    before_item(j);
    put_escaped(j, key, strlen(key));
    if (j->pretty)
        put(j, ": ", 2);
    else
        put_char(j, ':');
    j->after_key = true;
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
    put_escaped(j, s, len);
    value_done(j);
}

/* The decimal digits of v, at least min_digits of them (zeros in front),
 * ending at end; returns where they begin. */
static char *digits(char *end, uint64_t v, unsigned min_digits)
{
    char *p = end;
    unsigned n = 0;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
        n++;
    } while (v || n < min_digits);
    return p;
}

static void put_uint(struct vt_json *j, uint64_t v)
{
    char tmp[20];
    char *p = digits(tmp + sizeof tmp, v, 1);
    put(j, p, (size_t)(tmp + sizeof tmp - p));
}

void vt_json_uint(struct vt_json *j, uint64_t v)
{
    before_item(j);
    put_uint(j, v);
    value_done(j);
}

void vt_json_int(struct vt_json *j, int64_t v)
{
    before_item(j);
    if (v < 0) {
        put_char(j, '-');
        put_uint(j, (uint64_t)-(v + 1) + 1); /* INT64_MIN too */
    } else {
        put_uint(j, (uint64_t)v);
    }
    value_done(j);
}

void vt_json_double(struct vt_json *j, double v)
{
    before_item(j);
    if (isfinite(v)) {
        char tmp[32];
        int n = snprintf(tmp, sizeof tmp, "%.6g", v);
        put(j, tmp, n > 0 ? (size_t)n : 0);
    } else {
        put(j, "null", 4); /* JSON has no NaN or infinity */
    }
    value_done(j);
}

void vt_json_fixed(struct vt_json *j, uint64_t v, unsigned decimals)
{
    before_item(j);
    if (decimals > 19)
        decimals = 19; /* 10^19 is the largest power of ten in 64 bits */
    uint64_t scale = 1;
    for (unsigned i = 0; i < decimals; i++)
        scale *= 10;
    char tmp[42];
    char *end = tmp + sizeof tmp;
    char *p = end;
    if (decimals > 0) {
        p = digits(end, v % scale, decimals);
        *--p = '.';
    }
    p = digits(p, v / scale, 1);
    put(j, p, (size_t)(end - p));
    value_done(j);
}

void vt_json_bool(struct vt_json *j, bool v)
{
    before_item(j);
    if (v)
        put(j, "true", 4);
    else
        put(j, "false", 5);
    value_done(j);
}

void vt_json_null(struct vt_json *j)
{
    before_item(j);
    put(j, "null", 4);
    value_done(j);
}

void vt_json_newline(struct vt_json *j)
{
    put_char(j, '\n');
    value_done(j);
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
