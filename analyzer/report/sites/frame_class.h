/*
 * Which frames of a stack are not the program's own: the CUDA runtime, the
 * driver, known allocators, the tracer, libc's start-up. One table
 * (frame_class.c) decides it for the text report (which folds them into
 * "via cudaMallocAsync") and the JSON report (which flags them, "folded").
 * docs/internals/REPORT_INTERNALS.md, "Stacks", says what is folded and how
 * it is shown (docs/user/REPORT.md, "Stacks", in short).
 */
#ifndef VRAMTRACE_REPORT_FRAME_CLASS_H
#define VRAMTRACE_REPORT_FRAME_CLASS_H

#include <stdbool.h>
#include <stddef.h>

#include "symbolize.h"

enum vt_frame_class {
    VT_FRAME_OWN = 0,    /* the program's (or a library's the table does not know) */
    VT_FRAME_RUNTIME,    /* the CUDA runtime: libcudart, static cudart::, the simulated one */
    VT_FRAME_DRIVER,     /* libcuda */
    VT_FRAME_ALLOCATOR,  /* PyTorch's caching allocator (c10::cuda) */
    VT_FRAME_FRAMEWORK,  /* PyTorch's own Python code (torch/nn/modules/module.py...) */
    VT_FRAME_TRACER,     /* libvramtrace.so itself: left out everywhere */
    VT_FRAME_STARTUP,    /* libc's process and thread start-up (_start, start_thread) */
    VT_FRAME_FFI,        /* foreign-function layers: libffi, ctypes, cffi, pybind11 */
    VT_FRAME_INTERPRETER, /* CPython's own native frames (its Python frames are the program's) */
};

/* Classifies the frames of one stack, innermost first: a statically
 * linked runtime's public entry (cudaMalloc in the program's own binary)
 * is known only by what it calls, the frame before it. Start each stack
 * with {0}. */
struct vt_frame_classifier {
    enum vt_frame_class inner; /* the class of the frame before */
    const char *inner_module;
};
enum vt_frame_class vt_frame_classify(struct vt_frame_classifier *c, const struct vt_frame *f);

/* "cuda runtime", "cuda driver", "allocator", "pytorch", "tracer", "libc start-up",
 * "foreign-function call", "python interpreter"; NULL for VT_FRAME_OWN. */
const char *vt_frame_class_name(enum vt_frame_class c);

/* Whether frames of class c name an API the program called (runtime,
 * driver, allocator): the "via" tag names one of these. */
bool vt_frame_class_is_api(enum vt_frame_class c);

/* A short name for f in a "via" tag: the function without its parameters
 * and with at most its innermost class or namespace ("cudaMallocAsync",
 * "NativeCachingAllocator::malloc", also from a mangled C++ name), else
 * its module's name. */
const char *vt_frame_short_name(const struct vt_frame *f, char *buf, size_t n);

#endif
