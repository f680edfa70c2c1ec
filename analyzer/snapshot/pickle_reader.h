/*
 * A pickle reader that only READS DATA: it understands the opcodes that
 * build dicts, lists, tuples, numbers, strings, bytes, booleans and None
 * (everything torch.cuda.memory._dump_snapshot writes) and refuses, with the
 * opcode's name and byte offset, every opcode that would make Python import
 * or call something (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
 * NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID...). Nothing is ever executed.
 *
 * The result is a graph of vt_pickle_value nodes in an arena owned by the
 * vt_pickle_doc. Memoized values are shared (as in Python), so a hostile file can
 * even build a cycle: consumers walk the graph by a known schema with a
 * bounded depth, never generically. Sharing also multiplies: a list of N
 * references to a list of N references to ... costs a few bytes per level,
 * so consumers bound their work too, by the input's size
 * (vt_pickle_doc_input_bytes; snapshot.c counts what it expands).
 *
 * Memory is bounded by the input (at most ~64 bytes per input byte): each
 * opcode creates at most one 40-byte node and one container slot (None,
 * True, False and () are shared, as in Python), strings are at most the file's size in total, the
 * MARK depth is limited, memo indices are checked, and every length field
 * is checked against the bytes left before anything is allocated.
 */
#ifndef VRAMTRACE_SNAPSHOT_PICKLE_READER_H
#define VRAMTRACE_SNAPSHOT_PICKLE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vt_pickle_type {
    VT_PICKLE_NONE,
    VT_PICKLE_BOOL,
    VT_PICKLE_INT, /* i; big set if the value did not fit in int64 (i is then 0) */
    VT_PICKLE_FLOAT,
    VT_PICKLE_STR, /* UTF-8 as written, NUL-terminated copy */
    VT_PICKLE_BYTES,
    VT_PICKLE_LIST,
    VT_PICKLE_TUPLE,
    VT_PICKLE_DICT, /* items[2k] key, items[2k+1] value */
};

struct vt_pickle_value {
    uint8_t type;
    bool b;
    bool big;
    uint64_t offset;          /* byte offset of the opcode that made it */
    union {
        int64_t i; /* VT_PICKLE_INT */
        double f;  /* VT_PICKLE_FLOAT */
        struct {   /* VT_PICKLE_STR / VT_PICKLE_BYTES */
            const char *s;
            size_t len;
        };
        struct { /* VT_PICKLE_LIST / VT_PICKLE_TUPLE / VT_PICKLE_DICT */
            struct vt_pickle_value **items;
            size_t n, cap;
        };
    };
};

struct vt_pickle_doc;

#define VT_PICKLE_MAX_FILE_BYTES ((size_t)1 << 32)
#define VT_PICKLE_MAX_MARK_DEPTH 4096

/* Parses a pickle held in memory. On success returns 0 and *out (free with
 * vt_pickle_doc_free). On failure returns -1 and writes "NAME: byte N: reason" to
 * err. name is used in messages only. */
int vt_pickle_parse(const uint8_t *data, size_t len, const char *name, struct vt_pickle_doc **out,
                    char *err, size_t errlen);
/* Reads a file and parses it (same contract). */
int vt_pickle_parse_file(const char *path, struct vt_pickle_doc **out, char *err, size_t errlen);
void vt_pickle_doc_free(struct vt_pickle_doc *doc);

const struct vt_pickle_value *vt_pickle_doc_root(const struct vt_pickle_doc *doc);
/* The size of the pickle the document was parsed from, in bytes. */
size_t vt_pickle_doc_input_bytes(const struct vt_pickle_doc *doc);

/* The opcode's name ("GLOBAL"), or NULL if the byte is no pickle opcode. */
const char *vt_pickle_opcode_name(uint8_t op);

/* ---- schema helpers (NULL/false when absent or of another type) ---- */
const struct vt_pickle_value *vt_pickle_dict_get(const struct vt_pickle_value *dict,
                                                 const char *key);
bool vt_pickle_get_int(const struct vt_pickle_value *dict, const char *key, int64_t *v);
bool vt_pickle_get_double(const struct vt_pickle_value *dict, const char *key,
                          double *v); /* int or float */
const char *vt_pickle_get_str(const struct vt_pickle_value *dict, const char *key);
bool vt_pickle_get_bool(const struct vt_pickle_value *dict, const char *key, bool *v);
bool vt_pickle_is_seq(const struct vt_pickle_value *v); /* list or tuple */

#endif
