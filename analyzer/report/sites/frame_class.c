/*
 * The one table of frames that are not the program's own (frame_class.h).
 * A rule matches when each of its patterns that is set matches (fnmatch:
 * "libcudart.so*", "cuda[A-Z]*"); the first rule that matches decides.
 */
#include "frame_class.h"
#include "input_files.h"

#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

struct frame_rule {
    enum vt_frame_class cls;
    const char *module;   /* the module's basename */
    const char *function; /* as symbolized: plain C, DWARF's name, or mangled C++ */
    const char *file;     /* the source file's basename; with a '/' or '\\', its path */
    /* Only directly above (a caller of) a runtime frame of the same
     * module: the public entry of a statically linked runtime. */
    bool runtime_entry;
};

static const struct frame_rule rules[] = {
    {VT_FRAME_TRACER, "libvramtrace*", NULL, NULL, false},

    /* The CUDA runtime: the shared library, or linked statically into the
     * program or a library (nvcc's default; NCCL, cuBLAS carry copies). */
    {VT_FRAME_RUNTIME, "libcudart.so*", NULL, NULL, false},
    {VT_FRAME_RUNTIME, NULL, "cudart::*", NULL, false},
    {VT_FRAME_RUNTIME, NULL, "_ZN6cudart*", NULL, false},
    {VT_FRAME_RUNTIME, NULL, "_ZNK6cudart*", NULL, false},
    {VT_FRAME_RUNTIME, NULL, "__cudart*", NULL, false},
    {VT_FRAME_RUNTIME, NULL, "cuda[A-Z]*", NULL, true},
    /* The simulated runtime of the tests and examples (tests/simdriver/
     * runtime/), also its private copy inside libprivrt_user.so. */
    {VT_FRAME_RUNTIME, "libsimcudart.so*", NULL, NULL, false},
    {VT_FRAME_RUNTIME, NULL, NULL, "simcudart_*.c", false},

    {VT_FRAME_DRIVER, "libcuda.so*", NULL, NULL, false},

    /* PyTorch's CUDA caching allocator (and its cudaMallocAsync backend). */
    {VT_FRAME_ALLOCATOR, "libc10_cuda.so*", NULL, NULL, false},
    {VT_FRAME_ALLOCATOR, NULL, "c10::cuda::CUDACachingAllocator::*", NULL, false},
    {VT_FRAME_ALLOCATOR, NULL, "_ZN3c104cuda20CUDACachingAllocator*", NULL, false},
    {VT_FRAME_ALLOCATOR, NULL, "_ZNK3c104cuda20CUDACachingAllocator*", NULL, false},
    {VT_FRAME_ALLOCATOR, NULL, "_ZZN3c104cuda20CUDACachingAllocator*", NULL, false},
    /* Its model in examples/ (example 2), as the simulated runtime stands in
     * for libcudart. */
    {VT_FRAME_ALLOCATOR, NULL, NULL, "caching_allocator.c", false},

    /* PyTorch's own Python code, between the user's and the allocator:
     * Module._call_impl, functional wrappers. Its package where pip, conda
     * or Debian install it, or a source checkout's (an editable install of
     * the pytorch repository) - not any directory named torch: a user's
     * own ~/torch/train.py is the user's. */
    {VT_FRAME_FRAMEWORK, "python", NULL, "*/site-packages/torch/*", false},
    {VT_FRAME_FRAMEWORK, "python", NULL, "*/dist-packages/torch/*", false},
    {VT_FRAME_FRAMEWORK, "python", NULL, "*/pytorch/torch/*", false},
    /* Windows paths */
    {VT_FRAME_FRAMEWORK, "python", NULL, "*\\\\site-packages\\\\torch\\\\*", false},
    {VT_FRAME_FRAMEWORK, "python", NULL, "*\\\\pytorch\\\\torch\\\\*", false},

    /* Foreign-function layers between a program's Python and the library
     * it calls: ctypes (libffi and the _ctypes extension), cffi, pybind11's
     * dispatch. Folded: the program's line and the call it made are what
     * tell a site. */
    {VT_FRAME_FFI, "libffi.so*", NULL, NULL, false},
    {VT_FRAME_FFI, "_ctypes*.so", NULL, NULL, false},
    {VT_FRAME_FFI, "_cffi_backend*.so", NULL, NULL, false},
    {VT_FRAME_FFI, NULL, "ffi_call*", NULL, false},
    {VT_FRAME_FFI, NULL, "pybind11::*", NULL, false},
    {VT_FRAME_FFI, NULL, "_ZN8pybind11*", NULL, false},
    /* CPython's native frames (the interpreter loop, calls, imports): the
     * program is in its Python frames, which the tracer merges in where it
     * reads them (docs/internals/PYTHON.md). */
    {VT_FRAME_INTERPRETER, "libpython3*", NULL, NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "_Py*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "Py*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "method_vectorcall*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "cfunction_*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "slot_tp_*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "run_*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "pymain_*", NULL, false},
    {VT_FRAME_INTERPRETER, "python3*", "main", NULL, false},

    /* libc's start-up of the process and of threads. */
    {VT_FRAME_STARTUP, NULL, "_start", NULL, false},
    {VT_FRAME_STARTUP, NULL, "__libc_start_main*", NULL, false},
    {VT_FRAME_STARTUP, NULL, "__libc_start_call_main", NULL, false},
    {VT_FRAME_STARTUP, "libc.so*", "start_thread", NULL, false},
    {VT_FRAME_STARTUP, "libc.so*", "__clone*", NULL, false},
    {VT_FRAME_STARTUP, "libc.so*", "clone*", NULL, false},
};

