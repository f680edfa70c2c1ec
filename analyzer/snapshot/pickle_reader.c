/* A data-only pickle reader: see pickle_reader.h for what it accepts and why. */
#include "pickle_reader.h"

#include "grow_array.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every pickle opcode (protocols 0-5): byte, name, and what we do with it.
 * DATA: understood here. CODE: would make Python import or call something:
 * refused as a security matter. OTHER: harmless but never written by
 * PyTorch's snapshot dumper, so not supported. */
#define VT_PICKLE_OPCODES(X)                                                                       \
    X(0x28, MARK, DATA)                                                                            \
    X(0x2e, STOP, DATA)                                                                            \
    X(0x30, POP, DATA)                                                                             \
    X(0x31, POP_MARK, DATA)                                                                        \
    X(0x32, DUP, DATA)                                                                             \
    X(0x46, FLOAT, OTHER)                                                                          \
    X(0x49, INT, OTHER)                                                                            \
    X(0x4a, BININT, DATA)                                                                          \
    X(0x4b, BININT1, DATA)                                                                         \
    X(0x4c, LONG, OTHER)                                                                           \
    X(0x4d, BININT2, DATA)                                                                         \
    X(0x4e, NONE, DATA)                                                                            \
    X(0x50, PERSID, CODE)                                                                          \
    X(0x51, BINPERSID, CODE)                                                                       \
    X(0x52, REDUCE, CODE)                                                                          \
    X(0x53, STRING, OTHER)                                                                         \
    X(0x54, BINSTRING, OTHER)                                                                      \
    X(0x55, SHORT_BINSTRING, OTHER)                                                                \
    X(0x56, UNICODE, OTHER)                                                                        \
    X(0x58, BINUNICODE, DATA)                                                                      \
    X(0x61, APPEND, DATA)                                                                          \
    X(0x62, BUILD, CODE)                                                                           \
    X(0x63, GLOBAL, CODE)                                                                          \
    X(0x64, DICT, DATA)                                                                            \
    X(0x7d, EMPTY_DICT, DATA)                                                                      \
    X(0x65, APPENDS, DATA)                                                                         \
    X(0x67, GET, OTHER)                                                                            \
    X(0x68, BINGET, DATA)                                                                          \
    X(0x69, INST, CODE)                                                                            \
    X(0x6a, LONG_BINGET, DATA)                                                                     \
    X(0x6c, LIST, DATA)                                                                            \
    X(0x5d, EMPTY_LIST, DATA)                                                                      \
    X(0x6f, OBJ, CODE)                                                                             \
    X(0x70, PUT, OTHER)                                                                            \
    X(0x71, BINPUT, DATA)                                                                          \
    X(0x72, LONG_BINPUT, DATA)                                                                     \
    X(0x73, SETITEM, DATA)                                                                         \
    X(0x74, TUPLE, DATA)                                                                           \
    X(0x29, EMPTY_TUPLE, DATA)                                                                     \
    X(0x75, SETITEMS, DATA)                                                                        \
    X(0x47, BINFLOAT, DATA)                                                                        \
    X(0x80, PROTO, DATA)                                                                           \
    X(0x81, NEWOBJ, CODE)                                                                          \
    X(0x82, EXT1, CODE)                                                                            \
    X(0x83, EXT2, CODE)                                                                            \
    X(0x84, EXT4, CODE)                                                                            \
    X(0x85, TUPLE1, DATA)                                                                          \
    X(0x86, TUPLE2, DATA)                                                                          \
    X(0x87, TUPLE3, DATA)                                                                          \
    X(0x88, NEWTRUE, DATA)                                                                         \
    X(0x89, NEWFALSE, DATA)                                                                        \
    X(0x8a, LONG1, DATA)                                                                           \
    X(0x8b, LONG4, DATA)                                                                           \
    X(0x42, BINBYTES, DATA)                                                                        \
    X(0x43, SHORT_BINBYTES, DATA)                                                                  \
    X(0x8c, SHORT_BINUNICODE, DATA)                                                                \
    X(0x8d, BINUNICODE8, DATA)                                                                     \
    X(0x8e, BINBYTES8, DATA)                                                                       \
    X(0x8f, EMPTY_SET, OTHER)                                                                      \
    X(0x90, ADDITEMS, OTHER)                                                                       \
    X(0x91, FROZENSET, OTHER)                                                                      \
    X(0x92, NEWOBJ_EX, CODE)                                                                       \
    X(0x93, STACK_GLOBAL, CODE)                                                                    \
    X(0x94, MEMOIZE, DATA)                                                                         \
    X(0x95, FRAME, DATA)                                                                           \
    X(0x96, BYTEARRAY8, OTHER)                                                                     \
    X(0x97, NEXT_BUFFER, OTHER)                                                                    \
    X(0x98, READONLY_BUFFER, OTHER)

