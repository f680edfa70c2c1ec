/*
 * The frame walk through _Py_DebugOffsets (3.13+), without a Python: a
 * fake interpreter in memory (a _PyRuntime starting with the debug
 * offsets, a thread state, frames, code, str and bytes objects) laid out
 * with offsets that no version's table has, handed to the recorder through
 * its symbol lookup. One mode per process (the recorder finds out once):
 *
 *   313      3.13.0: untagged f_executable, the 3.13 variant
 *   314      3.14.0: tagged f_executable (low bits set), the final variant,
 *            an interpreter-owned frame (owner 3) skipped
 *   314a     3.14.0a7: the alpha variant of the struct
 *   315      3.15.2: the 3.15 variant (longer thread_state, err_stackitem,
 *            type_object and heap_type_object, compactunicodeobject_size
 *            published), f_executable tagged Py_TAG_REFCNT, the thread
 *            state's sentinel base_frame (owner 3, f_executable None) at
 *            the bottom of the chain
 *   315a     3.15.0a1: a pre-release read through the 3.14 final variant
 *   315on314 3.14.0 whose struct is laid out as 3.15's: no 3.14 variant
 *            reads it, native stacks only
 *   split    3.14.0 whose interpreter loop calls out from the part of the
 *            function the compiler split off (GCC's .cold), outside what
 *            the symbol covers, as in Debian's 3.14 build
 *   ft       3.14.0 free-threaded: object headers of 32 bytes (the type at
 *            24, every str and bytes field 16 further, the str state bits
 *            6 higher), _co_firsttraceable 8 bytes further from
 *            co_code_adaptive, and the innermost frame running its
 *            thread's own copy of the bytecode (tlbc_index 1 of co_tlbc)
 *   ft313    3.13.0 free-threaded: the same object headers, but the str
 *            state bits and _co_firsttraceable where a GIL build has them,
 *            untagged f_executable, no thread-local bytecode
 *   ft315    3.15.2 free-threaded: native stacks only
 *   cookie   no cookie at _PyRuntime: native stacks only
 *   garbage  a cookie, but sections no variant reads: native stacks only
 *
 * Checks: the merged stack is the native frame above the interpreter, then
 * the Python frames innermost first with their lines from the location
 * table at each frame's instruction, the shim frame left out; the code ids
 * describe the right names and files.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_layout.h"
#include "raw_event.h"
#include "python_stack.h"
#include "vramtrace/trace_format.h"

static int failures;
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                  \
            failures++;                                                           \
        }                                                                         \
    } while (0)

/* Offsets of the fake interpreter: deliberately unlike any real version. */
enum {
    TS_CURRENT_FRAME = 200,
    FR_SIZE = 96, FR_PREVIOUS = 24, FR_EXECUTABLE = 8, FR_INSTR = 40, FR_OWNER = 80,
    CO_SIZE = 320, CO_FILENAME = 120, CO_NAME = 128, CO_QUALNAME = 136, CO_LINETABLE = 152,
    CO_FIRSTLINENO = 64, CO_ADAPTIVE = 288,
    FR_TLBC_INDEX = 64, CO_TLBC = CO_ADAPTIVE - 8, /* free-threaded 3.14 */
    STR_ASCII = 40,
    STR_COMPACT_315 = 72, /* published by 3.15; else STR_ASCII + 16 */
};

static _Alignas(16) uint8_t runtime[2048];
static _Alignas(16) uint8_t tstate[512];
static _Alignas(16) uint8_t frames[4][FR_SIZE];
static _Alignas(16) uint8_t code_a[CO_SIZE + 64], code_b[CO_SIZE + 64];
static _Alignas(16) uint8_t strs[4][128], none_obj[64];
static _Alignas(16) uint8_t table[64];
static _Alignas(16) uint8_t code_type[64], unicode_type[64], bytes_type[64];
static unsigned long version;
static int str_ascii = STR_ASCII, str_compact = STR_ASCII + 16;
/* The object headers: a GIL build's, or (ft) a free-threaded one's; tlbc:
 * 3.14t's thread-local bytecode, and its str state and code layout. */
static int ft, tlbc;
static int ob_type = VT_PY_OB_TYPE, var_size = VT_PY_OB_SIZE, bytes_data = VT_PY_BYTES_DATA;
static int str_length = VT_PY_STR_LENGTH, str_state = VT_PY_STR_STATE, state_shift;
/* ft: co_tlbc arrays {size, entries[]} and the thread's copy of code_a */
static _Alignas(16) uint8_t tlbc_a[24], tlbc_b[16], copy_a[64];

static int fake_initialized(void) { return 1; }
static int fake_finalizing(void) { return 0; }
static void *fake_this_thread_state(void) { return tstate; }