static bool matches(const char *pattern, const char *s)
{
    return !pattern || (s && fnmatch(pattern, s, 0) == 0);
}

static const char *basename_of(const char *path)
{
    return path ? vt_path_base_name(path) : NULL;
}

enum vt_frame_class vt_frame_classify(struct vt_frame_classifier *c, const struct vt_frame *f)
{
    enum vt_frame_class cls = VT_FRAME_OWN;
    /* Every rule names a module, a function or a file: a frame with none
     * of them (an address alone, no symbols) is the program's at once. */
    for (size_t i = 0; (f->module || f->function || f->file) && i < sizeof rules / sizeof rules[0];
         i++) {
        const struct frame_rule *r = &rules[i];
        if (r->runtime_entry &&
            (c->inner != VT_FRAME_RUNTIME || !f->module || !c->inner_module ||
             strcmp(f->module, c->inner_module)))
            continue;
        if (matches(r->module, f->module) && matches(r->function, f->function) &&
            (!r->file ||
             matches(r->file, strpbrk(r->file, "/\\") ? f->file : basename_of(f->file)))) {
            cls = r->cls;
            break;
        }
    }
    c->inner = cls;
    c->inner_module = f->module;
    return cls;
}

const char *vt_frame_class_name(enum vt_frame_class c)
{
    switch (c) {
    case VT_FRAME_RUNTIME:
        return "cuda runtime";
    case VT_FRAME_DRIVER:
        return "cuda driver";
    case VT_FRAME_ALLOCATOR:
        return "allocator";
    case VT_FRAME_FRAMEWORK:
        return "pytorch";
    case VT_FRAME_TRACER:
        return "tracer";
    case VT_FRAME_STARTUP:
        return "libc start-up";
    case VT_FRAME_FFI:
        return "foreign-function call";
    case VT_FRAME_INTERPRETER:
        return "python interpreter";
    default:
        return NULL;
    }
}

bool vt_frame_class_is_api(enum vt_frame_class c)
{
    return c == VT_FRAME_RUNTIME || c == VT_FRAME_DRIVER || c == VT_FRAME_ALLOCATOR;
}

/* The last two names of a mangled nested name (_ZN...E), "A::f"; false if
 * it is not one this simple reader knows. */
static bool short_mangled(const char *m, char *buf, size_t n)
{
    const char *p = m + 2; /* "_Z" */
    if (*p == 'Z')         /* a local entity: its enclosing function */
        p++;
    const char *name[2] = {NULL, NULL};
    size_t len[2] = {0, 0};
    if (*p == 'N') {
        p++;
        while (*p == 'K' || *p == 'V' || *p == 'r')
            p++;
    }
    while (*p >= '0' && *p <= '9') {
        size_t l = 0;
        while (*p >= '0' && *p <= '9')
            l = l * 10 + (size_t)(*p++ - '0');
        if (l == 0 || l > strlen(p))
            return false;
        name[0] = name[1], len[0] = len[1];
        name[1] = p, len[1] = l;
        p += l;
    }
    if (!name[1])
        return false;
    if (name[0])
        snprintf(buf, n, "%.*s::%.*s", (int)len[0], name[0], (int)len[1], name[1]);
    else
        snprintf(buf, n, "%.*s", (int)len[1], name[1]);
    return true;
}

const char *vt_frame_short_name(const struct vt_frame *f, char *buf, size_t n)
{
    const char *fn = f->function;
    if (!fn || !*fn) {
        snprintf(buf, n, "%s", f->module ? f->module : "?");
        return buf;
    }
    if (!strncmp(fn, "_Z", 2)) {
        if (!short_mangled(fn, buf, n))
            snprintf(buf, n, "%s", f->module ? f->module : fn);
        return buf;
    }
    /* "ns::Class::method(int) const" -> "Class::method" */
    size_t end = strcspn(fn, "(");
    const char *start = fn, *last = NULL;
    for (const char *p = fn; p + 1 < fn + end; p++)
        if (p[0] == ':' && p[1] == ':') {
            if (last)
                start = last + 2;
            last = p;
            p++;
        }
    snprintf(buf, n, "%.*s", (int)(fn + end - start), start);
    return buf;
}
