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
 * loaded. From Python, the wheel's module `vramtrace` does this for you
 * (`with vramtrace.phase("eval"):`, docs/user/INSTALL.md); by hand:
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
/* An instant marker in a domain of its own (NULL: the default domain).
 * The domain "vramtrace.torch" is the Python bootstrap's (docs/user/PYTORCH.md). */
void vramtrace_mark_in(const char *domain, const char *name);
/* Opens a phase that any thread may close: returns its id (never 0). */
unsigned long long vramtrace_range_start(const char *name);
/* Closes the phase vramtrace_range_start returned; 0 does nothing. */
void vramtrace_range_end(unsigned long long id);
/* Copies the path of this process's trace file into buf (len bytes with the
 * NUL) and returns its length; -1 when there is none (nothing recorded yet,
 * tracing off) or it does not fit. Writes what is pending first if the file
 * was not created yet (at most a second). For files that belong beside the
 * trace. */
long vramtrace_trace_path(char *buf, unsigned long len);
/* One record of a census of what device memory is made of (the Python
 * bootstrap's, docs/user/PYTORCH.md "Parts"; the record is VT_REC_PART of
 * vramtrace/trace_format.h, which says what each field means): census
 * numbers the census, part is an enum vt_part, the tensor's device,
 * address, bytes, element count, dtype and name (NULL: none). */
void vramtrace_part(unsigned long long census, unsigned part, int device,
                    unsigned long long addr, unsigned long long bytes,
                    unsigned long long elements, const char *dtype, const char *name);

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

static inline void vramtrace_mark_in(const char *domain, const char *name)
{
    void (*fn)(const char *, const char *) =
        (void (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "vramtrace_mark_in");
    if (fn)
        fn(domain, name);
}

static inline unsigned long long vramtrace_range_start(const char *name)
{
    unsigned long long (*fn)(const char *) =
        (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, "vramtrace_range_start");
    return fn ? fn(name) : 0;
}

static inline void vramtrace_range_end(unsigned long long id)
{
    void (*fn)(unsigned long long) =
        (void (*)(unsigned long long))dlsym(RTLD_DEFAULT, "vramtrace_range_end");
    if (fn)
        fn(id);
}

static inline long vramtrace_trace_path(char *buf, unsigned long len)
{
    long (*fn)(char *, unsigned long) =
        (long (*)(char *, unsigned long))dlsym(RTLD_DEFAULT, "vramtrace_trace_path");
    return fn ? fn(buf, len) : -1;
}

static inline void vramtrace_part(unsigned long long census, unsigned part, int device,
                                  unsigned long long addr, unsigned long long bytes,
                                  unsigned long long elements, const char *dtype,
                                  const char *name)
{
    void (*fn)(unsigned long long, unsigned, int, unsigned long long, unsigned long long,
               unsigned long long, const char *, const char *) =
        (void (*)(unsigned long long, unsigned, int, unsigned long long, unsigned long long,
                  unsigned long long, const char *, const char *))dlsym(RTLD_DEFAULT,
                                                                      "vramtrace_part");
    if (fn)
        fn(census, part, device, addr, bytes, elements, dtype, name);
}

#endif

#ifdef __cplusplus
}
#endif

#endif
