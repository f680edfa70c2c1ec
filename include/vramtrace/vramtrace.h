/*
 * vramtrace public API: phase markers for programs that want to label their
 * own phases (train, eval, forward, backward, optimizer...).
 *
 * NVTX ranges are picked up without any of this (libvramtrace.so is also an
 * NVTX injection library). Use this API when a program has no NVTX.
 *
 * The functions live in libvramtrace.so. A program need not link against
 * it: with VRAMTRACE_DYNAMIC defined before including this header, the
 * calls below become inline functions that look the symbols up at run time
 * with dlsym(RTLD_DEFAULT, ...) and do nothing when the tracer is not
 * loaded. From Python:
 *
 *     import ctypes
 *     vt = ctypes.CDLL(None)   # the process's global scope
 *     push = getattr(vt, "vramtrace_phase_push", None)
 *     if push: push(b"train")
 *     ...
 *     if push: vt.vramtrace_phase_pop()
 */
#ifndef VRAMTRACE_VRAMTRACE_H
#define VRAMTRACE_VRAMTRACE_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef VRAMTRACE_DYNAMIC

/* Opens a phase on the calling thread; phases nest. */
void vramtrace_phase_push(const char *name);
/* Closes the innermost phase open on the calling thread. */
void vramtrace_phase_pop(void);
/* Records an instant marker. */
void vramtrace_mark(const char *name);

#else /* look the functions up at run time */

#include <dlfcn.h>

static inline void vramtrace_phase_push(const char *name)
{
    void (*fn)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "vramtrace_phase_push");
    if (fn)
        fn(name);
}

static inline void vramtrace_phase_pop(void)
{
    void (*fn)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "vramtrace_phase_pop");
    if (fn)
        fn();
}

static inline void vramtrace_mark(const char *name)
{
    void (*fn)(const char *) = (void (*)(const char *))dlsym(RTLD_DEFAULT, "vramtrace_mark");
    if (fn)
        fn(name);
}

#endif

#ifdef __cplusplus
}
#endif

#endif