enum vt_pickle_op {
#define AS_ENUM(byte, name, cls) OP_##name = byte,
    VT_PICKLE_OPCODES(AS_ENUM)
#undef AS_ENUM
};

enum vt_pickle_class { VT_PICKLE_UNKNOWN, VT_PICKLE_DATA, VT_PICKLE_CODE, VT_PICKLE_OTHER };

static enum vt_pickle_class opcode_class(uint8_t op)
{
    switch (op) {
#define AS_CLASS(byte, name, cls)                                                                  \
    case byte:                                                                                     \
        return VT_PICKLE_##cls;
        VT_PICKLE_OPCODES(AS_CLASS)
#undef AS_CLASS
    }
    return VT_PICKLE_UNKNOWN;
}

const char *vt_pickle_opcode_name(uint8_t op)
{
    switch (op) {
#define AS_NAME(byte, name, cls) \
    case byte:                   \
        return #name;
        VT_PICKLE_OPCODES(AS_NAME)
#undef AS_NAME
    }
    return NULL;
}

/* ---- arenas: nodes and string bytes live until vt_pickle_doc_free ---- */

#define NODE_CHUNK 4096
#define BYTE_CHUNK (256 * 1024)

struct node_chunk {
    struct node_chunk *next;
    size_t used;
    struct vt_pickle_value v[NODE_CHUNK];
};

struct byte_chunk {
    struct byte_chunk *next;
    size_t used, cap;
    char data[];
};

struct vt_pickle_doc {
    struct vt_pickle_value none, true_, false_, empty_tuple; /* shared constants */
    struct node_chunk *nodes;
    struct byte_chunk *bytes;
    const struct vt_pickle_value *root;
    size_t input_bytes; /* the pickle's size: what its consumers' work is sized by */
};

struct parser {
    struct vt_pickle_doc *doc;
    const uint8_t *p, *end, *start;
    const char *name;
    char *err;
    size_t errlen;
    struct vt_pickle_value **stack;
    size_t sp, stack_cap;
    size_t marks[VT_PICKLE_MAX_MARK_DEPTH];
    size_t nmarks;
    struct vt_pickle_value **memo;
    size_t nmemo, memo_cap;
};

