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
 *  owner_cstack  FRAME_OWNED_BY_CSTACK: the C entry shim frame, skipped
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
    X(12, 56, 0, 8, 0, 56, 70, 112, 120, 128, 68, 136, 192, 176, 40, 56, 3)            \
    X(13, 72, -1, 8, 0, 56, 70, 112, 120, 128, 68, 136, 200, 184, 40, 56, 3)

struct vt_py_layout {
    int minor;
    int ts_frame, cf_current;
    int fr_previous, fr_code, fr_instr, fr_owner;
    int co_filename, co_name, co_qualname, co_firstlineno, co_linetable;
    int co_code, co_firsttraceable;
    int str_ascii, str_compact;
    int owner_cstack;
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

/* 3.13+: _Py_DebugOffsets at the start of _PyRuntime, the interpreter's own
 * description of its layout (its struct changes between minor versions:
 * these offsets are 3.13's). The tracer checks its table against it. */
#define VT_PY_DEBUG_COOKIE "xdebugpy"
#define VT_PY313_DBG_VERSION 8
#define VT_PY313_DBG_FREE_THREADED 16
#define VT_PY313_DBG_TSTATE_CURRENT_FRAME 184
#define VT_PY313_DBG_FRAME_PREVIOUS 232
#define VT_PY313_DBG_FRAME_EXECUTABLE 240
#define VT_PY313_DBG_FRAME_INSTR_PTR 248
#define VT_PY313_DBG_FRAME_OWNER 264
#define VT_PY313_DBG_CODE_FILENAME 280
#define VT_PY313_DBG_CODE_NAME 288
#define VT_PY313_DBG_CODE_QUALNAME 296
#define VT_PY313_DBG_CODE_LINETABLE 304
#define VT_PY313_DBG_CODE_FIRSTLINENO 312
#define VT_PY313_DBG_CODE_ADAPTIVE 344

#endif