/* The "interpreter loop": exported (the test links with export_dynamic) so
 * that dladdr1 gives its size, as for the real _PyEval_EvalFrameDefault. */
__attribute__((noinline, visibility("default"))) int vt_fake_eval_frame(int x)
{
    volatile int y = x * 3;
    return y + 1;
}

/* The same, split: the calls out are on paths GCC deems cold, which it
 * moves to the cold part of the function (vt_fake_eval_split.cold), reached
 * by jumps from the hot part; the return address into that part is what
 * the recorder sees. (Another compiler may not split it: then the return
 * address is inside the symbol, and the mode tests the plain case.) */
static void *volatile split_return;
__attribute__((noinline, cold)) static void vt_fake_call_out(int k)
{
    split_return = __builtin_return_address(0);
    __asm__ volatile("" : : "r"(k) : "memory");
}

__attribute__((noinline, visibility("default"))) int vt_fake_eval_split(int x)
{
    volatile int y = x * 3;
    if (__builtin_expect(y == 21, 0)) {
        vt_fake_call_out(1);
        y += 2;
    }
    if (__builtin_expect(y == 46, 0)) {
        vt_fake_call_out(2);
        y += 5;
    }
    if (__builtin_expect(y == 99, 0)) {
        vt_fake_call_out(3);
        y += 7;
    }
    return y + 1;
}
static int split;

static void put64(uint8_t *base, int at, uint64_t v) { memcpy(base + at, &v, 8); }
static void putp(uint8_t *base, int at, const void *p) { memcpy(base + at, &p, sizeof p); }

static void *fake_dlsym(void *handle, const char *name)
{
    (void)handle;
    if (!strcmp(name, "Py_IsInitialized"))
        return (void *)fake_initialized;
    if (!strcmp(name, "Py_IsFinalizing"))
        return (void *)fake_finalizing;
    if (!strcmp(name, "PyGILState_GetThisThreadState"))
        return (void *)fake_this_thread_state;
    if (!strcmp(name, "Py_Version"))
        return &version;
    if (!strcmp(name, "_PyRuntime"))
        return runtime;
    if (!strcmp(name, "PyCode_Type"))
        return code_type;
    if (!strcmp(name, "PyUnicode_Type"))
        return unicode_type;
    if (!strcmp(name, "PyBytes_Type"))
        return bytes_type;
    if (!strcmp(name, "_PyEval_EvalFrameDefault"))
        return split ? (void *)vt_fake_eval_split : (void *)vt_fake_eval_frame;
    return NULL;
}

/* A compact str of one byte per character: ASCII (data after the
 * PyASCIIObject) or Latin-1 (after the PyCompactUnicodeObject). */
static uint8_t *make_str(int i, const char *latin1)
{
    uint8_t *s = strs[i];
    size_t n = strlen(latin1);
    int ascii = 1;
    for (size_t k = 0; k < n; k++)
        ascii &= (unsigned char)latin1[k] < 0x80;
    putp(s, ob_type, unicode_type);
    put64(s, str_length, n);
    /* kind 1, compact; free-threaded: interned is the whole first byte */
    uint32_t state = (1u << 2 | 1u << 5 | (unsigned)ascii << 6) << state_shift;
    memcpy(s + str_state, &state, 4);
    memcpy(s + (ascii ? str_ascii : str_compact), latin1, n);
    return s;
}

static void make_code(uint8_t *co, uint8_t *name, uint8_t *file, int32_t first)
{
    putp(co, ob_type, code_type);
    putp(co, CO_NAME, name);
    putp(co, CO_QUALNAME, name);
    putp(co, CO_FILENAME, file);
    memcpy(co + CO_FIRSTLINENO, &first, 4);
    putp(co, CO_LINETABLE, table);
    int32_t firsttraceable = 0;
    memcpy(co + (tlbc ? VT_PY_DBG_FIRSTTRACEABLE_FT(CO_ADAPTIVE)
                    : VT_PY_DBG_FIRSTTRACEABLE(CO_ADAPTIVE)),
           &firsttraceable, 4);
}

static void make_frame(uint8_t *f, const uint8_t *prev, const uint8_t *code, uintptr_t tag,
                       unsigned unit, uint8_t owner)
{
    putp(f, FR_PREVIOUS, prev);
    uintptr_t exec = (uintptr_t)code | tag;
    memcpy(f + FR_EXECUTABLE, &exec, sizeof exec);
    putp(f, FR_INSTR, code + CO_ADAPTIVE + 2 * unit);
    f[FR_OWNER] = owner;
}