static int fail(struct parser *ps, uint64_t offset, const char *fmt, ...)
{
    int n = snprintf(ps->err, ps->errlen, "%s: byte %llu: ", ps->name, (unsigned long long)offset);
    if (n >= 0 && (size_t)n < ps->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static struct vt_pickle_value *new_node(struct parser *ps, uint8_t type, uint64_t offset)
{
    struct node_chunk *c = ps->doc->nodes;
    if (!c || c->used == NODE_CHUNK) {
        c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->next = ps->doc->nodes;
        ps->doc->nodes = c;
    }
    struct vt_pickle_value *v = &c->v[c->used++];
    v->type = type;
    v->offset = offset;
    return v;
}

static char *copy_bytes(struct parser *ps, const uint8_t *src, size_t len)
{
    struct byte_chunk *c = ps->doc->bytes;
    if (!c || c->cap - c->used < len + 1) {
        size_t cap = len + 1 > BYTE_CHUNK ? len + 1 : BYTE_CHUNK;
        c = malloc(sizeof *c + cap);
        if (!c)
            return NULL;
        c->used = 0;
        c->cap = cap;
        c->next = ps->doc->bytes;
        ps->doc->bytes = c;
    }
    char *dst = c->data + c->used;
    memcpy(dst, src, len);
    dst[len] = 0;
    c->used += len + 1;
    return dst;
}

static int push(struct parser *ps, struct vt_pickle_value *v, uint64_t off)
{
    if (!v)
        return fail(ps, off, "out of memory");
    if (!vt_grow_array((void **)&ps->stack, &ps->stack_cap, ps->sp + 1, sizeof *ps->stack))
        return fail(ps, off, "out of memory");
    ps->stack[ps->sp++] = v;
    return 0;
}

static bool item_append(struct vt_pickle_value *c, struct vt_pickle_value *v)
{
    if (!vt_grow_array((void **)&c->items, &c->cap, c->n + 1, sizeof *c->items))
        return false;
    c->items[c->n++] = v;
    return true;
}

/* Reads n argument bytes of the opcode at off, or fails as truncated. */
static const uint8_t *take(struct parser *ps, size_t n, uint64_t off, const char *op)
{
    if ((size_t)(ps->end - ps->p) < n) {
        fail(ps, off, "%s: truncated (needs %zu more bytes, file ends at byte %zu)", op, n,
             (size_t)(ps->end - ps->start));
        return NULL;
    }
    const uint8_t *a = ps->p;
    ps->p += n;
    return a;
}

static uint64_t le(const uint8_t *a, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)a[i] << (8 * i);
    return v;
}

static size_t top_mark(struct parser *ps)
{
    return ps->nmarks ? ps->marks[ps->nmarks - 1] : 0;
}

static int need_stack(struct parser *ps, size_t n, uint64_t off, const char *op)
{
    if (ps->sp - top_mark(ps) < n)
        return fail(ps, off, "%s needs %zu value(s) on the stack", op, n);
    return 0;
}

static int pop_mark(struct parser *ps, uint64_t off, const char *op, size_t *base)
{
    if (!ps->nmarks)
        return fail(ps, off, "%s without a MARK", op);
    *base = ps->marks[--ps->nmarks];
    return 0;
}

static int make_string(struct parser *ps, uint8_t type, size_t lenbytes, uint64_t off,
                       const char *op)
{
    const uint8_t *a = take(ps, lenbytes, off, op);
    if (!a)
        return -1;
    uint64_t len = le(a, lenbytes);
    if (len > (uint64_t)(ps->end - ps->p))
        return fail(ps, off, "%s of %llu bytes runs past the end of the file", op,
                    (unsigned long long)len);
    struct vt_pickle_value *v = new_node(ps, type, off);
    char *s = v ? copy_bytes(ps, ps->p, (size_t)len) : NULL;
    if (!s)
        return fail(ps, off, "out of memory");
    v->s = s;
    v->len = (size_t)len;
    ps->p += len;
    return push(ps, v, off);
}

static int make_int(struct parser *ps, int64_t i, bool big, uint64_t off)
{
    struct vt_pickle_value *v = new_node(ps, VT_PICKLE_INT, off);
    if (v) {
        v->i = big ? 0 : i;
        v->big = big;
    }
    return push(ps, v, off);
}

/* LONG1/LONG4: little-endian two's complement of n bytes. */
static int make_long(struct parser *ps, size_t lenbytes, uint64_t off, const char *op)
{
    const uint8_t *a = take(ps, lenbytes, off, op);
    if (!a)
        return -1;
    uint64_t n = le(a, lenbytes);
    if (n > (uint64_t)(ps->end - ps->p))
        return fail(ps, off, "%s of %llu bytes runs past the end of the file", op,
                    (unsigned long long)n);
    const uint8_t *d = ps->p;
    ps->p += n;
    if (n == 0)
        return make_int(ps, 0, false, off);
    if (n > 8) {
        /* Fits only if the extra bytes are pure sign extension. */
        uint8_t ext = (d[n - 1] & 0x80) ? 0xff : 0;
        for (size_t k = 8; k < n; k++)
            if (d[k] != ext)
                return make_int(ps, 0, true, off);
        if (((d[7] & 0x80) ? 0xff : 0) != ext)
            return make_int(ps, 0, true, off);
        n = 8;
    }
    uint64_t u = le(d, (size_t)n);
    if (n < 8 && (d[n - 1] & 0x80))
        u |= ~(uint64_t)0 << (8 * n);
    return make_int(ps, (int64_t)u, false, off);
}

static int make_seq(struct parser *ps, uint8_t type, size_t base, uint64_t off)
{
    struct vt_pickle_value *v = new_node(ps, type, off);
    if (!v)
        return fail(ps, off, "out of memory");
    size_t n = ps->sp - base;
    if (n) {
        v->items = malloc(n * sizeof *v->items);
        if (!v->items)
            return fail(ps, off, "out of memory");
        memcpy(v->items, ps->stack + base, n * sizeof *v->items);
        v->n = v->cap = n;
    }
    ps->sp = base;
    return push(ps, v, off);
}

static int set_items(struct parser *ps, size_t base, uint64_t off, const char *op)
{
    if (base == 0 || (ps->sp - base) % 2)
        return fail(ps, off, "%s: bad number of stack items", op);
    struct vt_pickle_value *d = ps->stack[base - 1];
    if (d->type != VT_PICKLE_DICT)
        return fail(ps, off, "%s on a value that is not a dict", op);
    for (size_t k = base; k < ps->sp; k++)
        if (!item_append(d, ps->stack[k]))
            return fail(ps, off, "out of memory");
    ps->sp = base;
    return 0;
}

static int append_items(struct parser *ps, size_t base, uint64_t off, const char *op)
{
    if (base == 0)
        return fail(ps, off, "%s: no list on the stack", op);
    struct vt_pickle_value *l = ps->stack[base - 1];
    if (l->type != VT_PICKLE_LIST)
        return fail(ps, off, "%s on a value that is not a list", op);
    for (size_t k = base; k < ps->sp; k++)
        if (!item_append(l, ps->stack[k]))
            return fail(ps, off, "out of memory");
    ps->sp = base;
    return 0;
}

static int memo_get(struct parser *ps, uint64_t idx, uint64_t off, const char *op)
{
    if (idx >= ps->nmemo || !ps->memo[idx])
        return fail(ps, off, "%s %llu: no such memo entry (memo has %zu)", op,
                    (unsigned long long)idx, ps->nmemo);
    return push(ps, ps->memo[idx], off);
}

static int memo_put(struct parser *ps, uint64_t idx, uint64_t off, const char *op)
{
    if (ps->sp == top_mark(ps))
        return fail(ps, off, "%s with an empty stack", op);
    /* Indices are dense in real files; a far index would make us allocate
     * a huge table for nothing, so it is refused. */
    if (idx > ps->nmemo)
        return fail(ps, off, "%s %llu: memo index out of order (memo has %zu)", op,
                    (unsigned long long)idx, ps->nmemo);
    if (idx == ps->nmemo) {
        if (!vt_grow_array((void **)&ps->memo, &ps->memo_cap, ps->nmemo + 1, sizeof *ps->memo))
            return fail(ps, off, "out of memory");
        ps->nmemo++;
    }
    ps->memo[idx] = ps->stack[ps->sp - 1];
    return 0;
}

static int step(struct parser *ps, bool *stop)
{
    uint64_t off = (uint64_t)(ps->p - ps->start);
    uint8_t op = *ps->p++;
    const char *name = vt_pickle_opcode_name(op);
    switch (opcode_class(op)) {
    case VT_PICKLE_UNKNOWN:
        return fail(ps, off, "0x%02x is not a pickle opcode (garbled or not a pickle)", op);
    case VT_PICKLE_CODE:
        return fail(ps, off,
                    "opcode %s (0x%02x) would import or call code; refused (a memory "
                    "snapshot contains only data)",
                    name, op);
    case VT_PICKLE_OTHER:
        return fail(ps, off, "opcode %s (0x%02x) is not used by memory snapshots; not supported",
                    name, op);
    case VT_PICKLE_DATA:
        break;
    }
    const uint8_t *a;
    size_t base = 0;
    switch ((enum vt_pickle_op)op) {
    case OP_PROTO:
        if (!(a = take(ps, 1, off, name)))
            return -1;
        if (a[0] > 5)
            return fail(ps, off, "pickle protocol %u is not known", a[0]);
        return 0;
    case OP_FRAME:
        if (!(a = take(ps, 8, off, name)))
            return -1;
        if (le(a, 8) > (uint64_t)(ps->end - ps->p))
            return fail(ps, off, "FRAME of %llu bytes runs past the end of the file (truncated?)",
                        (unsigned long long)le(a, 8));
        return 0;
    case OP_STOP:
        if (ps->sp != 1 || ps->nmarks)
            return fail(ps, off, "STOP with %zu values and %zu marks on the stack (expected one value)",
                        ps->sp, ps->nmarks);
        ps->doc->root = ps->stack[0];
        *stop = true;
        return 0;
    case OP_MARK:
        if (ps->nmarks == VT_PICKLE_MAX_MARK_DEPTH)
            return fail(ps, off, "MARKs nested deeper than %d", VT_PICKLE_MAX_MARK_DEPTH);
        ps->marks[ps->nmarks++] = ps->sp;
        return 0;
    case OP_POP:
        if (need_stack(ps, 1, off, name))
            return -1;
        ps->sp--;
        return 0;
    case OP_POP_MARK:
        if (pop_mark(ps, off, name, &base))
            return -1;
        ps->sp = base;
        return 0;
    case OP_DUP:
        if (need_stack(ps, 1, off, name))
            return -1;
        return push(ps, ps->stack[ps->sp - 1], off);
    case OP_MEMOIZE:
        return memo_put(ps, ps->nmemo, off, name);
    case OP_BINPUT:
        if (!(a = take(ps, 1, off, name)))
            return -1;
        return memo_put(ps, a[0], off, name);
    case OP_LONG_BINPUT:
        if (!(a = take(ps, 4, off, name)))
            return -1;
        return memo_put(ps, le(a, 4), off, name);
    case OP_BINGET:
        if (!(a = take(ps, 1, off, name)))
            return -1;
        return memo_get(ps, a[0], off, name);
    case OP_LONG_BINGET:
        if (!(a = take(ps, 4, off, name)))
            return -1;
        return memo_get(ps, le(a, 4), off, name);
    case OP_EMPTY_DICT:
        return push(ps, new_node(ps, VT_PICKLE_DICT, off), off);
    case OP_EMPTY_LIST:
        return push(ps, new_node(ps, VT_PICKLE_LIST, off), off);
    case OP_EMPTY_TUPLE:
        return push(ps, &ps->doc->empty_tuple, off);
    case OP_NONE:
        return push(ps, &ps->doc->none, off);
    case OP_NEWTRUE:
        return push(ps, &ps->doc->true_, off);
    case OP_NEWFALSE:
        return push(ps, &ps->doc->false_, off);
    case OP_BININT:
        if (!(a = take(ps, 4, off, name)))
            return -1;
        return make_int(ps, (int32_t)(uint32_t)le(a, 4), false, off);
    case OP_BININT1:
        if (!(a = take(ps, 1, off, name)))
            return -1;
        return make_int(ps, a[0], false, off);
    case OP_BININT2:
        if (!(a = take(ps, 2, off, name)))
            return -1;
        return make_int(ps, (int64_t)le(a, 2), false, off);
    case OP_LONG1:
        return make_long(ps, 1, off, name);
    case OP_LONG4:
        return make_long(ps, 4, off, name);
    case OP_BINFLOAT: {
        if (!(a = take(ps, 8, off, name)))
            return -1;
        uint64_t bits = 0;
        for (int k = 0; k < 8; k++) /* big-endian IEEE 754 */
            bits = (bits << 8) | a[k];
        struct vt_pickle_value *v = new_node(ps, VT_PICKLE_FLOAT, off);
        if (v)
            memcpy(&v->f, &bits, sizeof v->f);
        return push(ps, v, off);
    }
    case OP_SHORT_BINUNICODE:
        return make_string(ps, VT_PICKLE_STR, 1, off, name);
    case OP_BINUNICODE:
        return make_string(ps, VT_PICKLE_STR, 4, off, name);
    case OP_BINUNICODE8:
        return make_string(ps, VT_PICKLE_STR, 8, off, name);
    case OP_SHORT_BINBYTES:
        return make_string(ps, VT_PICKLE_BYTES, 1, off, name);
    case OP_BINBYTES:
        return make_string(ps, VT_PICKLE_BYTES, 4, off, name);
    case OP_BINBYTES8:
        return make_string(ps, VT_PICKLE_BYTES, 8, off, name);
    case OP_TUPLE1:
    case OP_TUPLE2:
    case OP_TUPLE3: {
        size_t n = (size_t)(op - OP_TUPLE1 + 1);
        if (need_stack(ps, n, off, name))
            return -1;
        return make_seq(ps, VT_PICKLE_TUPLE, ps->sp - n, off);
    }
    case OP_TUPLE:
        if (pop_mark(ps, off, name, &base))
            return -1;
        return make_seq(ps, VT_PICKLE_TUPLE, base, off);
    case OP_LIST:
        if (pop_mark(ps, off, name, &base))
            return -1;
        return make_seq(ps, VT_PICKLE_LIST, base, off);
    case OP_DICT: {
        if (pop_mark(ps, off, name, &base))
            return -1;
        if ((ps->sp - base) % 2)
            return fail(ps, off, "DICT with an odd number of items");
        int rc = make_seq(ps, VT_PICKLE_DICT, base, off);
        return rc;
    }
    case OP_SETITEM:
        if (need_stack(ps, 2, off, name))
            return -1;
        return set_items(ps, ps->sp - 2, off, name);
    case OP_SETITEMS:
        if (pop_mark(ps, off, name, &base))
            return -1;
        return set_items(ps, base, off, name);
    case OP_APPEND:
        if (need_stack(ps, 1, off, name))
            return -1;
        return append_items(ps, ps->sp - 1, off, name);
    case OP_APPENDS:
        if (pop_mark(ps, off, name, &base))
            return -1;
        return append_items(ps, base, off, name);
    default:
        return fail(ps, off, "opcode %s not handled", name);
    }
}

int vt_pickle_parse(const uint8_t *data, size_t len, const char *name, struct vt_pickle_doc **out,
                    char *err, size_t errlen)
{
    *out = NULL;
    struct parser ps = {.p = data, .start = data, .end = data + len, .name = name, .err = err,
                        .errlen = errlen};
    if (len > VT_PICKLE_MAX_FILE_BYTES) {
        fail(&ps, 0, "file of %zu bytes is larger than the %zu this reader accepts", len,
             VT_PICKLE_MAX_FILE_BYTES);
        return -1;
    }
    ps.doc = calloc(1, sizeof *ps.doc);
    if (!ps.doc) {
        fail(&ps, 0, "out of memory");
        return -1;
    }
    ps.doc->none.type = VT_PICKLE_NONE;
    ps.doc->true_.type = ps.doc->false_.type = VT_PICKLE_BOOL;
    ps.doc->true_.b = true;
    ps.doc->empty_tuple.type = VT_PICKLE_TUPLE;
    ps.doc->input_bytes = len;
    if (len == 0 || data[0] != OP_PROTO) {
        fail(&ps, 0, "not a pickle (it does not start with the PROTO opcode 0x80)");
        vt_pickle_doc_free(ps.doc);
        return -1;
    }
    bool stop = false;
    int rc = 0;
    while (!stop && rc == 0) {
        if (ps.p == ps.end) {
            rc = fail(&ps, len, "the pickle ends without STOP (truncated)");
            break;
        }
        rc = step(&ps, &stop);
    }
    free(ps.stack);
    free(ps.memo);
    if (rc) {
        vt_pickle_doc_free(ps.doc);
        return -1;
    }
    *out = ps.doc;
    return 0;
}

int vt_pickle_parse_file(const char *path, struct vt_pickle_doc **out, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: byte 0: cannot open: %s", path, strerror(errno));
        return -1;
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            if (cap > VT_PICKLE_MAX_FILE_BYTES) {
                snprintf(err, errlen, "%s: byte %zu: file too large", path, len);
                free(buf);
                fclose(f);
                return -1;
            }
            /* Room for a read of 1 MiB or more: 1 MiB first, then doubling. */
            if (!vt_grow_array((void **)&buf, &cap, len + ((size_t)1 << 20), 1)) {
                snprintf(err, errlen, "%s: byte %zu: out of memory", path, len);
                free(buf);
                fclose(f);
                return -1;
            }
        }
        size_t n = fread(buf + len, 1, cap - len, f);
        len += n;
        if (n == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: byte %zu: read error", path, len);
        free(buf);
        return -1;
    }
    int rc = vt_pickle_parse(buf, len, path, out, err, errlen);
    free(buf); /* strings were copied into the document */
    return rc;
}

