/*
 * Offline symbolization of recorded instruction pointers with elfutils
 * libdwfl, from the trace's module map (path, load bias, build-id).
 *
 * For each ip the symbolizer returns one frame per function at that
 * address, innermost first: inlined functions (with the line inside them)
 * followed by the function they were inlined into (with the line of the
 * inlined call). Results are cached per ip.
 *
 * Where binaries are looked for, in order: SYSROOT/path (--sysroot), path
 * itself, then DIR/basename for each --debug-dir; separate debug info is
 * found by build-id or debuglink under the debug dirs and /usr/lib/debug.
 * A binary whose build-id differs from the recorded one is not used (its
 * symbols would be wrong); such frames show module and offset only.
 *
 * Nothing from a trace is executed or loaded as code: binaries are only
 * read as ELF/DWARF data.
 */
#ifndef VRAMTRACE_ANALYZER_SYMBOLIZE_H
#define VRAMTRACE_ANALYZER_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

struct vt_symbolizer;

struct vt_symbolize_options {
    const char *sysroot;           /* NULL: none */
    const char *const *debug_dirs; /* NULL-terminated, may be NULL */
    bool disabled;                 /* addresses only */
};

struct vt_frame {
    uint64_t ip;
    const char *function; /* NULL if unknown */
    const char *file;     /* NULL if unknown */
    uint64_t line;        /* 0 if unknown */
    const char *module;   /* basename of the module, NULL if outside any */
    uint64_t module_offset; /* ip - load bias */
    bool inlined;         /* an inlined function (not the containing one) */
};

/* Builds the module map of one trace (its module records so far). */
struct vt_symbolizer *vt_symbolizer_new(const struct vt_reader *r,
                                        const struct vt_symbolize_options *opt);
void vt_symbolizer_free(struct vt_symbolizer *s);

/* Frames for ip (a return address: looked up at ip - 1). *frames stays
 * valid until the next vt_symbolize call (copy what you keep); the strings
 * in it until vt_symbolizer_free. Returns the number of frames (>= 1). */
size_t vt_symbolize(struct vt_symbolizer *s, uint64_t ip, const struct vt_frame **frames);

/* Modules whose file could not be found or did not match its build-id,
 * for a note in the report. */
size_t vt_symbolizer_missing(const struct vt_symbolizer *s);

/* Calls fn for each frame of a recorded stack (a stack-trie node id),
 * innermost first, inlined functions as frames of their own, leaving out
 * the tracer's own frames (libvramtrace.so): not only the leading ones - a
 * runtime hook (cudaMalloc) calls the real runtime, which calls a hooked
 * driver function, so the tracer's frames also sit between the runtime's
 * and the program's. At most max frames (0: all); sym NULL: addresses
 * only. Returns how many were delivered. */
typedef void (*vt_frame_fn)(void *ctx, const struct vt_frame *f);
size_t vt_stack_frames(const struct vt_reader *r, struct vt_symbolizer *sym, uint64_t stack,
                       size_t max, vt_frame_fn fn, void *ctx);
/* Whether some frame of r's stacks, through sym, can have a function's
 * name: a Python frame, or a native one where sym reads debug information.
 * False: every frame vt_stack_frames delivers is an address (and module),
 * so what looks for a named frame can stop before walking any. */
bool vt_stack_frames_may_be_named(const struct vt_reader *r, const struct vt_symbolizer *sym);
/* Whether some frame vt_stack_frames delivers through sym can be a Python
 * frame (module "python": a Python node, or a native frame of a module so
 * named). False: what looks for Python frames can stop before walking any. */
bool vt_stack_frames_may_be_python(const struct vt_reader *r, const struct vt_symbolizer *sym);

#endif
