/*
 * Where CPython keeps what a frame walk needs, per minor version (x86-64
 * and aarch64 release builds, GIL enabled; free-threaded 3.13t and 3.14t
 * through _Py_DebugOffsets and the VT_PY_FT_* headers below). The library
 * reads these structures directly, without the Python API (python_stack.c
 * says why), so it must not depend on Python's headers;
 * tests/python/test_offsets.c checks every number here with offsetof()
 * against each installed version's own headers, internal ones included.
 *
 * -1: the field does not exist in that version.
 *
 *  ts_frame      PyThreadState: frame (3.10), cframe (3.11, 3.12),
 *                current_frame (3.13)
 *  cf_current    _PyCFrame.current_frame (3.11, 3.12)
 *  fr_previous   PyFrameObject.f_back (3.10), _PyInterpreterFrame.previous
 *  fr_code       f_code, f_executable (3.13)
 *  fr_instr      f_lasti (3.10: an int, in code units), prev_instr (3.11,
 *                3.12: the instruction running), instr_ptr (3.13)
 *  fr_owner      _PyInterpreterFrame.owner (a char)
 *  co_*          PyCodeObject fields; co_code is co_code_adaptive (the
 *                bytecode itself, inline), co_firsttraceable is
 *                _co_firsttraceable (in code units)
 *  str_ascii     sizeof(PyASCIIObject): compact ASCII data follows it
 *  str_compact   sizeof(PyCompactUnicodeObject): other compact data
 *  owner_cstack  the first owner value of a frame that is not Python
 *                code's (3.12, 3.13: FRAME_OWNED_BY_CSTACK, the C entry
 *                shim; 3.14: FRAME_OWNED_BY_INTERPRETER, CSTACK after it;
 *                3.15: INTERPRETER, the last, CSTACK gone; its thread
 *                states' sentinel base_frame is one of these): owners >=
 *                this one are skipped
 *
 * These rows are 3.10 .. 3.12 only. From 3.13 on, the interpreter
 * describes its own layout in _Py_DebugOffsets (below) and the tracer
 * builds its row from that at start-up.
 */
#ifndef VRAMTRACE_PRELOAD_PYTHON_LAYOUT_H
#define VRAMTRACE_PRELOAD_PYTHON_LAYOUT_H

#include <stdint.h>

/* X(minor, ts_frame, cf_current, fr_previous, fr_code, fr_instr, fr_owner,
 *   co_filename, co_name, co_qualname, co_firstlineno, co_linetable,
 *   co_code, co_firsttraceable, str_ascii, str_compact, owner_cstack) */
#define VT_PY_LAYOUTS(X)                                                              \
    X(10, 24, -1, 24, 32, 96, -1, 104, 112, -1, 40, 120, -1, -1, 48, 72, -1)           \
    X(11, 56, 8, 48, 32, 56, 69, 112, 120, 128, 72, 136, 184, 168, 48, 72, -1)         \
    X(12, 56, 0, 8, 0, 56, 70, 112, 120, 128, 68, 136, 192, 176, 40, 56, 3)

struct vt_py_layout {
    int minor;
    int ts_frame, cf_current;
    int fr_previous, fr_code, fr_instr, fr_owner;
    int co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
    int co_code, co_firsttraceable;
    int str_ascii, str_compact;
    int owner_cstack;
    /* Not in the X rows (0 there): low bits of f_executable that are tags
     * (3.14+: a _PyStackRef), cleared before the pointer is used. */
    int exec_tag_mask;
    /* Not in the X rows either (VT_PY_LAYOUT_COMMON there): the object
     * headers, which a free-threaded build lays out otherwise (below):
     * ob_type, PyVarObject.ob_size, PyBytesObject.ob_sval,
     * PyASCIIObject.length and .state, and how far the state's bits sit
     * above a GIL build's. */
    int ob_type, var_size, bytes_data, str_length, str_state, str_state_shift;
    /* 3.14t: each thread may run its own copy of a code's bytecode: the
     * frame's tlbc_index (an int32) picks it from the code's co_tlbc
     * array; -1 where the build has none (GIL builds). */
    int fr_tlbc_index, co_tlbc;
};

/* The rest of a row of VT_PY_LAYOUTS, after exec_tag_mask: a GIL build's
 * object headers, no thread-local bytecode. */
