/*
 * Python frames in the tracer's stacks (docs/internals/PYTHON.md).
 *
 * In a Python program the native stack at cudaMalloc is mostly interpreter
 * frames; what the user needs is file:line of their own code. The hook's
 * thread reads its own Python frame chain, read-only, the way CPython's
 * faulthandler does: no GIL, no Python API, no reference counts, nothing
 * allocated. The chain cannot change under us: its thread is the one
 * sitting in the hook.
 *
 * A captured stack becomes: the native frames from the hook down to the
 * first interpreter frame (_PyEval_EvalFrameDefault), then the thread's
 * Python frames, innermost first, as tagged ips (VT_PY_FRAME_TAG | code id
 * | line, trace_format.h); the native frames below (Py_RunMain, main) are
 * dropped. Code ids here are the recorder's own; the writer renumbers them
 * per trace file (python_codes.h) and describes each before first use.
 */
#ifndef VRAMTRACE_PRELOAD_PYTHON_STACK_H
#define VRAMTRACE_PRELOAD_PYTHON_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How CPython's symbols are found: the loader's own dlsym, which the
 * recorder is handed at start (vt_recorder_links.loader_dlsym), asked with
 * RTLD_DEFAULT. NULL (the default): they are not found, and stacks stay
 * native. Set before the first vt_py_stack_active. */
void vt_py_stack_set_lookup(void *(*dlsym_fn)(void *handle, const char *name));

/* True when the calling thread's stack should be merged with Python frames:
 * the process runs a supported CPython that is initialized and not
 * finalizing. The first calls find out (lazily, once Py_IsInitialized()
 * says so); a process without Python costs one symbol lookup, ever. An
 * unsupported Python (version, debug or free-threaded build, a layout that
 * does not match) is said once on stderr, then stacks stay native. */
bool vt_py_stack_active(void);

/* Builds the event's stack in out (at most VT_MAX_STACK_DEPTH entries) from
 * n native return addresses, innermost first (the tracer's own frames
 * already skipped): native frames up to the first interpreter frame (at
 * most depth of them), then up to depth Python frames. Without an
 * interpreter frame or without Python frames on this thread, the first
 * depth native frames. Returns the number of entries. Call only when
 * vt_py_stack_active() said true.
 *
 * The native walk need not go past the first interpreter frame: once
 * Python is found, the interpreter loop is the cut of the own walker
 * (vt_fast_backtrace_from_to_cut, fast_unwind.h). *native_at_interpreter:
 * the stack returned is native although it reaches the interpreter (the
 * thread had no Python frame to follow it), so a walk that was cut there
 * lacks the native frames below: walk the whole stack and merge again. */
size_t vt_py_stack_merge(void *const *native, size_t n, uint64_t *out, size_t depth,
                         bool *native_at_interpreter);

/* What a recorder code id stands for (for the writer thread). Strings are
 * UTF-8, not NUL-terminated, valid for the life of the process. */
struct vt_py_code_desc {
    const char *qualname;
    size_t qualname_len;
    const char *filename;
    size_t filename_len;
    uint32_t first_line;
};
/* false for an id the recorder never handed out. */
bool vt_py_code_describe(uint64_t code_id, struct vt_py_code_desc *out);

#endif
