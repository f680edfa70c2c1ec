/*
 * The tracer's table of CPython layouts (preload/record/python_frames/python_layout.h),
 * checked with offsetof() against one Python version's own headers
 * (internal ones included); meson builds this once per installed version.
 * The library itself never includes Python headers.
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <frameobject.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_code.h"
#include "internal/pycore_frame.h"
#endif
#if PY_VERSION_HEX >= 0x030E0000
#include "internal/pycore_debug_offsets.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_stackref.h" /* Py_TAG_BITS */
#elif PY_VERSION_HEX >= 0x030D0000
#include "internal/pycore_runtime.h"
#endif

#include "python_layout.h"

static int failures;

static void same(const char *what, long table, long header)
{
    if (table != header) {
        printf("FAIL: %s: table says %ld, Python %s headers say %ld\n", what, table, PY_VERSION,
               header);
        failures++;
    }
}

#define SAME(field, expr) same(#field, L->field, (long)(expr))

#if defined(Py_GIL_DISABLED) && PY_MINOR_VERSION > 14
/* A free-threaded build after 3.14t (3.15t): the tracer does not read its
 * frames (native stacks, said once; python_frames_V checks
 * that), so it has no offsets to check here. */
int main(void)
{
    (void)same;
    printf("skip: Python %s is free-threaded: the tracer keeps native stacks\n", PY_VERSION);
    return 77;
}
#elif PY_VERSION_HEX >= 0x030D0000
/* The object headers the tracer takes for this build (python_stack.c,
 * dbg_read): a GIL build's, or a free-threaded one's. */
#ifdef Py_GIL_DISABLED
#define OB_TYPE VT_PY_FT_OB_TYPE
#define VAR_SIZE VT_PY_FT_OB_SIZE
#define BYTES_DATA VT_PY_FT_BYTES_DATA
#define STR_LENGTH VT_PY_FT_STR_LENGTH
#define STR_STATE VT_PY_FT_STR_STATE
#if PY_MINOR_VERSION >= 14 /* interned a whole byte; co_tlbc */
#define STATE_SHIFT VT_PY_FT_STR_STATE_SHIFT
#define FIRSTTRACEABLE VT_PY_DBG_FIRSTTRACEABLE_FT
#else
#define STATE_SHIFT 0
#define FIRSTTRACEABLE VT_PY_DBG_FIRSTTRACEABLE
#endif
#else
#define OB_TYPE VT_PY_OB_TYPE
#define VAR_SIZE VT_PY_OB_SIZE
#define BYTES_DATA VT_PY_BYTES_DATA
#define STR_LENGTH VT_PY_STR_LENGTH
#define STR_STATE VT_PY_STR_STATE
#define STATE_SHIFT 0
#define FIRSTTRACEABLE VT_PY_DBG_FIRSTTRACEABLE
#endif

/* 3.13+: no row; the tracer reads _Py_DebugOffsets. Its variant for this
 * version must place every offset it reads where the headers have it, and
 * the two derived values must hold. */