#define VT_PY_LAYOUT_COMMON                                                     \
    VT_PY_OB_TYPE, VT_PY_OB_SIZE, VT_PY_BYTES_DATA, VT_PY_STR_LENGTH, VT_PY_STR_STATE, 0, \
        -1, -1

/* Common to every supported version (PyObject, PyVarObject, PyBytesObject,
 * PyASCIIObject heads). */
#define VT_PY_OB_TYPE 8
#define VT_PY_OB_SIZE 16
#define VT_PY_BYTES_DATA 32
#define VT_PY_STR_LENGTH 16
#define VT_PY_STR_STATE 32
/* PyASCIIObject.state bits (the same in 3.10 .. 3.15 GIL builds): kind,
 * compact, ascii; shift: how far above those a build puts them (6 in a
 * free-threaded build, below). */
#define VT_PY_STR_KIND(state, shift) (((state) >> (2 + (shift))) & 7u)
#define VT_PY_STR_COMPACT(state, shift) (((state) >> (5 + (shift))) & 1u)
#define VT_PY_STR_ASCII(state, shift) (((state) >> (6 + (shift))) & 1u)

/* Free-threaded builds (3.13t, 3.14t; checked by test_offsets.c against
 * their headers). PyObject is 32 bytes: ob_tid, ob_flags, ob_mutex,
 * ob_gc_bits, ob_ref_local, ob_ref_shared, then ob_type; every header
 * after it moves by 16. From 3.14t on, PyASCIIObject's state starts with
 * interned as a whole byte (it is read atomically), so kind, compact and
 * ascii sit 6 bits higher (3.13t: where a GIL build has them). */
#define VT_PY_FT_OB_TYPE 24
#define VT_PY_FT_OB_SIZE 32
#define VT_PY_FT_BYTES_DATA 48
#define VT_PY_FT_STR_LENGTH 32
#define VT_PY_FT_STR_STATE 48
#define VT_PY_FT_STR_STATE_SHIFT 6
/* FRAME_OWNED_BY_GENERATOR: never "incomplete" (3.11+) */
#define VT_PY_OWNER_GENERATOR 1

/* ---- 3.13+: _Py_DebugOffsets ----
 *
 * CPython 3.13 and later publish their own layout for out-of-process tools
 * in a struct at the start of _PyRuntime (Include/internal/
 * pycore_debug_offsets.h): a cookie, the version, a free-threaded flag,
 * then sections of uint64_t offsets, most starting with the size of the
 * structure they describe. The tracer reads the frame chain through it.
 * What moves between versions is the struct itself: sections gain fields,
 * new sections appear (3.15: err_stackitem, heap_type_object). A variant
 * says how many fields the sections before the ones read have (0: no such
 * section); vt_py_dbg_place turns it into positions. At start-up
 * every variant of the version is tried and must pass its own checks
 * (python_stack.c: pyobject is {16, 8}, the frame and code offsets lie
 * inside their structures' sizes, the string and bytes offsets are the
 * ones every version has); none passing: native stacks, said once.
 *
 * Not covered by _Py_DebugOffsets (derived, checked by test_offsets.c
 * against each version's headers): _co_firsttraceable, the int just
 * before the pointer co_extra that precedes co_code_adaptive (GIL builds),
 * and, before 3.15, sizeof(PyCompactUnicodeObject), asciiobject_size + 16
 * (3.15 publishes it: compactunicodeobject_size).
 *
 * X(minor_lo, minor_hi, then the number of fields of each section that
 *   moves the ones read: interpreter_state, thread_state, err_stackitem,
 *   interpreter_frame, code_object, type_object, heap_type_object,
 *   set_object, unicode_object)
 * The first variant of a minor version is its final release's (the one
 * test_offsets.c checks against the headers); later ones, pre-releases'. */
#define VT_PY_DBG_VARIANTS(X)                                                          \
    X(13, 13, 13, 9, 0, 6, 10, 4, 0, 0, 4) /* 3.13 */                                  \
    X(15, 15, 16, 16, 1, 8, 11, 6, 2, 4, 5) /* 3.15 final: see below */                \
    X(14, 15, 16, 9, 0, 8, 11, 4, 0, 4, 4) /* 3.14 final, and any 3.15 pre-release  \
        still laid out so: + threads_main, code_object_generation, tlbc_generation, \
        stackpointer, tlbc_index, co_tlbc; + set_object */                          \
    X(14, 15, 14, 9, 0, 7, 10, 4, 0, 4, 4) /* 3.14 alphas: + threads_main, stackpointer */
