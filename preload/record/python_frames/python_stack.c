/*
 * Python frames of the hook's own thread; see python_stack.h.
 *
 * What this file never does, and why (docs/internals/PYTHON.md):
 *  - PyGILState_Ensure: the hook's thread often holds PyTorch's allocator
 *    mutex while another thread holds the GIL and waits for that mutex.
 *  - PyThreadState_GetFrame, PyFrame_GetBack, PyFrame_GetCode, any other
 *    call returning a new reference: refcount writes and allocation without
 *    the GIL corrupt the heap.
 *  - A profile hook: one slot per thread (torch.profiler takes it), and a
 *    cost on every Python call.
 * Instead the thread state comes from PyGILState_GetThisThreadState (a TSS
 * read, what faulthandler uses from a signal handler) and everything else
 * is plain loads at offsets from python_layout.h, checked against the
 * running interpreter at start-up. Every code object is checked to be one
 * (its type is PyCode_Type) before it is read.
 *
 * Code objects are resolved once and cached by address: an entry keeps the
 * code's name, file name and first line, copied as UTF-8 into an arena. A
 * freed code object's address may be reused by another; an entry counts
 * only while the code at that address still has the same name, file and
 * line table objects and first line, else a new entry replaces it. An id
 * thus stands for one line table, and the lines found in it are cached
 * by id (python_lines.h). Entries are never changed once published, so
 * the writer thread can read any id it is given. All memory is mapped
 * once at start-up: the hook never allocates.
 */
#define _GNU_SOURCE
#include "python_stack.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi_rule.h"
#include "fast_unwind.h"
#include "python_layout.h"
#include "python_lines.h"
#include "raw_event.h"
#include "tracer_services.h"

#define MAX_CODES 65536u        /* recorder code ids 1 .. MAX_CODES - 1 */
#define SLOT_COUNT 131072u      /* open addressing, code address -> id */
#define MAX_PROBES 32
#define ARENA_BYTES (8u << 20)  /* names and file names, UTF-8 */
#define NAME_MAX_BYTES 1024
#define UNKNOWN_CODE 1u         /* "<unknown>": what a full table yields */

static const struct vt_py_layout layouts[] = {
#define VT_PY_LAYOUT_ROW(mi, tf, cc, fp, fc, fi, fo, cf, cn, cq, cl, ct, co, cft, sa, sc, ocs) \
    {mi, tf, cc, fp, fc, fi, fo, cf, cn, cq, cl, ct, co, cft, sa, sc, ocs, 0, VT_PY_LAYOUT_COMMON},
    VT_PY_LAYOUTS(VT_PY_LAYOUT_ROW)
#undef VT_PY_LAYOUT_ROW
};

enum { PY_UNKNOWN, PY_WAITING, PY_BUSY, PY_ON, PY_OFF };

struct code_entry {
    const void *code, *name_obj, *filename_obj, *linetable_obj;
    int32_t first_line;
    uint32_t name_len, filename_len;
    const char *name, *filename;
};

static atomic_int state = PY_UNKNOWN;

static struct {
    const struct vt_py_layout *layout;
    int (*is_initialized)(void);
    int (*is_finalizing)(void);
    void *(*this_thread_state)(void);
    const void *code_type, *unicode_type, *bytes_type;
    uintptr_t eval_start, eval_end;
    uintptr_t cold_start, cold_end; /* its split-off part, if any (find_cold_part) */

    struct code_entry *entries;
    _Atomic uint32_t *slots;
    atomic_uint nentries;
    char *arena;
    atomic_size_t arena_used;
} cpython;

/* ---- plain loads (memcpy: no alignment assumptions) ---- */

static inline const uint8_t *load_ptr(const uint8_t *base, int off)
{
    const uint8_t *p;
    memcpy(&p, base + off, sizeof p);
    return p;
}

static inline int32_t load_i32(const uint8_t *base, int off)
{
    int32_t v;
    memcpy(&v, base + off, sizeof v);
    return v;
}

static inline int64_t load_i64(const uint8_t *base, int off)
{
    int64_t v;
    memcpy(&v, base + off, sizeof v);
    return v;
}

static inline bool has_type(const uint8_t *obj, const void *type)
{
    return obj && load_ptr(obj, cpython.layout->ob_type) == type;
}

/* ---- strings ---- */