int main(void)
{
    static const struct vt_py_dbg_variant vs[] = {
#define ROW(lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu) \
    {lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu},
        VT_PY_DBG_VARIANTS(ROW)
#undef ROW
    };
    const struct vt_py_dbg_variant *v = NULL;
    for (size_t i = 0; i < sizeof vs / sizeof vs[0] && !v; i++)
        if (PY_MINOR_VERSION >= vs[i].minor_lo && PY_MINOR_VERSION <= vs[i].minor_hi)
            v = &vs[i]; /* the first: the final release's */
    if (!v) {
        printf("FAIL: Python %s has no _Py_DebugOffsets variant\n", PY_VERSION);
        return 1;
    }
    struct vt_py_dbg_pos p = vt_py_dbg_place(v);
#define AT(pos, member) same(#member, p.pos, (long)offsetof(_Py_DebugOffsets, member))
    same("debug cookie", 0, offsetof(_Py_DebugOffsets, cookie));
    same("debug version", VT_PY_DBG_VERSION, offsetof(_Py_DebugOffsets, version));
    same("debug free_threaded", VT_PY_DBG_FREE_THREADED,
         offsetof(_Py_DebugOffsets, free_threaded));
    same("debug head", VT_PY_DBG_HEAD, offsetof(_Py_DebugOffsets, interpreter_state));
    AT(ts_size, thread_state.size);
    AT(ts_current_frame, thread_state.current_frame);
    AT(fr_size, interpreter_frame.size);
    AT(fr_previous, interpreter_frame.previous);
    AT(fr_executable, interpreter_frame.executable);
    AT(fr_instr_ptr, interpreter_frame.instr_ptr);
    AT(fr_owner, interpreter_frame.owner);
    AT(co_size, code_object.size);
    AT(co_filename, code_object.filename);
    AT(co_name, code_object.name);
    AT(co_qualname, code_object.qualname);
    AT(co_linetable, code_object.linetable);
    AT(co_firstlineno, code_object.firstlineno);
    AT(co_adaptive, code_object.co_code_adaptive);
    AT(ob_size, pyobject.size);
    AT(ob_type, pyobject.ob_type);
    AT(bytes_ob_size, bytes_object.ob_size);
    AT(bytes_ob_sval, bytes_object.ob_sval);
    AT(str_state, unicode_object.state);
    AT(str_length, unicode_object.length);
    AT(str_ascii_size, unicode_object.asciiobject_size);
#if PY_VERSION_HEX >= 0x030E0000
    AT(fr_tlbc_index, interpreter_frame.tlbc_index);
    AT(co_tlbc, code_object.co_tlbc);
#else
    same("no tlbc_index", -1, p.fr_tlbc_index);
    same("no co_tlbc", -1, p.co_tlbc);
#endif
#if defined(Py_GIL_DISABLED) && PY_VERSION_HEX >= 0x030E0000
    /* 3.14t: where the frame's copy of the bytecode is found */
    same("tlbc_index is an int32", 4, sizeof(((_PyInterpreterFrame *)0)->tlbc_index));
    same("co_tlbc just before co_code_adaptive", offsetof(PyCodeObject, co_code_adaptive),
         offsetof(PyCodeObject, co_tlbc) + sizeof(void *));
    same("tlbc array size", 0, offsetof(_PyCodeArray, size));
    same("tlbc array entries", 8, offsetof(_PyCodeArray, entries));
#endif
#if PY_VERSION_HEX >= 0x030F0000
    AT(str_compact_size, unicode_object.compactunicodeobject_size);
#else
    same("no compactunicodeobject_size", -1, p.str_compact_size);
#endif
    same("debug offsets at the start of _PyRuntime", 0, offsetof(_PyRuntimeState, debug_offsets));
    same("_co_firsttraceable", FIRSTTRACEABLE((long)offsetof(PyCodeObject, co_code_adaptive)),
         offsetof(PyCodeObject, _co_firsttraceable));
    same("_co_firsttraceable is an int", 4, sizeof(((PyCodeObject *)0)->_co_firsttraceable));
    same("compact str", VT_PY_DBG_STR_COMPACT((long)sizeof(PyASCIIObject)),
         sizeof(PyCompactUnicodeObject));
    same("owner is one byte", 1, sizeof(((_PyInterpreterFrame *)0)->owner));
    same("generator owner", VT_PY_OWNER_GENERATOR, FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030E0000
    same("first non-code owner", 3, FRAME_OWNED_BY_INTERPRETER);
    same("stackref tag bits inside the mask", 0, Py_TAG_BITS & ~VT_PY_STACKREF_TAG_MASK);
#else
    same("first non-code owner", 3, FRAME_OWNED_BY_CSTACK);
#endif
    /* the headers the struct's checks expect, from the compiler */
    same("object size", OB_TYPE + 8, sizeof(PyObject));
    same("ob_type", OB_TYPE, offsetof(PyObject, ob_type));
    same("ob_size", VAR_SIZE, offsetof(PyVarObject, ob_size));
    same("bytes data", BYTES_DATA, offsetof(PyBytesObject, ob_sval));
    same("str length", STR_LENGTH, offsetof(PyASCIIObject, length));
    same("str state", STR_STATE, offsetof(PyASCIIObject, state));
    /* the state bits, as for the rows */
    PyASCIIObject probe;
    memset(&probe, 0, sizeof probe);
    probe.state.kind = PyUnicode_2BYTE_KIND;
    probe.state.compact = 1;
    uint32_t word;
    memcpy(&word, (char *)&probe + STR_STATE, sizeof word);
    same("state kind bits", VT_PY_STR_KIND(word, STATE_SHIFT), PyUnicode_2BYTE_KIND);
    same("state compact bit", VT_PY_STR_COMPACT(word, STATE_SHIFT), 1);
    same("state ascii bit", VT_PY_STR_ASCII(word, STATE_SHIFT), 0);
    memset(&probe, 0, sizeof probe);
    probe.state.ascii = 1;
    memcpy(&word, (char *)&probe + STR_STATE, sizeof word);
    same("state ascii bit set", VT_PY_STR_ASCII(word, STATE_SHIFT), 1);
    same("state kind clear", VT_PY_STR_KIND(word, STATE_SHIFT), 0);
    if (failures)
        return 1;
    printf("ok: Python %s: the _Py_DebugOffsets variant matches its headers\n", PY_VERSION);
    return 0;
}
#else
int main(void)
{
    static const struct vt_py_layout rows[] = {
#define ROW(mi, tf, cc, fp, fc, fi, fo, cf, cn, cq, cl, ct, co, cft, sa, sc, ocs) \
    {mi, tf, cc, fp, fc, fi, fo, cf, cn, cq, cl, ct, co, cft, sa, sc, ocs, 0, VT_PY_LAYOUT_COMMON},
        VT_PY_LAYOUTS(ROW)
#undef ROW
    };
    const struct vt_py_layout *L = NULL;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].minor == PY_MINOR_VERSION)
            L = &rows[i];
    if (!L) {
        printf("FAIL: Python %s has no row in the table\n", PY_VERSION);
        return 1;
    }
    same("ob_type", VT_PY_OB_TYPE, offsetof(PyObject, ob_type));
    same("ob_size", VT_PY_OB_SIZE, offsetof(PyVarObject, ob_size));
    same("bytes data", VT_PY_BYTES_DATA, offsetof(PyBytesObject, ob_sval));
    same("str length", VT_PY_STR_LENGTH, offsetof(PyASCIIObject, length));
    same("str state", VT_PY_STR_STATE, offsetof(PyASCIIObject, state));
    SAME(str_ascii, sizeof(PyASCIIObject));
    SAME(str_compact, sizeof(PyCompactUnicodeObject));
    SAME(co_filename, offsetof(PyCodeObject, co_filename));
    SAME(co_name, offsetof(PyCodeObject, co_name));
    SAME(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    SAME(co_linetable, offsetof(PyCodeObject, co_linetable));
    same("co_firstlineno is an int", 4, sizeof(((PyCodeObject *)0)->co_firstlineno));

    /* The state bits: build a state word with the compiler's own bitfield
     * layout and read it back with the table's macros. */
    PyASCIIObject probe;
    memset(&probe, 0, sizeof probe);
    probe.state.kind = PyUnicode_2BYTE_KIND;
    probe.state.compact = 1;
    probe.state.ascii = 0;
    uint32_t word;
    memcpy(&word, (char *)&probe + VT_PY_STR_STATE, sizeof word);
    same("state kind bits", VT_PY_STR_KIND(word, 0), PyUnicode_2BYTE_KIND);
    same("state compact bit", VT_PY_STR_COMPACT(word, 0), 1);
    same("state ascii bit", VT_PY_STR_ASCII(word, 0), 0);
    memset(&probe, 0, sizeof probe);
    probe.state.ascii = 1;
    memcpy(&word, (char *)&probe + VT_PY_STR_STATE, sizeof word);
    same("state ascii bit set", VT_PY_STR_ASCII(word, 0), 1);
    same("state kind clear", VT_PY_STR_KIND(word, 0), 0);

#if PY_VERSION_HEX < 0x030B0000
    SAME(ts_frame, offsetof(PyThreadState, frame));
    SAME(fr_previous, offsetof(PyFrameObject, f_back));
    SAME(fr_code, offsetof(PyFrameObject, f_code));
    SAME(fr_instr, offsetof(PyFrameObject, f_lasti));
    same("f_lasti is an int", 4, sizeof(((PyFrameObject *)0)->f_lasti));
    SAME(cf_current, -1);
    SAME(fr_owner, -1);
    SAME(co_qualname, -1);
#else
    SAME(ts_frame, offsetof(PyThreadState, cframe));
    SAME(cf_current, offsetof(_PyCFrame, current_frame));
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_code));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
    SAME(fr_previous, offsetof(_PyInterpreterFrame, previous));
    SAME(fr_owner, offsetof(_PyInterpreterFrame, owner));
    same("owner is one byte", 1, sizeof(((_PyInterpreterFrame *)0)->owner));
    same("generator owner", VT_PY_OWNER_GENERATOR, FRAME_OWNED_BY_GENERATOR);
#if PY_VERSION_HEX >= 0x030C0000
    SAME(owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
    SAME(owner_cstack, -1);
#endif
    SAME(co_qualname, offsetof(PyCodeObject, co_qualname));
    SAME(co_code, offsetof(PyCodeObject, co_code_adaptive));
    SAME(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
    same("_co_firsttraceable is an int", 4, sizeof(((PyCodeObject *)0)->_co_firsttraceable));
    same("code unit", 2, sizeof(_Py_CODEUNIT));
#endif

    if (failures)
        return 1;
    printf("ok: Python %s: every offset of the table matches its headers\n", PY_VERSION);
    return 0;
}
#endif
