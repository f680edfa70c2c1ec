/*
 * Which object is the driver, and its real functions.
 *
 * The table of REAL pointers is built once by resolving every exact variant
 * name (cuMemAlloc_v2, cuMemAllocAsync_ptsz, ...) with the real dlsym on the
 * driver object. cuGetProcAddress routing compares what the driver returned
 * against it, so the substituted wrapper always has the signature of the
 * variant the driver chose (version and flags respected without guessing).
 *
 * No lock: a hook may run inside a library constructor with the loader lock
 * held, and a mutex of ours taken around dlopen could deadlock against it.
 * Two threads may resolve at the same time; they write the same values.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>

static _Atomic(void *) driver_handle;   /* the adopted driver object */
static atomic_int driver_ready;          /* tables below are complete */
static _Atomic(void *) driver_real[VT_API_DRIVER_END_];
_Atomic(void *) vt_next_real_found[VT_API_DRIVER_END_];
static _Atomic(void *) helpers[VT_HELPER_COUNT_];

static const char *const helper_names[VT_HELPER_COUNT_] = {
#define VT_HELPER(name, pfn) [VT_HELPER_##name] = #name,
#include "driver_helpers.def"
#undef VT_HELPER
};

static void resolve_all(void *handle)
{
    vt_in_tracer++;
    for (unsigned api = 1; api < VT_API_DRIVER_END_; api++)
        atomic_store_explicit(&driver_real[api], vt_real_dlsym(handle, vt_hooks[api].name),
                              memory_order_relaxed);
    for (unsigned h = 0; h < VT_HELPER_COUNT_; h++)
        atomic_store_explicit(&helpers[h], vt_real_dlsym(handle, helper_names[h]),
                              memory_order_relaxed);
    vt_in_tracer--;
    atomic_store_explicit(&driver_ready, 1, memory_order_release);
}

static void adopt(void *handle)
{
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&driver_handle, &expected, handle) && expected != handle) {
        vt_real_dlclose(handle); /* another object was adopted first */
        return;
    }
    if (!atomic_load_explicit(&driver_ready, memory_order_acquire))
        resolve_all(handle);
}

static int ensure_driver(void);

/* The object named libcuda.so.1 is preferred: fn may belong to another
 * interposer. fn's object is adopted only when no libcuda.so.1 is loaded
 * (a driver under another name). */
void vt_driver_attach_from(const void *fn)
{
    if (fn == NULL || ensure_driver())
        return;
    Dl_info info;
    if (!dladdr(fn, &info) || info.dli_fname == NULL)
        return;
    /* A link_map is not a usable dlsym handle for objects loaded at start-up;
     * a NOLOAD dlopen of the same file gives a proper one (held forever: the
     * driver is never unloaded under a running program anyway). */
    void *handle = vt_real_dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (handle)
        adopt(handle);
}

/* Without any hint (a program linked with -lcuda calling an exported
 * wrapper): the driver, if it is loaded, is libcuda.so.1. */
static int ensure_driver(void)
{
    if (atomic_load_explicit(&driver_ready, memory_order_acquire))
        return 1;
    vt_in_tracer++;
    void *handle = vt_real_dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    vt_in_tracer--;
    if (handle)
        adopt(handle);
    return atomic_load_explicit(&driver_ready, memory_order_acquire);
}

void *vt_driver_real(unsigned api)
{
    if (api == 0 || api >= VT_API_DRIVER_END_ || !ensure_driver())
        return NULL;
    return atomic_load_explicit(&driver_real[api], memory_order_relaxed);
}

void *vt_driver_helper(unsigned helper)
{
    if (helper >= VT_HELPER_COUNT_ || !ensure_driver())
        return NULL;
    return atomic_load_explicit(&helpers[helper], memory_order_relaxed);
}

void *vt_next_real_find(unsigned api)
{
    if (api == 0 || api >= VT_API_DRIVER_END_)
        return NULL;
    void *fn = atomic_load_explicit(&vt_next_real_found[api], memory_order_acquire);
    if (fn)
        return fn;
    /* Called from our own code, RTLD_NEXT means the first definition after
     * this library in the global scope: libcuda.so.1 for a program linked
     * with -lcuda, or an interposer loaded after us. */
    vt_in_tracer++;
    fn = vt_real_dlsym(RTLD_NEXT, vt_hooks[api].name);
    vt_in_tracer--;
    if (fn) {
        atomic_store_explicit(&vt_next_real_found[api], fn, memory_order_release);
        return fn;
    }
    /* Nothing after us exports it (the driver was dlopen'ed privately and
     * someone found our export through RTLD_DEFAULT): use the driver's. */
    return vt_driver_real(api);
}

unsigned vt_driver_find_real(const void *p)
{
    if (p == NULL || !atomic_load_explicit(&driver_ready, memory_order_acquire))
        return 0;
    for (unsigned api = 1; api < VT_API_DRIVER_END_; api++)
        if (atomic_load_explicit(&driver_real[api], memory_order_relaxed) == p)
            return api;
    return 0;
}