static size_t put_utf8(char *out, size_t room, uint32_t cp)
{
    if (cp < 0x80) {
        if (room < 1)
            return 0;
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        if (room < 2)
            return 0;
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        if (room < 3)
            return 0;
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    if (room < 4 || cp > 0x10ffff)
        return 0;
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A str object's text as UTF-8 (cut to cap at a character boundary), from
 * the compact layout: 1, 2 or 4 bytes per character right after the
 * object's header. Anything else (not a str, a legacy string) is "?". */
static size_t copy_str(const uint8_t *obj, char *out, size_t cap)
{
    if (!has_type(obj, cpython.unicode_type)) {
        out[0] = '?';
        return 1;
    }
    const struct vt_py_layout *L = cpython.layout;
    uint32_t st = (uint32_t)load_i32(obj, L->str_state);
    int64_t n = load_i64(obj, L->str_length);
    unsigned kind = VT_PY_STR_KIND(st, L->str_state_shift);
    if (!VT_PY_STR_COMPACT(st, L->str_state_shift) || n < 0 ||
        (kind != 1 && kind != 2 && kind != 4)) {
        out[0] = '?';
        return 1;
    }
    const uint8_t *data =
        obj + (VT_PY_STR_ASCII(st, L->str_state_shift) ? L->str_ascii : L->str_compact);
    size_t used = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t cp;
        if (kind == 1) {
            cp = data[i];
        } else if (kind == 2) {
            uint16_t c;
            memcpy(&c, data + 2 * i, 2);
            cp = c;
        } else {
            memcpy(&cp, data + 4 * i, 4);
        }
        size_t w = put_utf8(out + used, cap - used, cp);
        if (!w)
            break;
        used += w;
    }
    return used;
}

/* ---- the code cache ---- */

static const char *arena_copy(const char *s, size_t len)
{
    size_t at = atomic_fetch_add_explicit(&cpython.arena_used, len, memory_order_relaxed);
    if (at > ARENA_BYTES || len > ARENA_BYTES - at)
        return NULL;
    memcpy(cpython.arena + at, s, len);
    return cpython.arena + at;
}

/* A new, published-once entry for code; 0 if the tables are full. */
static uint32_t new_entry(const uint8_t *code, const uint8_t *name_obj,
                          const uint8_t *filename_obj, const uint8_t *linetable_obj,
                          int32_t first_line)
{
    if (atomic_load_explicit(&cpython.nentries, memory_order_relaxed) >= MAX_CODES)
        return 0;
    char name[NAME_MAX_BYTES], file[NAME_MAX_BYTES];
    size_t nl = copy_str(name_obj, name, sizeof name);
    size_t fl = copy_str(filename_obj, file, sizeof file);
    const char *n = arena_copy(name, nl), *f = arena_copy(file, fl);
    if (!n || !f)
        return 0;
    uint32_t id = atomic_fetch_add_explicit(&cpython.nentries, 1, memory_order_relaxed);
    if (id >= MAX_CODES)
        return 0;
    struct code_entry *e = &cpython.entries[id];
    e->code = code;
    e->name_obj = name_obj;
    e->filename_obj = filename_obj;
    e->linetable_obj = linetable_obj;
    e->first_line = first_line;
    e->name = n;
    e->name_len = (uint32_t)nl;
    e->filename = f;
    e->filename_len = (uint32_t)fl;
    return id; /* published by the release CAS on a slot, or by the event */
}

/* code's recorder id. L: the walk's copy of the layout (walk says why). */
static inline uint32_t code_id(const struct vt_py_layout *L, const uint8_t *code)
{
    _Atomic uint32_t *slots = cpython.slots;
    const struct code_entry *entries = cpython.entries;
    const uint8_t *name = load_ptr(code, L->co_qualname >= 0 ? L->co_qualname : L->co_name);
    const uint8_t *file = load_ptr(code, L->co_filename);
    const uint8_t *table = load_ptr(code, L->co_linetable);
    int32_t first = load_i32(code, L->co_firstlineno);
    uintptr_t h = (uintptr_t)code;
    h = (h >> 4) ^ (h >> 17);
    for (unsigned probe = 0; probe < MAX_PROBES; probe++) {
        _Atomic uint32_t *slot = &slots[(h + probe) & (SLOT_COUNT - 1)];
        uint32_t id = atomic_load_explicit(slot, memory_order_acquire);
        if (id == 0) {
            uint32_t nid = new_entry(code, name, file, table, first);
            if (!nid)
                return UNKNOWN_CODE;
            /* Lost the race for the slot: nid is still right for this
             * code, only not cached; a later call caches it. */
            atomic_compare_exchange_strong_explicit(slot, &id, nid, memory_order_acq_rel,
                                                    memory_order_acquire);
            return nid;
        }
        const struct code_entry *e = &entries[id];
        if (e->code != code)
            continue;
        if (e->name_obj == name && e->filename_obj == file && e->linetable_obj == table &&
            e->first_line == first)
            return id;
        /* The address now holds another code object: replace the entry. */
        uint32_t nid = new_entry(code, name, file, table, first);
        if (!nid)
            return UNKNOWN_CODE;
        atomic_compare_exchange_strong_explicit(slot, &id, nid, memory_order_acq_rel,
                                                memory_order_acquire);
        return nid;
    }
    return UNKNOWN_CODE;
}

bool vt_py_code_describe(uint64_t code_id, struct vt_py_code_desc *out)
{
    if (atomic_load_explicit(&state, memory_order_acquire) != PY_ON || code_id == 0 ||
        code_id >= MAX_CODES || code_id >= atomic_load(&cpython.nentries))
        return false;
    const struct code_entry *e = &cpython.entries[code_id];
    out->qualname = e->name;
    out->qualname_len = e->name_len;
    out->filename = e->filename;
    out->filename_len = e->filename_len;
    out->first_line = e->first_line > 0 ? (uint32_t)e->first_line : 0;
    return true;
}

/* ---- the frame walk ---- */

/* What frame_addr gives for a frame whose bytecode cannot be found. */
#define NO_ADDR INT64_MIN

/* The byte offset of the frame's instruction in its code (-1: none yet,
 * 3.10; NO_ADDR: not found). False for a frame that has not started its
 * first traceable instruction (CPython's tracebacks skip those). */
static inline bool frame_addr(const struct vt_py_layout *L, const uint8_t *frame,
                              const uint8_t *code, int64_t *addr)
{
    if (L->minor == 10) {
        int32_t lasti = load_i32(frame, L->fr_instr);
        *addr = lasti < 0 ? -1 : (int64_t)lasti * 2;
    } else {
        /* As integers: the instruction pointer may not point into code
         * (an incomplete frame points one unit before it). */
        uintptr_t instr = (uintptr_t)load_ptr(frame, L->fr_instr);
        uintptr_t bytecode = (uintptr_t)code + (uintptr_t)L->co_code;
        if (L->fr_tlbc_index >= 0) {
            /* 3.14t: the frame runs the copy of the bytecode its thread
             * specializes, entries[tlbc_index] of co_tlbc (entries[0] is
             * co_code_adaptive), as _PyFrame_GetBytecode finds it. Every
             * copy has the same instructions, so the line table holds.
             * Another thread that first runs this code may swap co_tlbc
             * for a longer copy meanwhile and free the old one once every
             * thread has passed a quiescent point (a thread inside a
             * ctypes call has): the index is checked against the size
             * read; the old array is a small block of CPython's mimalloc
             * heap, which stays mapped while its segment holds other
             * objects, so that a stale read gives at worst a wrong line
             * (docs/internals/PYTHON.md, Limits). */
            int32_t index = load_i32(frame, L->fr_tlbc_index);
            const uint8_t *tlbc = load_ptr(code, L->co_tlbc);
            if (!tlbc || index < 0 || index >= load_i64(tlbc, 0)) {
                *addr = NO_ADDR;
                return true;
            }
            bytecode = (uintptr_t)load_ptr(tlbc, 8 + 8 * index);
        }
        *addr = (int64_t)(instr - bytecode);
        uint8_t owner = frame[L->fr_owner];
        if (owner != VT_PY_OWNER_GENERATOR && *addr / 2 < load_i32(code, L->co_firsttraceable))
            return false;
    }
    return true;
}

/* The line of byte offset addr in code, as its line table says; 0 if
 * unknown. */
static uint32_t line_at(const struct vt_py_layout *L, const uint8_t *code, int64_t addr)
{
    const uint8_t *table = load_ptr(code, L->co_linetable);
    int32_t first = load_i32(code, L->co_firstlineno);
    if (!has_type(table, cpython.bytes_type))
        return 0;
    int64_t len = load_i64(table, L->var_size);
    if (len < 0)
        return 0;
    int line = vt_py_line_from_table(L->minor, table + L->bytes_data, (size_t)len, first, addr);
    return line > 0 ? (uint32_t)line : 0;
}

/* The line of a frame of code (recorder id id) at byte offset addr: the
 * cache's (python_lines.h), or the line table's, then cached. The id
 * "<unknown>" stands for many codes: its lines are not cached. */
static inline uint32_t frame_line(const struct vt_py_layout *L, const uint8_t *code, uint32_t id,
                                  int64_t addr)
{
    if (addr == NO_ADDR)
        return 0;
    if (id == UNKNOWN_CODE)
        return line_at(L, code, addr);
    int64_t cached = vt_py_lines_cached(id, addr);
    if (cached >= 0)
        return (uint32_t)cached;
    uint32_t line = line_at(L, code, addr);
    vt_py_lines_remember(id, addr, line);
    return line;
}

static const uint8_t *innermost_frame(const uint8_t *tstate)
{
    const struct vt_py_layout *L = cpython.layout;
    const uint8_t *f = load_ptr(tstate, L->ts_frame);
    if (f && L->cf_current >= 0)
        f = load_ptr(f, L->cf_current); /* tstate->cframe->current_frame */
    return f;
}

/* Up to max Python frames of the calling thread, innermost first. */
static size_t walk(uint64_t *out, size_t max)
{
    if (!cpython.is_initialized() || (cpython.is_finalizing && cpython.is_finalizing()))
        return 0; /* thread states may be gone */
    const uint8_t *tstate = cpython.this_thread_state();
    if (!tstate)
        return 0;
    /* A copy of the layout: the cache's atomic loads would otherwise have
     * every offset read again from memory at every frame. */
    const struct vt_py_layout layout = *cpython.layout, *L = &layout;
    const void *code_type = cpython.code_type;
    /* The frame before, when it ran the same code: a recursion, or the
     * same wrapper twice. Its code is alive (both frames hold it), so its
     * id holds without the cache's checks, and at the same instruction
     * so does its line. */
    const uint8_t *last_code = NULL;
    int64_t last_addr = 0;
    uint32_t last_id = 0;
    uint64_t last_ip = 0;
    size_t n = 0, seen = 0;
    /* seen bounds the walk even on a chain that never ends. */
    for (const uint8_t *f = innermost_frame(tstate); f && n < max && seen < 4 * max + 64;
         f = load_ptr(f, L->fr_previous), seen++) {
        if (L->fr_owner >= 0 && L->owner_cstack >= 0 && f[L->fr_owner] >= L->owner_cstack)
            continue; /* the C entry shim, an interpreter-owned frame */
        const uint8_t *code = load_ptr(f, L->fr_code);
        if (L->exec_tag_mask) /* 3.14+: a _PyStackRef, tags in its low bits */
            code = (const uint8_t *)((uintptr_t)code & ~(uintptr_t)L->exec_tag_mask);
        if (!code || load_ptr(code, L->ob_type) != code_type)
            continue;
        int64_t addr;
        if (!frame_addr(L, f, code, &addr))
            continue;
        if (code != last_code) {
            last_id = code_id(L, code);
            last_code = code;
        } else if (addr == last_addr) {
            out[n++] = last_ip;
            continue;
        }
        last_addr = addr;
        last_ip = vt_py_frame_ip(last_id, frame_line(L, code, last_id, addr));
        out[n++] = last_ip;
    }
    return n;
}

static bool in_eval(uintptr_t ret)
{
    /* A return address points after its call: look at ret - 1. */
    return (ret - 1 >= cpython.eval_start && ret - 1 < cpython.eval_end) ||
           (ret - 1 >= cpython.cold_start && ret - 1 < cpython.cold_end);
}

size_t vt_py_stack_merge(void *const *native, size_t n, uint64_t *out, size_t depth,
                         bool *native_at_interpreter)
{
    if (depth > VT_MAX_STACK_DEPTH)
        depth = VT_MAX_STACK_DEPTH;
    *native_at_interpreter = false;
    size_t e = 0;
    while (e < n && !in_eval((uintptr_t)native[e]))
        e++;
    size_t k = 0;
    if (e < n) {
        for (; k < e && k < depth; k++)
            out[k] = (uint64_t)(uintptr_t)native[k];
        size_t room = VT_MAX_STACK_DEPTH - k;
        size_t py = walk(out + k, depth < room ? depth : room);
        if (py > 0)
            return k + py;
        *native_at_interpreter = true;
    }
    /* No interpreter frame, or no Python frame: the native stack. */
    for (k = 0; k < n && k < depth; k++)
        out[k] = (uint64_t)(uintptr_t)native[k];
    return k;
}

/* ---- start-up ---- */

/* The loader's dlsym, as the recorder was handed it at start (NULL: none). */
typedef void *(*loader_dlsym_fn)(void *handle, const char *name);
static _Atomic(loader_dlsym_fn) loader_dlsym;

void vt_py_stack_set_lookup(void *(*dlsym_fn)(void *handle, const char *name))
{
    atomic_store_explicit(&loader_dlsym, dlsym_fn, memory_order_release);
}

static void *sym(const char *name)
{
    loader_dlsym_fn fn = atomic_load_explicit(&loader_dlsym, memory_order_acquire);
    return fn ? fn(RTLD_DEFAULT, name) : NULL;
}

static bool say_no(const char *why, unsigned minor)
{
    vt_say(2, "vramtrace: Python 3.%u: %s; stacks stay native (no Python frames)\n", minor, why);
    return false;
}

static const struct vt_py_dbg_variant dbg_variants[] = {
#define VT_PY_DBG_ROW(lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu) \
    {lo, hi, ni, nt, ne, nf, nc, ny, nh, ns, nu},
    VT_PY_DBG_VARIANTS(VT_PY_DBG_ROW)
#undef VT_PY_DBG_ROW
};

/* The row built from the interpreter's _Py_DebugOffsets (3.13+). */
static struct vt_py_layout dbg_layout;

static uint64_t dbg_u64(const uint8_t *rt, int at)
{
    uint64_t v;
    memcpy(&v, rt + at, sizeof v);
    return v;
}

/* One variant's reading of _Py_DebugOffsets, if it passes its checks; ft:
 * a free-threaded build's (3.13t, 3.14t: python_layout.h). */
static bool dbg_read(const uint8_t *rt, const struct vt_py_dbg_variant *v, unsigned minor, bool ft,
                     struct vt_py_layout *L)
{
    struct vt_py_dbg_pos p = vt_py_dbg_place(v);
    /* The object headers every version has, in a GIL or free-threaded
     * build: what the struct must say, and what the walk then uses. */
    const int ob_size = ft ? 32 : 16, ob_type = ft ? VT_PY_FT_OB_TYPE : VT_PY_OB_TYPE;
    const int var_size = ft ? VT_PY_FT_OB_SIZE : VT_PY_OB_SIZE;
    const int bytes_data = ft ? VT_PY_FT_BYTES_DATA : VT_PY_BYTES_DATA;
    const int str_state = ft ? VT_PY_FT_STR_STATE : VT_PY_STR_STATE;
    const int str_length = ft ? VT_PY_FT_STR_LENGTH : VT_PY_STR_LENGTH;
    /* 3.14t made interned a whole byte and added thread-local bytecode;
     * 3.13t has neither (its str state bits are a GIL build's, its frames
     * run co_code_adaptive itself). */
    const bool ft314 = ft && minor >= 14;
    uint64_t ts_size = dbg_u64(rt, p.ts_size), cur = dbg_u64(rt, p.ts_current_frame);
    uint64_t fr_size = dbg_u64(rt, p.fr_size);
    uint64_t prev = dbg_u64(rt, p.fr_previous), exec = dbg_u64(rt, p.fr_executable);
    uint64_t instr = dbg_u64(rt, p.fr_instr_ptr), owner = dbg_u64(rt, p.fr_owner);
    uint64_t co_size = dbg_u64(rt, p.co_size);
    uint64_t co[6] = {dbg_u64(rt, p.co_filename), dbg_u64(rt, p.co_name),
                      dbg_u64(rt, p.co_qualname), dbg_u64(rt, p.co_linetable),
                      dbg_u64(rt, p.co_firstlineno), dbg_u64(rt, p.co_adaptive)};
    uint64_t ascii = dbg_u64(rt, p.str_ascii_size);
    uint64_t compact = p.str_compact_size >= 0 ? dbg_u64(rt, p.str_compact_size)
                                               : (uint64_t)VT_PY_DBG_STR_COMPACT((int)ascii);
    /* The sections around those read pin the variant: an object header of
     * 16 bytes with its type at 8 (free-threaded: 32, 24), bytes and str
     * fields where every version has them, and offsets inside their
     * structures. */
    if (dbg_u64(rt, p.ob_size) != (uint64_t)ob_size ||
        dbg_u64(rt, p.ob_type) != (uint64_t)ob_type ||
        dbg_u64(rt, p.bytes_ob_size) != (uint64_t)var_size ||
        dbg_u64(rt, p.bytes_ob_sval) != (uint64_t)bytes_data ||
        dbg_u64(rt, p.str_state) != (uint64_t)str_state ||
        dbg_u64(rt, p.str_length) != (uint64_t)str_length || ascii < 32 || ascii > 64 ||
        compact <= ascii || compact > 96)
        return false;
    if (ts_size > 65536 || cur + 8 > ts_size || fr_size > 4096 || prev + 8 > fr_size ||
        exec + 8 > fr_size || instr + 8 > fr_size || owner >= fr_size || co_size > 4096)
        return false;
    for (int i = 0; i < 6; i++)
        if (co[i] + (i == 4 ? 4 : i == 5 ? 2 : 8) > co_size || co[i] < 16)
            return false;
    if (co[5] < 24)
        return false;
    /* 3.14t: the thread-local bytecode fields, co_tlbc just before
     * co_code_adaptive (what the derived _co_firsttraceable counts on). */
    uint64_t tlbc_index = 0, co_tlbc = 0;
    if (ft314) {
        if (p.fr_tlbc_index < 0 || p.co_tlbc < 0)
            return false;
        tlbc_index = dbg_u64(rt, p.fr_tlbc_index);
        co_tlbc = dbg_u64(rt, p.co_tlbc);
        if (tlbc_index < 8 || tlbc_index + 4 > fr_size || co_tlbc + 8 != co[5])
            return false;
    }
    *L = (struct vt_py_layout){
        .minor = (int)minor,
        .ts_frame = (int)cur,
        .cf_current = -1,
        .fr_previous = (int)prev,
        .fr_code = (int)exec,
        .fr_instr = (int)instr,
        .fr_owner = (int)owner,
        .co_filename = (int)co[0],
        .co_name = (int)co[1],
        .co_qualname = (int)co[2],
        .co_linetable = (int)co[3],
        .co_firstlineno = (int)co[4],
        .co_code = (int)co[5],
        .co_firsttraceable = ft314 ? VT_PY_DBG_FIRSTTRACEABLE_FT((int)co[5])
                                : VT_PY_DBG_FIRSTTRACEABLE((int)co[5]),
        .str_ascii = (int)ascii,
        .str_compact = (int)compact,
        .owner_cstack = 3,
        .exec_tag_mask = minor >= 14 ? VT_PY_STACKREF_TAG_MASK : 0,
        .ob_type = ob_type,
        .var_size = var_size,
        .bytes_data = bytes_data,
        .str_length = str_length,
        .str_state = str_state,
        .str_state_shift = ft314 ? VT_PY_FT_STR_STATE_SHIFT : 0,
        .fr_tlbc_index = ft314 ? (int)tlbc_index : -1,
        .co_tlbc = ft314 ? (int)co_tlbc : -1,
    };
    return true;
}

/* 3.13+: the row from the interpreter's own _Py_DebugOffsets; NULL with
 * *why set when there is none the tracer can read. */
static const struct vt_py_layout *layout_from_debug_offsets(const uint8_t *rt, unsigned long hexver,
                                                           const char **why)
{
    unsigned minor = (unsigned)(hexver >> 16) & 0xff;
    if (!rt || memcmp(rt, VT_PY_DEBUG_COOKIE, 8) != 0 ||
        (dbg_u64(rt, VT_PY_DBG_VERSION) >> 16) != (hexver >> 16)) {
        *why = "no _Py_DebugOffsets of this version at the start of _PyRuntime";
        return NULL;
    }
    /* Free-threaded: 3.13t and 3.14t, whose layouts were tried against the
     * real interpreters (docs/internals/PYTHON.md); later ones are unknown. */
    bool ft = dbg_u64(rt, VT_PY_DBG_FREE_THREADED) != 0;
    if (ft && minor > 14) {
        *why = "free-threaded build not supported";
        return NULL;
    }
    for (size_t i = 0; i < sizeof dbg_variants / sizeof dbg_variants[0]; i++) {
        const struct vt_py_dbg_variant *v = &dbg_variants[i];
        if ((int)minor >= v->minor_lo && (int)minor <= v->minor_hi &&
            dbg_read(rt, v, minor, ft, &dbg_layout))
            return &dbg_layout;
    }
    *why = minor > (unsigned)dbg_variants[sizeof dbg_variants / sizeof dbg_variants[0] - 1].minor_hi
               ? "version not supported"
               : "its _Py_DebugOffsets has a layout not known";
    return NULL;
}

/* The executable segment holding addr: [*lo, *hi). */
struct text_seg {
    uintptr_t addr, lo, hi;
};

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct text_seg *t = arg;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && t->addr >= lo &&
            t->addr - lo < ph->p_memsz) {
            t->lo = lo;
            t->hi = lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

/*
 * GCC splits a function into its hot part, which the symbol covers, and a
 * ".cold" part elsewhere in the text, with an FDE of its own and no
 * dynamic symbol. Which blocks go where is the compiler's guess, or its
 * profile's: in Debian's 3.14.10 (GCC 16.2) the symbol holds
 * 1,184 bytes of set-up and the whole instruction loop (84 KB) is in the
 * cold part, so that every call out of the interpreter returns there.
 * The hot part jumps into the cold part (jmp/jcc rel32) at many places:
 * the code range (FDE) that most jump targets of the hot part fall inside,
 * past its start (a jump to a start is a tail call to another function),
 * at least two of them, is taken to be the cold part. Random bytes that
 * look like a jump rarely land in the text at all, let alone twice in one
 * function. Once, at start-up; x86-64 only.
 */
static void find_cold_part(void)
{
#if defined(__x86_64__)
    struct text_seg t = {cpython.eval_start, 0, 0};
    dl_iterate_phdr(find_text, &t);
    if (!t.hi || cpython.eval_end > t.hi)
        return;
    enum { CANDIDATES = 32, LOOKUPS = 256 };
    struct {
        uintptr_t lo, hi;
        unsigned hits;
    } c[CANDIDATES];
    unsigned nc = 0, lookups = 0;
    const uint8_t *b = (const uint8_t *)cpython.eval_start;
    size_t len = cpython.eval_end - cpython.eval_start;
    for (size_t i = 0; i + 6 <= len; i++) {
        size_t at;
        if (b[i] == 0xe9)
            at = i + 1; /* jmp rel32 */
        else if (b[i] == 0x0f && (b[i + 1] & 0xf0) == 0x80)
            at = i + 2; /* jcc rel32 */
        else
            continue;
        int32_t rel;
        memcpy(&rel, b + at, sizeof rel);
        uintptr_t to = cpython.eval_start + at + 4 + (uintptr_t)(intptr_t)rel;
        if ((to >= cpython.eval_start && to < cpython.eval_end) || to < t.lo || to >= t.hi)
            continue;
        unsigned k = 0;
        while (k < nc && !(to >= c[k].lo && to < c[k].hi))
            k++;
        if (k == nc) {
            uint64_t lo, hi;
            /* a tail call (to a start) makes no candidate: those could
             * fill the list before the cold part is seen */
            if (nc == CANDIDATES || lookups++ == LOOKUPS || !vt_cfi_code_range(to, &lo, &hi) ||
                to == lo || (lo < cpython.eval_end && hi > cpython.eval_start))
                continue;
            c[nc].lo = (uintptr_t)lo, c[nc].hi = (uintptr_t)hi, c[nc].hits = 0;
            nc++;
        }
        if (to > c[k].lo)
            c[k].hits++;
    }
    unsigned best = 0;
    for (unsigned k = 0; k < nc; k++)
        if (c[k].hits >= 2 && c[k].hits > best) {
            best = c[k].hits;
            cpython.cold_start = c[k].lo;
            cpython.cold_end = c[k].hi;
        }
#endif
}

/* Py_Version (3.11+) or the text of Py_GetVersion (3.10) as 0xMMmmppLS. */
static unsigned long python_version(void)
{
    const unsigned long *pv = sym("Py_Version");
    if (pv)
        return *pv;
    const char *(*get)(void) = (const char *(*)(void))sym("Py_GetVersion");
    unsigned major = 0, minor = 0, micro = 0;
    if (!get || sscanf(get(), "%u.%u.%u", &major, &minor, &micro) < 2)
        return 0;
    return (unsigned long)major << 24 | minor << 16 | micro << 8 | 0xf0;
}

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static bool set_up(void)
{
    unsigned long ver = python_version();
    unsigned major = (unsigned)(ver >> 24), minor = (unsigned)(ver >> 16) & 0xff;
    unsigned level = (unsigned)(ver >> 4) & 0xf;
    if (major != 3)
        return say_no("unknown version", minor);
    /* Free-threaded builds after 3.14t (3.15t) are said as such, before
     * anything else: their objects and frames are laid out differently,
     * and only 3.13t's and 3.14t's layouts are known (dbg_read). */
    if (minor > 14 && sym("_PyRuntime") &&
        memcmp(sym("_PyRuntime"), VT_PY_DEBUG_COOKIE, 8) == 0 &&
        dbg_u64(sym("_PyRuntime"), VT_PY_DBG_FREE_THREADED) != 0)
        return say_no("free-threaded build not supported", minor);
    if (minor < 13) {
        for (size_t i = 0; i < sizeof layouts / sizeof layouts[0]; i++)
            if (layouts[i].minor == (int)minor)
                cpython.layout = &layouts[i];
        if (!cpython.layout)
            return say_no("version not supported", minor);
    }
    if (level < 0xc && minor <= 13) /* alphas and betas of these may still move fields */
        return say_no("pre-release not supported", minor);
    /* Debug builds (Py_REF_DEBUG) define these; release builds do not. */
    if (sym("_Py_NegativeRefcount") || sym("_Py_RefTotal") || sym("_Py_GetGlobalRefTotal"))
        return say_no("debug build not supported", minor);
    if (minor >= 13) {
        const char *why = NULL;
        cpython.layout = layout_from_debug_offsets(sym("_PyRuntime"), ver, &why);
        if (!cpython.layout)
            return say_no(why, minor);
    }
    cpython.this_thread_state = (void *(*)(void))sym("PyGILState_GetThisThreadState");
    cpython.is_finalizing = (int (*)(void))sym(minor >= 13 ? "Py_IsFinalizing" : "_Py_IsFinalizing");
    cpython.code_type = sym("PyCode_Type");
    cpython.unicode_type = sym("PyUnicode_Type");
    cpython.bytes_type = sym("PyBytes_Type");
    void *eval = sym("_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *esym = NULL;
    if (!cpython.this_thread_state || !cpython.code_type || !cpython.unicode_type || !cpython.bytes_type || !eval ||
        !dladdr1(eval, &info, (void **)&esym, RTLD_DL_SYMENT) || !esym || !esym->st_size)
        return say_no("interpreter symbols not found", minor);
    cpython.eval_start = (uintptr_t)eval;
    cpython.eval_end = cpython.eval_start + esym->st_size;
    find_cold_part();
    cpython.entries = map_zeroed(MAX_CODES * sizeof *cpython.entries);
    cpython.slots = map_zeroed(SLOT_COUNT * sizeof *cpython.slots);
    cpython.arena = map_zeroed(ARENA_BYTES);
    if (!cpython.entries || !cpython.slots || !cpython.arena || !vt_py_lines_init())
        return say_no("no memory for the code table", minor);
    /* id 0 is no code; id 1 is what frames get once the table is full. */
    static const char unknown[] = "<unknown>";
    cpython.entries[UNKNOWN_CODE].name = unknown;
    cpython.entries[UNKNOWN_CODE].name_len = sizeof unknown - 1;
    cpython.entries[UNKNOWN_CODE].filename = "";
    atomic_store(&cpython.nentries, UNKNOWN_CODE + 1);
    /* The native frames below the interpreter loop are dropped: the walks
     * that will be merged may end there. */
    const uintptr_t lo[] = {cpython.eval_start, cpython.cold_start};
    const uintptr_t hi[] = {cpython.eval_end, cpython.cold_end};
    vt_fast_unwind_set_cuts(lo, hi, cpython.cold_end > cpython.cold_start ? 2 : 1);
    return true;
}

bool vt_py_stack_active(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);
    if (s == PY_ON)
        return cpython.is_initialized();
    if (s != PY_UNKNOWN && s != PY_WAITING)
        return false;
    /* One thread finds out; the others record native stacks meanwhile. */
    if (!atomic_compare_exchange_strong(&state, &s, PY_BUSY))
        return false;
    if (!cpython.is_initialized) {
        cpython.is_initialized = (int (*)(void))sym("Py_IsInitialized");
        if (!cpython.is_initialized) {
            atomic_store_explicit(&state, PY_OFF, memory_order_release);
            return false; /* not a Python process: nothing to say */
        }
    }
    if (!cpython.is_initialized()) {
        atomic_store_explicit(&state, PY_WAITING, memory_order_release);
        return false;
    }
    bool ok = set_up();
    atomic_store_explicit(&state, ok ? PY_ON : PY_OFF, memory_order_release);
    return ok;
}
