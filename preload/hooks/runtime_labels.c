/*
 * Runtime entry points (cudaMalloc, ...): LABELS only. Each sets the
 * per-thread label for the duration of the real call; the driver-level hook
 * the runtime reaches puts it in vt_mem_event.label. Counting happens at the
 * driver only, so nothing is counted twice (and private runtime copies,
 * which never come through here, are still counted).
 *
 * Which runtime is the real one depends on the CALLER. A process may hold
 * several (libcudart.so.12 for one extension and .13 for another, each
 * loaded RTLD_LOCAL; a vendor build under another name), and each caller
 * must reach the function it would have bound to without us - failing, or
 * calling another copy, would change the program. The loader binds a call
 * to the first definition in the global scope, else in the caller's local
 * scope (the tree of the object that was dlopen'ed). We stand first in the
 * global scope, so the real function is, in that order:
 *   1. the next definition after us in the global scope (RTLD_NEXT): the
 *      loader would have found it before any local one, whoever calls;
 *   2. else one in the caller's own dependency tree: the object holding the
 *      return address (dladdr1), dlopen(its path, RTLD_NOLOAD), the real
 *      dlsym on that handle; an answer inside this library is refused;
 *   3. else any loaded object that defines it (not us).
 * With none the wrapper says so once and returns cudaErrorInitializationError
 * (the program bound the name to us although no runtime is loaded at all).
 *
 * Cost: answer 1 is cached per api for every caller. Answers 2 and 3 are
 * cached as a binding {api, the caller object's extent, function}, checked
 * by comparing the return address with the extent: the last binding used
 * per api first, then the others; only a caller object never seen costs
 * the loader calls. A dlclose forgets every cached answer (the function it
 * points to may be gone, its addresses reused by the next object).
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

__thread uint16_t vt_runtime_label __attribute__((tls_model("initial-exec")));

/* A caller object's answer for one api; immutable once fn is published. */
struct binding {
    _Atomic(void *) fn; /* NULL: slot claimed, not filled yet */
    uintptr_t start, end;
    unsigned api;
    unsigned generation;
};
/* Callers with a local runtime are a handful of extension modules; past
 * this many (api, object) pairs answers are found again on every call. */
#define VT_BINDINGS_MAX 256

static struct binding bindings[VT_BINDINGS_MAX];
static atomic_uint bindings_claimed;
static _Atomic(struct binding *) last_binding[VT_API_COUNT_];
static _Atomic(void *) global_real[VT_API_COUNT_];
static atomic_uint generation = 1;

static _Atomic uintptr_t self_start, self_end; /* this library's extent, once known */
static atomic_int self_known;

static bool binding_matches(const struct binding *b, unsigned api, uintptr_t pc, unsigned gen)
{
    return b->api == api && b->generation == gen && pc - b->start < b->end - b->start;
}

static void *cached_fn(unsigned api, uintptr_t pc, unsigned gen)
{
    struct binding *b = atomic_load_explicit(&last_binding[api], memory_order_acquire);
    if (b && binding_matches(b, api, pc, gen))
        return atomic_load_explicit(&b->fn, memory_order_acquire);
    unsigned n = atomic_load_explicit(&bindings_claimed, memory_order_acquire);
    if (n > VT_BINDINGS_MAX)
        n = VT_BINDINGS_MAX;
    for (unsigned i = 0; i < n; i++) {
        b = &bindings[i];
        void *fn = atomic_load_explicit(&b->fn, memory_order_acquire);
        if (fn && binding_matches(b, api, pc, gen)) {
            atomic_store_explicit(&last_binding[api], b, memory_order_release);
            return fn;
        }
    }
    return atomic_load_explicit(&global_real[api], memory_order_acquire);
}

/* ---- the slow path: once per (api, caller object) ---- */

/* dl_iterate_phdr, under the fork guard like every other loader walk of
 * the library (vt_guarded_*, recorder.h). dladdr and dlopen are NOT called
 * under it: they take the loader's main lock, which a dlopen holds while
 * running constructors that may record (and so wait for a pending fork). */
static int extent_of(const void *addr, uintptr_t *start, uintptr_t *end)
{
    uint64_t s = 0, e = 0;
    bool is_main;
    int rc = vt_guarded_extent_of(addr, &s, &e, &is_main);
    *start = (uintptr_t)s;
    *end = (uintptr_t)e;
    return rc;
}

static bool is_ours(const void *fn)
{
    if (!atomic_load_explicit(&self_known, memory_order_acquire)) {
        uintptr_t s, e;
        if (extent_of((const void *)(uintptr_t)is_ours, &s, &e) != 0)
            return false;
        atomic_store(&self_start, s);
        atomic_store(&self_end, e);
        atomic_store_explicit(&self_known, 1, memory_order_release);
    }
    return (uintptr_t)fn >= atomic_load(&self_start) && (uintptr_t)fn < atomic_load(&self_end);
}