void vt_pickle_doc_free(struct vt_pickle_doc *doc)
{
    if (!doc)
        return;
    for (struct node_chunk *c = doc->nodes, *n; c; c = n) {
        n = c->next;
        for (size_t k = 0; k < c->used; k++)
            if (c->v[k].type >= VT_PICKLE_LIST)
                free(c->v[k].items);
        free(c);
    }
    for (struct byte_chunk *c = doc->bytes, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(doc);
}

const struct vt_pickle_value *vt_pickle_doc_root(const struct vt_pickle_doc *doc)
{
    return doc->root;
}

size_t vt_pickle_doc_input_bytes(const struct vt_pickle_doc *doc)
{
    return doc->input_bytes;
}

const struct vt_pickle_value *vt_pickle_dict_get(const struct vt_pickle_value *d, const char *key)
{
    if (!d || d->type != VT_PICKLE_DICT)
        return NULL;
    /* Last one wins, as in Python. */
    for (size_t k = d->n / 2; k-- > 0;) {
        const struct vt_pickle_value *kv = d->items[2 * k];
        if (kv->type == VT_PICKLE_STR && !strcmp(kv->s, key))
            return d->items[2 * k + 1];
    }
    return NULL;
}

bool vt_pickle_get_int(const struct vt_pickle_value *d, const char *key, int64_t *v)
{
    const struct vt_pickle_value *x = vt_pickle_dict_get(d, key);
    if (!x || x->big || (x->type != VT_PICKLE_INT && x->type != VT_PICKLE_BOOL))
        return false;
    *v = x->type == VT_PICKLE_BOOL ? x->b : x->i;
    return true;
}

bool vt_pickle_get_double(const struct vt_pickle_value *d, const char *key, double *v)
{
    const struct vt_pickle_value *x = vt_pickle_dict_get(d, key);
    if (x && x->type == VT_PICKLE_FLOAT) {
        *v = x->f;
        return true;
    }
    if (x && x->type == VT_PICKLE_INT && !x->big) {
        *v = (double)x->i;
        return true;
    }
    return false;
}

const char *vt_pickle_get_str(const struct vt_pickle_value *d, const char *key)
{
    const struct vt_pickle_value *x = vt_pickle_dict_get(d, key);
    return x && x->type == VT_PICKLE_STR ? x->s : NULL;
}

bool vt_pickle_get_bool(const struct vt_pickle_value *d, const char *key, bool *v)
{
    const struct vt_pickle_value *x = vt_pickle_dict_get(d, key);
    if (!x || x->type != VT_PICKLE_BOOL)
        return false;
    *v = x->b;
    return true;
}

bool vt_pickle_is_seq(const struct vt_pickle_value *v)
{
    return v && (v->type == VT_PICKLE_LIST || v->type == VT_PICKLE_TUPLE);
}