/* 3.15 against 3.14 final (3.15.2's pycore_debug_offsets.h): thread_state
 * + base_frame, last_profiled_frame, last_profiled_frame_seq, holds_gil,
 * gil_requested, current_exception, exc_state; a new err_stackitem
 * {exc_value} after it; type_object + tp_basicsize, tp_dictoffset; a new
 * heap_type_object {size, ht_cached_keys} after it; unicode_object +
 * compactunicodeobject_size; gc + frame, generation_stats_size,
 * generation_stats (after everything read). */

#define VT_PY_DEBUG_COOKIE "xdebugpy"
#define VT_PY_DBG_VERSION 8
#define VT_PY_DBG_FREE_THREADED 16
#define VT_PY_DBG_HEAD 48 /* cookie, version, free_threaded, runtime_state[3] */

struct vt_py_dbg_variant {
    int minor_lo, minor_hi;
    int n_interp, n_thread, n_errstack, n_frame, n_code, n_type, n_heaptype, n_set, n_unicode;
};

/* Where each offset the tracer reads sits inside _Py_DebugOffsets;
 * str_compact_size is -1 where the struct has no such field. */
struct vt_py_dbg_pos {
    int ts_size, ts_current_frame;
    int fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
    int co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_adaptive;
    int fr_tlbc_index, co_tlbc; /* -1: the struct has no such field (3.13, 3.14 alphas) */
    int ob_size, ob_type;
    int bytes_ob_size, bytes_ob_sval;
    int str_state, str_length, str_ascii_size, str_compact_size;
};

static inline struct vt_py_dbg_pos vt_py_dbg_place(const struct vt_py_dbg_variant *v)
{
    struct vt_py_dbg_pos p;
    int ts = VT_PY_DBG_HEAD + 8 * v->n_interp;
    int fr = ts + 8 * (v->n_thread + v->n_errstack);
    int co = fr + 8 * v->n_frame;
    int ob = co + 8 * v->n_code;
    /* pyobject 2, type_object, [heap_type_object], tuple 3, list 3, [set],
     * dict 3, float 2, long 3, then bytes_object 3 and unicode_object */
    int by = ob + 8 * (2 + v->n_type + v->n_heaptype + 3 + 3 + v->n_set + 3 + 2 + 3);
    int un = by + 8 * 3;
    p.ts_size = ts;
    p.ts_current_frame = ts + 32;
    p.fr_size = fr;
    p.fr_previous = fr + 8;
    p.fr_executable = fr + 16;
    p.fr_instr_ptr = fr + 24;
    p.fr_owner = fr + 40;
    p.co_size = co;
    p.co_filename = co + 8;
    p.co_name = co + 16;
    p.co_qualname = co + 24;
    p.co_linetable = co + 32;
    p.co_firstlineno = co + 40;
    p.co_adaptive = co + 72;
    /* 3.14 added them at the ends of their sections (0 in a GIL build) */
    p.fr_tlbc_index = v->n_frame >= 8 ? fr + 56 : -1;
    p.co_tlbc = v->n_code >= 11 ? co + 80 : -1;
    p.ob_size = ob;
    p.ob_type = ob + 8;
    p.bytes_ob_size = by + 8;
    p.bytes_ob_sval = by + 16;
    p.str_state = un + 8;
    p.str_length = un + 16;
    p.str_ascii_size = un + 24;
    p.str_compact_size = v->n_unicode >= 5 ? un + 32 : -1;
    return p;
}

/* What a GIL build's _co_firsttraceable is, from co_code_adaptive: the int
 * before the pointer co_extra (3.13t's too). A free-threaded 3.14 has
 * co_tlbc between co_extra and co_code_adaptive: 8 bytes more. */
#define VT_PY_DBG_FIRSTTRACEABLE(adaptive) ((adaptive) - 16)
#define VT_PY_DBG_FIRSTTRACEABLE_FT(adaptive) ((adaptive) - 24)
/* sizeof(PyCompactUnicodeObject) from sizeof(PyASCIIObject). */
#define VT_PY_DBG_STR_COMPACT(ascii_size) ((ascii_size) + 16)
/* 3.14+: f_executable is a _PyStackRef; its low bits are tags (3.14: 1
 * bit, Py_TAG_DEFERRED; 3.15: 2, Py_TAG_BITS, of which Py_TAG_REFCNT). */
#define VT_PY_STACKREF_TAG_MASK 7

#endif
