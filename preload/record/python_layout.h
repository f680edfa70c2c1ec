/*
 * Where CPython keeps what a frame walk needs, per minor version (x86-64
 * and aarch64 release builds, GIL enabled). The library reads these
 * structures directly, without the Python API (python_stack.c says why),
 * so it must not depend on Python's headers; tests/python/test_offsets.c
 * checks every number here with offsetof() against each installed
 * version's own headers, internal ones included.
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
 *                shim; 3.14: FRAME_OWNED_BY_INTERPRETER; 3.15 adds CSTACK
 *                after it): owners >= this one are skipped
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
};

/* Common to every supported version (PyObject, PyVarObject, PyBytesObject,
 * PyASCIIObject heads). */
#define VT_PY_OB_TYPE 8
#define VT_PY_OB_SIZE 16
#define VT_PY_BYTES_DATA 32
#define VT_PY_STR_LENGTH 16
#define VT_PY_STR_STATE 32
/* PyASCIIObject.state bits (the same in 3.10 .. 3.13): kind, compact, ascii */
#define VT_PY_STR_KIND(state) (((state) >> 2) & 7u)
#define VT_PY_STR_COMPACT(state) (((state) >> 5) & 1u)
#define VT_PY_STR_ASCII(state) (((state) >> 6) & 1u)
/* FRAME_OWNED_BY_GENERATOR: never "incomplete" (3.11+) */
#define VT_PY_OWNER_GENERATOR 1

/* ---- 3.13+: _Py_DebugOffsets ----
 *
 * CPython 3.13 and later publish their own layout for out-of-process tools
 * in a struct at the start of _PyRuntime (Include/internal/
 * pycore_debug_offsets.h): a cookie, the version, a free-threaded flag,
 * then sections of uint64_t offsets, each (but the first) starting with
 * the size of the structure it describes. The tracer reads the frame
 * chain through it. What moves between versions is the struct itself:
 * sections gain fields. A variant says how many fields the sections before
 * the ones read have; vt_py_dbg_place turns it into positions. At start-up
 * every variant of the version is tried and must pass its own checks
 * (python_stack.c: pyobject is {16, 8}, the frame and code offsets lie
 * inside their structures' sizes, the string and bytes offsets are the
 * ones every version has); none passing: native stacks, said once.
 *
 * Not covered by _Py_DebugOffsets (derived, checked by test_offsets.c
 * against each version's headers): _co_firsttraceable, the int just
 * before the pointer co_extra that precedes co_code_adaptive (GIL builds),
 * and sizeof(PyCompactUnicodeObject), asciiobject_size + 16.
 *
 * X(minor_lo, minor_hi, interpreter_state fields, interpreter_frame fields,
 *   code_object fields, set_object section present) */
#define VT_PY_DBG_VARIANTS(X)                                                          \
    X(13, 13, 13, 6, 10, 0) /* 3.13 */                                                 \
    X(14, 15, 16, 8, 11, 1) /* 3.14 final: + threads_main, code_object_generation, \
                               tlbc_generation, stackpointer, tlbc_index, co_tlbc */   \
    X(14, 15, 14, 7, 10, 1) /* 3.14 alphas: + threads_main, stackpointer */

#define VT_PY_DEBUG_COOKIE "xdebugpy"
#define VT_PY_DBG_VERSION 8
#define VT_PY_DBG_FREE_THREADED 16
#define VT_PY_DBG_HEAD 48 /* cookie, version, free_threaded, runtime_state[3] */

struct vt_py_dbg_variant {
    int minor_lo, minor_hi, n_interp, n_frame, n_code, has_set;
};

/* Where each offset the tracer reads sits inside _Py_DebugOffsets. */
struct vt_py_dbg_pos {
    int ts_size, ts_current_frame;
    int fr_size, fr_previous, fr_executable, fr_instr_ptr, fr_owner;
    int co_size, co_filename, co_name, co_qualname, co_linetable, co_firstlineno, co_adaptive;
    int ob_size, ob_type;
    int bytes_ob_size, bytes_ob_sval;
    int str_state, str_length, str_ascii_size;
};

static inline struct vt_py_dbg_pos vt_py_dbg_place(const struct vt_py_dbg_variant *v)
{
    struct vt_py_dbg_pos p;
    int ts = VT_PY_DBG_HEAD + 8 * v->n_interp; /* thread_state: 9 fields */
    int fr = ts + 8 * 9;
    int co = fr + 8 * v->n_frame;
    int ob = co + 8 * v->n_code;
    /* pyobject 2, type_object 4, tuple 3, list 3, [set 4], dict 3, float 2,
     * long 3, then bytes_object 3 and unicode_object 4 */
    int by = ob + 8 * (2 + 4 + 3 + 3 + (v->has_set ? 4 : 0) + 3 + 2 + 3);
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
    p.ob_size = ob;
    p.ob_type = ob + 8;
    p.bytes_ob_size = by + 8;
    p.bytes_ob_sval = by + 16;
    p.str_state = un + 8;
    p.str_length = un + 16;
    p.str_ascii_size = un + 24;
    return p;
}

/* What a GIL build's _co_firsttraceable is, from co_code_adaptive. */
#define VT_PY_DBG_FIRSTTRACEABLE(adaptive) ((adaptive) - 16)
/* sizeof(PyCompactUnicodeObject) from sizeof(PyASCIIObject). */
#define VT_PY_DBG_STR_COMPACT(ascii_size) ((ascii_size) + 16)
/* 3.14+: f_executable is a _PyStackRef; its low bits are tags. */
#define VT_PY_STACKREF_TAG_MASK 7

#endif
