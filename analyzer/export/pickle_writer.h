/*
 * A pickle writer for data (protocol 4, no framing) that uses only the
 * opcodes PyTorch's memory_viz unpickler accepts (torch/utils/viz/
 * MemoryViz.js, `unpickle`): PROTO, EMPTY_DICT, EMPTY_LIST, MARK,
 * SETITEMS, APPENDS, MEMOIZE, BINGET, LONG_BINGET, BININT, BININT1,
 * BININT2, LONG1 (at most 8 bytes), SHORT_BINUNICODE, BINUNICODE,
 * NEWTRUE, NEWFALSE, NONE, BINFLOAT, TUPLE2, STOP. Python's pickle reads
 * them all, and so does analyzer/snapshot/pickle_reader.c.
 *
 * Long lists and dicts are written in batches of 1000 items (as Python's
 * pickler does): the JavaScript unpickler spreads a batch into a call, and
 * a call takes a bounded number of arguments.
 *
 * The writer fills a buffer of its own and hands the FILE whole blocks
 * (an entry is dozens of opcodes of a byte or a few): the FILE has the
 * pickle at vt_pw_end, and nothing else is written to it in between.
 *
 *     vt_pw_begin(&w, out);
 *     vt_pw_dict_begin(&w);
 *       vt_pw_str(&w, "segments"); vt_pw_list_begin(&w); ... vt_pw_list_end(&w);
 *     vt_pw_dict_end(&w);
 *     ok = vt_pw_end(&w);
 */
#ifndef VRAMTRACE_EXPORT_PICKLE_WRITER_H
#define VRAMTRACE_EXPORT_PICKLE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "out_buffer.h"

#define VT_PW_MAX_DEPTH 32
#define VT_PW_BATCH 1000

struct vt_pickle_writer {
    uint64_t memo;          /* MEMOIZE opcodes written: the next memo index */
    struct {
        bool dict;
        size_t items;       /* stack items since the last MARK */
    } open[VT_PW_MAX_DEPTH];
    int depth;
    bool overflow;          /* nesting deeper than VT_PW_MAX_DEPTH */
    struct vt_out_buffer buf;
};

void vt_pw_begin(struct vt_pickle_writer *w, FILE *out);
/* STOP; false if a write failed or the nesting was wrong. */
bool vt_pw_end(struct vt_pickle_writer *w);

void vt_pw_dict_begin(struct vt_pickle_writer *w);
void vt_pw_dict_end(struct vt_pickle_writer *w);
void vt_pw_list_begin(struct vt_pickle_writer *w);
void vt_pw_list_end(struct vt_pickle_writer *w);
/* A pair (a, b), as snapshots write segment_pool_id. */
void vt_pw_int_pair(struct vt_pickle_writer *w, int64_t a, int64_t b);

void vt_pw_str(struct vt_pickle_writer *w, const char *s);
void vt_pw_int(struct vt_pickle_writer *w, int64_t v);
void vt_pw_bool(struct vt_pickle_writer *w, bool v);
void vt_pw_none(struct vt_pickle_writer *w);
void vt_pw_float(struct vt_pickle_writer *w, double v);

/* Remembers the value just completed; returns its memo index. */
uint64_t vt_pw_memoize(struct vt_pickle_writer *w);
/* The value remembered at index (as one more item). */
void vt_pw_get(struct vt_pickle_writer *w, uint64_t index);

/* Key and value in one call. */
void vt_pw_kv_str(struct vt_pickle_writer *w, const char *key, const char *s);
void vt_pw_kv_int(struct vt_pickle_writer *w, const char *key, int64_t v);

#endif