/* name in the dependency tree of the loaded object at path (the real dlsym
 * on a NOLOAD handle), NULL if absent or ours. want: the object must be
 * exactly this one (another namespace may hold one of the same path). */
static void *in_tree_of(const char *path, const struct link_map *want, const char *name)
{
    void *handle = vt_real_dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return NULL;
    void *fn = NULL;
    struct link_map *lm = NULL;
    if (want == NULL || (dlinfo(handle, RTLD_DI_LINKMAP, &lm) == 0 && lm == want)) {
        fn = vt_real_dlsym(handle, name);
        if (fn && is_ours(fn))
            fn = NULL;
    }
    vt_real_dlclose(handle);
    return fn;
}

static void *in_caller_tree(const void *ra, const char *name)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!dladdr1(ra, &info, (void **)&lm, RTLD_DL_LINKMAP) || lm == NULL ||
        lm->l_name == NULL || lm->l_name[0] == '\0')
        return NULL; /* not in an object, or the main program (its scope is global: 1) */
    return in_tree_of(lm->l_name, lm, name);
}

/* The path of the index-th loaded object (copied out, so that the loader
 * is not called back from inside dl_iterate_phdr: a dlopen there would
 * take the loader's locks in the opposite order of a dlopen elsewhere). */
struct nth_object {
    unsigned index, seen;
    bool found;
    char path[4096];
};

static int copy_nth(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct nth_object *q = data;
    if (q->seen++ != q->index)
        return 0;
    q->found = true;
    snprintf(q->path, sizeof q->path, "%s", info->dlpi_name ? info->dlpi_name : "");
    return 1;
}

static void *in_any_object(const char *name)
{
    for (unsigned i = 0;; i++) {
        struct nth_object q = {.index = i};
        vt_guarded_dl_iterate_phdr(copy_nth, &q);
        if (!q.found)
            return NULL;
        if (q.path[0] == '\0')
            continue; /* the main program, the vdso: covered by 1 or nothing */
        void *fn = in_tree_of(q.path, NULL, name);
        if (fn)
            return fn;
    }
}

static void remember(unsigned api, const void *ra, void *fn, unsigned gen)
{
    uintptr_t start, end;
    if (extent_of(ra, &start, &end) != 0)
        return; /* code outside every object (JIT): asked again next time */
    if (atomic_load(&bindings_claimed) >= VT_BINDINGS_MAX)
        return;
    unsigned i = atomic_fetch_add(&bindings_claimed, 1);
    if (i >= VT_BINDINGS_MAX)
        return;
    struct binding *b = &bindings[i];
    b->start = start;
    b->end = end;
    b->api = api;
    b->generation = gen;
    atomic_store_explicit(&b->fn, fn, memory_order_release);
    atomic_store_explicit(&last_binding[api], b, memory_order_release);
}

static atomic_int said_missing;

static __attribute__((noinline)) void *resolve(unsigned api, const void *ra, unsigned gen)
{
    const char *name = vt_api_name(api);
    vt_in_tracer++;
    void *fn = vt_real_dlsym(RTLD_NEXT, name);
    if (fn) {
        if (atomic_load(&generation) == gen)
            atomic_store_explicit(&global_real[api], fn, memory_order_release);
    } else {
        fn = in_caller_tree(ra, name);
        if (!fn)
            fn = in_any_object(name);
        if (fn)
            remember(api, ra, fn, gen);
    }
    vt_in_tracer--;
    if (!fn && !atomic_exchange(&said_missing, 1))
        vt_say(2, "vramtrace: %s was called, but no loaded object defines it; "
                  "returning cudaErrorInitializationError\n", name);
    return fn;
}

static inline void *runtime_fn(unsigned api, const void *ra)
{
    unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
    void *fn = cached_fn(api, (uintptr_t)ra, gen);
    return fn ? fn : resolve(api, ra, gen);
}

void vt_runtime_labels_forget(void)
{
    atomic_fetch_add(&generation, 1);
    for (unsigned api = 0; api < VT_API_COUNT_; api++) {
        atomic_store(&global_real[api], NULL);
        atomic_store(&last_binding[api], NULL);
    }
}

#define VT_RT_HOOK(name, params, args)                                          \
    VT_EXPORT cudaError_t CUDARTAPI name params;                                \
    VT_EXPORT cudaError_t CUDARTAPI name params                                 \
    {                                                                           \
        typedef cudaError_t (*real_fn) params;                                  \
        real_fn real = (real_fn)runtime_fn(VT_API_##name,                       \
                                           __builtin_return_address(0));        \
        if (real == NULL)                                                       \
            return cudaErrorInitializationError;                                \
        uint16_t outer = vt_runtime_label;                                      \
        if (outer == 0) /* the outermost runtime call names the request */      \
            vt_runtime_label = VT_API_##name;                                   \
        cudaError_t err = real args;                                            \
        vt_runtime_label = outer;                                               \
        return err;                                                             \
    }
#include "runtime_hooks.def"
#undef VT_RT_HOOK
