/*
 * A pickle reader that only READS DATA: it understands the opcodes that
 * build dicts, lists, tuples, numbers, strings, bytes, booleans and None
 * (everything torch.cuda.memory._dump_snapshot writes) and refuses, with the
 * opcode's name and byte offset, every opcode that would make Python import
 * or call something (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ,
 * NEWOBJ_EX, EXT1/2/4, PERSID, BINPERSID...). Nothing is ever executed.
 *
 * The result is a graph of pk_value nodes in an arena owned by the
 * pk_doc. Memoized values are shared (as in Python), so a hostile file can
 * even build a cycle: consumers walk the graph by a known schema with a
 * bounded depth, never generically.
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

enum pk_type {
    PK_NONE,
    PK_BOOL,
    PK_INT,    /* i; big set if the value did not fit in int64 (i is then 0) */
    PK_FLOAT,
    PK_STR,    /* UTF-8 as written, NUL-terminated copy */
    PK_BYTES,
    PK_LIST,
    PK_TUPLE,
    PK_DICT,   /* items[2k] key, items[2k+1] value */
};

struct pk_value {
    uint8_t type;
    bool b;
    bool big;
    uint64_t offset;          /* byte offset of the opcode that made it */
    union {
        int64_t i;            /* PK_INT */
        double f;             /* PK_FLOAT */
        struct {              /* PK_STR / PK_BYTES */
            const char *s;
            size_t len;
        };
        struct {              /* PK_LIST / PK_TUPLE / PK_DICT */
            struct pk_value **items;
            size_t n, cap;
        };
    };
};

struct pk_doc;

#define PK_MAX_FILE_BYTES ((size_t)1 << 32)
#define PK_MAX_MARK_DEPTH 4096

/* Parses a pickle held in memory. On success returns 0 and *out (free with
 * pk_doc_free). On failure returns -1 and writes "NAME: byte N: reason" to
 * err. name is used in messages only. */
int pk_parse(const uint8_t *data, size_t len, const char *name, struct pk_doc **out,
             char *err, size_t errlen);
/* Reads a file and parses it (same contract). */
int pk_parse_file(const char *path, struct pk_doc **out, char *err, size_t errlen);
void pk_doc_free(struct pk_doc *doc);

const struct pk_value *pk_doc_root(const struct pk_doc *doc);

/* The opcode's name ("GLOBAL"), or NULL if the byte is no pickle opcode. */
const char *pk_opcode_name(uint8_t op);

/* ---- schema helpers (NULL/false when absent or of another type) ---- */
const struct pk_value *pk_dict_get(const struct pk_value *dict, const char *key);
bool pk_get_int(const struct pk_value *dict, const char *key, int64_t *v);
bool pk_get_double(const struct pk_value *dict, const char *key, double *v); /* int or float */
const char *pk_get_str(const struct pk_value *dict, const char *key);
bool pk_get_bool(const struct pk_value *dict, const char *key, bool *v);
bool pk_is_seq(const struct pk_value *v); /* list or tuple */

#endif