/* The debug offsets as the given variant of the struct places them. */
static void make_runtime(int variant)
{
    static const struct vt_py_dbg_variant vs[] = {
#define ROW(lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu) \
    {lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu},
        VT_PY_DBG_VARIANTS(ROW)
#undef ROW
    };
    struct vt_py_dbg_pos p = vt_py_dbg_place(&vs[variant]);
    memcpy(runtime, VT_PY_DEBUG_COOKIE, 8);
    put64(runtime, VT_PY_DBG_VERSION, version);
    put64(runtime, VT_PY_DBG_FREE_THREADED, (uint64_t)ft);
    put64(runtime, p.ts_size, 512);
    put64(runtime, p.ts_current_frame, TS_CURRENT_FRAME);
    put64(runtime, p.fr_size, FR_SIZE);
    put64(runtime, p.fr_previous, FR_PREVIOUS);
    put64(runtime, p.fr_executable, FR_EXECUTABLE);
    put64(runtime, p.fr_instr_ptr, FR_INSTR);
    put64(runtime, p.fr_owner, FR_OWNER);
    put64(runtime, p.co_size, CO_SIZE);
    put64(runtime, p.co_filename, CO_FILENAME);
    put64(runtime, p.co_name, CO_NAME);
    put64(runtime, p.co_qualname, CO_QUALNAME);
    put64(runtime, p.co_linetable, CO_LINETABLE);
    put64(runtime, p.co_firstlineno, CO_FIRSTLINENO);
    put64(runtime, p.co_adaptive, CO_ADAPTIVE);
    put64(runtime, p.ob_size, (uint64_t)ob_type + 8);
    put64(runtime, p.ob_type, (uint64_t)ob_type);
    put64(runtime, p.bytes_ob_size, (uint64_t)var_size);
    put64(runtime, p.bytes_ob_sval, (uint64_t)bytes_data);
    put64(runtime, p.str_state, (uint64_t)str_state);
    put64(runtime, p.str_length, (uint64_t)str_length);
    if (p.fr_tlbc_index >= 0) /* 0 in a GIL build, as CPython's */
        put64(runtime, p.fr_tlbc_index, tlbc ? FR_TLBC_INDEX : 0);
    if (p.co_tlbc >= 0)
        put64(runtime, p.co_tlbc, tlbc ? CO_TLBC : 0);
    put64(runtime, p.str_ascii_size, (uint64_t)str_ascii);
    if (p.str_compact_size >= 0)
        put64(runtime, p.str_compact_size, str_compact);
}

