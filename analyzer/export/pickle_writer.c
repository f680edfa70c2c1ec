/* A data-only pickle writer for memory_viz; see pickle_writer.h. */
#include "pickle_writer.h"

#include <stddef.h>
#include <string.h>

enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_BINFLOAT = 'G',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_NONE = 'N',
    OP_BINUNICODE = 'X',
    OP_EMPTY_LIST = ']',
    OP_APPENDS = 'e',
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
    OP_SETITEMS = 'u',
    OP_EMPTY_DICT = '}',
    OP_PROTO = 0x80,
    OP_TUPLE2 = 0x86,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_SHORT_BINUNICODE = 0x8c,
    OP_MEMOIZE = 0x94,
};

static unsigned char *room(struct vt_pickle_writer *w, size_t n)
{
    return vt_out_buffer_room(&w->buf, n);
}

static void op(struct vt_pickle_writer *w, int code)
{
    vt_out_buffer_byte(&w->buf, (unsigned char)code);
}

static void le(struct vt_pickle_writer *w, uint64_t v, int bytes)
{
    unsigned char *p = room(w, (size_t)bytes);
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i) & 0xff);
    w->buf.used += (size_t)bytes;
}

/* One more item in the innermost open container; a full batch is closed
 * and a new one opened first (for a dict only between pairs). */
static void item(struct vt_pickle_writer *w)
{
    int d = w->depth - 1;
    if (d < 0 || d >= VT_PW_MAX_DEPTH)
        return;
    size_t n = w->open[d].items;
    if (n >= VT_PW_BATCH && n % 2 == 0 && n >= (w->open[d].dict ? 2 * VT_PW_BATCH : VT_PW_BATCH)) {
        unsigned char *p = room(w, 2);
        p[0] = w->open[d].dict ? OP_SETITEMS : OP_APPENDS;
        p[1] = OP_MARK;
        w->buf.used += 2;
        n = 0;
    }
    w->open[d].items = n + 1;
}

void vt_pw_begin(struct vt_pickle_writer *w, FILE *out)
{
    memset(w, 0, offsetof(struct vt_pickle_writer, buf)); /* not the buffer */
    vt_out_buffer_init(&w->buf, out);
    op(w, OP_PROTO);
    op(w, 4);
}

bool vt_pw_end(struct vt_pickle_writer *w)
{
    op(w, OP_STOP);
    vt_out_buffer_flush(&w->buf);
    return w->depth == 0 && !w->overflow && !ferror(w->buf.out);
}

static void begin(struct vt_pickle_writer *w, bool dict)
{
    item(w);
    op(w, dict ? OP_EMPTY_DICT : OP_EMPTY_LIST);
    op(w, OP_MARK);
    if (w->depth < VT_PW_MAX_DEPTH) {
        w->open[w->depth].dict = dict;
        w->open[w->depth].items = 0;
    } else
        w->overflow = true;
    w->depth++;
}

static void end(struct vt_pickle_writer *w, bool dict)
{
    op(w, dict ? OP_SETITEMS : OP_APPENDS);
    if (w->depth > 0)
        w->depth--;
    else
        w->overflow = true;
}

void vt_pw_dict_begin(struct vt_pickle_writer *w) { begin(w, true); }
void vt_pw_dict_end(struct vt_pickle_writer *w) { end(w, true); }
void vt_pw_list_begin(struct vt_pickle_writer *w) { begin(w, false); }
void vt_pw_list_end(struct vt_pickle_writer *w) { end(w, false); }

/* An opcode and the low `bytes` bytes of v, little-endian. */
static void op_le(struct vt_pickle_writer *w, int code, uint64_t v, int bytes)
{
    unsigned char *p = room(w, 9);
    p[0] = (unsigned char)code;
    for (int i = 0; i < 8; i++) /* all 8: past `bytes` is overwritten next */
        p[1 + i] = (unsigned char)(v >> (8 * i));
    w->buf.used += 1 + (size_t)bytes;
}

/* An integer without counting it as an item. */
static void raw_int(struct vt_pickle_writer *w, int64_t v)
{
    if (v >= 0 && v < 0x100) {
        op_le(w, OP_BININT1, (uint64_t)v, 1);
    } else if (v >= 0 && v < 0x10000) {
        op_le(w, OP_BININT2, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        op_le(w, OP_BININT, (uint64_t)v, 4);
    } else {
        /* Two's complement, little-endian, as few bytes as keep the sign:
         * at most 8, which the JavaScript unpickler reads as a Number. The
         * magnitude's bits (v's, or ~v's when negative) and a sign bit. */
        uint64_t m = v < 0 ? ~(uint64_t)v : (uint64_t)v; /* not 0: |v| >= 2^31 */
        int bits = 64 - __builtin_clzll(m);
        int bytes = bits / 8 + 1;
        unsigned char *p = room(w, 2);
        p[0] = OP_LONG1;
        p[1] = (unsigned char)bytes;
        w->buf.used += 2;
        le(w, (uint64_t)v, bytes);
    }
}

void vt_pw_int_pair(struct vt_pickle_writer *w, int64_t a, int64_t b)
{
    item(w);
    raw_int(w, a);
    raw_int(w, b);
    op(w, OP_TUPLE2);
}

void vt_pw_int(struct vt_pickle_writer *w, int64_t v)
{
    item(w);
    raw_int(w, v);
}

void vt_pw_str(struct vt_pickle_writer *w, const char *s)
{
    item(w);
    size_t n = strlen(s);
    if (n < 0x100) {
        op(w, OP_SHORT_BINUNICODE);
        le(w, n, 1);
    } else {
        op(w, OP_BINUNICODE);
        le(w, n, 4);
    }
    vt_out_buffer_put(&w->buf, s, n);
}

void vt_pw_bool(struct vt_pickle_writer *w, bool v)
{
    item(w);
    op(w, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void vt_pw_none(struct vt_pickle_writer *w)
{
    item(w);
    op(w, OP_NONE);
}

void vt_pw_float(struct vt_pickle_writer *w, double v)
{
    item(w);
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    op(w, OP_BINFLOAT);
    unsigned char *p = room(w, 8);
    for (int i = 0; i < 8; i++) /* big-endian */
        p[i] = (unsigned char)(bits >> (8 * (7 - i)) & 0xff);
    w->buf.used += 8;
}

uint64_t vt_pw_memoize(struct vt_pickle_writer *w)
{
    op(w, OP_MEMOIZE);
    return w->memo++;
}

void vt_pw_get(struct vt_pickle_writer *w, uint64_t index)
{
    item(w);
    if (index < 0x100)
        op_le(w, OP_BINGET, index, 1);
    else
        op_le(w, OP_LONG_BINGET, index, 4);
}

void vt_pw_kv_str(struct vt_pickle_writer *w, const char *key, const char *s)
{
    vt_pw_str(w, key);
    vt_pw_str(w, s);
}

void vt_pw_kv_int(struct vt_pickle_writer *w, const char *key, int64_t v)
{
    vt_pw_str(w, key);
    vt_pw_int(w, v);
}
