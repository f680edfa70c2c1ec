/*
 * The real dlsym/dlopen/dlclose of glibc, for use inside the library.
 *
 * This library defines dlsym, dlopen and dlclose itself (dlsym_hook.c), so a
 * plain call to any of them from here would come back to us. dlsym is found
 * with dlvsym, which we do not hook; the others through the real dlsym with
 * RTLD_NEXT, which, called from our own code, means "after this library".
 * __libc_dlsym is gone since glibc 2.34 and _dl_sym is GLIBC_PRIVATE.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

#if defined(__x86_64__)
#define VT_GLIBC_BASE_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define VT_GLIBC_BASE_VERSION "GLIBC_2.17"
#else
#define VT_GLIBC_BASE_VERSION NULL
#endif

static _Atomic(vt_dlsym_fn) real_dlsym_fn;

/* Sanitizer runtimes resolve their interceptors with dlsym(RTLD_NEXT, ...)
 * before their shadow memory exists: the path those calls take through
 * this library must not be instrumented. */
VT_NO_SANITIZE vt_dlsym_fn vt_real_dlsym_fn(void)
{
    vt_dlsym_fn fn = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
    if (fn)
        return fn;
    /* Newest first: since 2.34 dlsym lives in libc.so.6 as GLIBC_2.34; older
     * glibc (and the compat symbol) has the architecture's base version. */
    static const char *const versions[] = { "GLIBC_2.34", VT_GLIBC_BASE_VERSION };
    for (size_t i = 0; i < sizeof versions / sizeof versions[0] && !fn; i++)
        if (versions[i])
            fn = (vt_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    if (fn)
        atomic_store_explicit(&real_dlsym_fn, fn, memory_order_release);
    return fn;
}

/* glibc keeps one pending error per thread: a failed dl call sets it, a
 * successful one clears it, dlerror() returns and clears it. After one of
 * our failed look-ups the error is ours: clear it, so that the state is
 * "no error" after any of our calls - what it was when we are called right
 * after the program's successful dlsym (dlsym_hook.c), the one moment a
 * program is likely to ask. dlerror itself is not hooked. */
static void forget_our_error(void)
{
    (void)dlerror();
}

void *vt_real_dlsym(void *handle, const char *name)
{
    vt_dlsym_fn fn = vt_real_dlsym_fn();
    void *found = fn ? fn(handle, name) : NULL;
    if (found == NULL)
        forget_our_error();
    return found;
}

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

static _Atomic(dlopen_fn) real_dlopen_fn;
static _Atomic(dlclose_fn) real_dlclose_fn;

void *vt_program_dlopen(const char *file, int mode)
{
    dlopen_fn fn = atomic_load_explicit(&real_dlopen_fn, memory_order_acquire);
    if (!fn) {
        fn = (dlopen_fn)vt_real_dlsym(RTLD_NEXT, "dlopen");
        if (!fn)
            return NULL;
        atomic_store_explicit(&real_dlopen_fn, fn, memory_order_release);
    }
    return fn(file, mode);
}

int vt_program_dlclose(void *handle)
{
    dlclose_fn fn = atomic_load_explicit(&real_dlclose_fn, memory_order_acquire);
    if (!fn) {
        fn = (dlclose_fn)vt_real_dlsym(RTLD_NEXT, "dlclose");
        if (!fn)
            return -1;
        atomic_store_explicit(&real_dlclose_fn, fn, memory_order_release);
    }
    return fn(handle);
}

void *vt_real_dlopen(const char *file, int mode)
{
    void *handle = vt_program_dlopen(file, mode);
    if (handle == NULL)
        forget_our_error();
    return handle;
}

int vt_real_dlclose(void *handle)
{
    int rc = vt_program_dlclose(handle);
    if (rc != 0)
        forget_our_error();
    return rc;
}

void *vt_next_cached(_Atomic(void *) *slots, const char *const *names, unsigned id)
{
    void *fn = atomic_load_explicit(&slots[id], memory_order_acquire);
    if (fn == NULL) {
        vt_in_tracer++;
        fn = vt_real_dlsym(RTLD_NEXT, names[id]);
        vt_in_tracer--;
        if (fn)
            atomic_store_explicit(&slots[id], fn, memory_order_release);
    }
    return fn;
}