static void expect_code(uint64_t ip, const char *name, const char *file, uint32_t line)
{
    CHECK(vt_ip_is_py_frame(ip));
    CHECK(vt_py_frame_line(ip) == line);
    struct vt_py_code_desc d;
    CHECK(vt_py_code_describe(vt_py_frame_code(ip), &d));
    CHECK(d.qualname_len == strlen(name) && !memcmp(d.qualname, name, d.qualname_len));
    CHECK(d.filename_len == strlen(file) && !memcmp(d.filename, file, d.filename_len));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "314";
    /* vs[] of make_runtime: 0 3.13, 1 3.15, 2 3.14 final, 3 3.14 alphas */
    int variant = 2, on = 1, base_frame = 0;
    uintptr_t tag = 1; /* 3.14+: a deferred reference's tag */
    version = 0x030E00F0; /* 3.14.0 final */
    if (!strcmp(mode, "313")) {
        version = 0x030D00F0, tag = 0, variant = 0;
    } else if (!strcmp(mode, "314a")) {
        version = 0x030E00A7, variant = 3;
    } else if (!strcmp(mode, "315")) {
        version = 0x030F02F0, variant = 1, base_frame = 1, str_compact = STR_COMPACT_315;
    } else if (!strcmp(mode, "315a")) {
        version = 0x030F00A1, tag = 3;
    } else if (!strcmp(mode, "315on314")) {
        variant = 1, on = 0, str_compact = STR_COMPACT_315;
    } else if (!strcmp(mode, "split")) {
        split = 1;
    } else if (!strcmp(mode, "ft")) {
        ft = 1, tlbc = 1;
    } else if (!strcmp(mode, "ft313")) {
        version = 0x030D00F0, tag = 0, variant = 0, ft = 1;
    } else if (!strcmp(mode, "ft315")) {
        version = 0x030F02F0, variant = 1, str_compact = STR_COMPACT_315, ft = 1, on = 0;
    } else if (!strcmp(mode, "cookie") || !strcmp(mode, "garbage")) {
        on = 0;
    } else if (strcmp(mode, "314") != 0) {
        printf("unknown mode %s\n", mode);
        return 2;
    }

    if (ft) {
        ob_type = VT_PY_FT_OB_TYPE, var_size = VT_PY_FT_OB_SIZE;
        bytes_data = VT_PY_FT_BYTES_DATA, str_length = VT_PY_FT_STR_LENGTH;
        str_state = VT_PY_FT_STR_STATE, state_shift = tlbc ? VT_PY_FT_STR_STATE_SHIFT : 0;
        str_ascii = 64, str_compact = 64 + 16; /* past the state at 48 */
    }
    /* Location table: units 0-3 at the first line, 4-7 five lines on. */
    putp(table, ob_type, bytes_type);
    put64(table, var_size, 4);
    const uint8_t lt[4] = {0x80 | 13 << 3 | 3, 0x00, 0x80 | 13 << 3 | 3, 5 << 1};
    memcpy(table + bytes_data, lt, sizeof lt);
    make_code(code_a, make_str(0, "Model.forward"), make_str(1, "model.py"), 40);
    make_code(code_b, make_str(2, "<module>"), make_str(3, "tr\xe4in.py"), 7);
    make_frame(frames[0], frames[1], code_a, tag, 5, 0);  /* line 45 */
    make_frame(frames[1], frames[2], code_b, 0, 0, 3);    /* shim: skipped */
    make_frame(frames[2], base_frame ? frames[3] : NULL, code_b, tag, 1, 0); /* line 7 */
    if (base_frame) { /* 3.15: None (immortal: tagged), owned by the interpreter */
        uintptr_t none = (uintptr_t)none_obj | 1;
        memcpy(frames[3] + FR_EXECUTABLE, &none, sizeof none);
        frames[3][FR_OWNER] = 3;
    }
    if (tlbc) {
        /* code_a's frame runs its thread's copy (index 1): instr_ptr into
         * copy_a, at unit 5 (line 45), and nowhere near code_a's own
         * bytecode, where unit 0 is line 40; code_b's, the main copy. */
        put64(tlbc_a, 0, 2);
        putp(tlbc_a, 8, code_a + CO_ADAPTIVE);
        putp(tlbc_a, 16, copy_a);
        putp(code_a, CO_TLBC, tlbc_a);
        put64(tlbc_b, 0, 1);
        putp(tlbc_b, 8, code_b + CO_ADAPTIVE);
        putp(code_b, CO_TLBC, tlbc_b);
        putp(frames[0], FR_INSTR, copy_a + 2 * 5);
        int32_t index = 1;
        memcpy(frames[0] + FR_TLBC_INDEX, &index, 4);
    }
    putp(tstate, TS_CURRENT_FRAME, frames[0]);
    make_runtime(variant);
    if (!strcmp(mode, "cookie"))
        memcpy(runtime, "notdebug", 8);
    if (!strcmp(mode, "garbage"))
        memset(runtime + 48, 0x5a, sizeof runtime - 48);

    vt_py_stack_set_lookup(fake_dlsym);
    int active = vt_py_stack_active();
    CHECK(active == on);
    if (active) {
        void *native[3] = {(void *)0x401000, (void *)((uintptr_t)vt_fake_eval_frame + 1),
                           (void *)0x402000};
        if (split) {
            vt_fake_eval_split(7); /* y == 21: calls out, y == 23 */
            native[1] = split_return;
            Dl_info info;
            const ElfW(Sym) *esym = NULL;
            if (dladdr1((void *)vt_fake_eval_split, &info, (void **)&esym, RTLD_DL_SYMENT) &&
                esym)
                printf("split: the return address is %s the symbol\n",
                       (uintptr_t)split_return - 1 - (uintptr_t)vt_fake_eval_split <
                               esym->st_size
                           ? "inside (not split by this compiler)"
                           : "outside");
        }
        uint64_t out[VT_MAX_STACK_DEPTH];
        bool native_at_interpreter = true;
        size_t n = vt_py_stack_merge(native, 3, out, 32, &native_at_interpreter);
        CHECK(n == 3);
        CHECK(!native_at_interpreter);
        if (n == 3) {
            CHECK(out[0] == 0x401000);
            expect_code(out[1], "Model.forward", "model.py", 45);
            expect_code(out[2], "<module>", "tr\xc3\xa4in.py", 7);
        }
        /* No interpreter frame: the native stack, whole. */
        void *plain[2] = {(void *)0x401000, (void *)0x402000};
        n = vt_py_stack_merge(plain, 2, out, 32, &native_at_interpreter);
        CHECK(n == 2 && out[1] == 0x402000 && !native_at_interpreter);
        /* The interpreter's frame, no Python frame on the thread: the
         * native stack, said so (a walk that ended there is too short). */
        putp(tstate, TS_CURRENT_FRAME, NULL);
        n = vt_py_stack_merge(native, 3, out, 32, &native_at_interpreter);
        CHECK(n == 3 && out[2] == 0x402000 && native_at_interpreter);
    }
    printf("%s: %s (%s)\n", failures ? "FAIL" : "ok", mode,
           on ? "Python frames read through _Py_DebugOffsets" : "native stacks, said once");
    return failures ? 1 : 0;
}
