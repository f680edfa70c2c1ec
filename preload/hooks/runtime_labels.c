/*
 * Runtime entry points (cudaMalloc, ...): LABELS only. Each sets the
 * per-thread label for the duration of the real call; the driver-level hook
 * the runtime reaches puts it in vt_mem_event.label. Counting happens at the
 * driver only, so nothing is counted twice (and private runtime copies,
 * which never come through here, are still counted).
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

__thread uint16_t vt_runtime_label __attribute__((tls_model("initial-exec")));

static _Atomic(void *) runtime_real[VT_API_COUNT_];

struct find_runtime {
    const char *name;
    void *fn;
};

/* The runtime loaded as a dependency of a library dlopen'ed RTLD_LOCAL (a
 * Python extension) is not after us in the global scope: look for it among
 * the loaded objects. */
static int search_runtime_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find_runtime *find = data;
    if (info->dlpi_name == NULL || strstr(info->dlpi_name, "libcudart") == NULL)
        return 0;
    void *handle = vt_real_dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (handle == NULL)
        return 0;
    find->fn = vt_real_dlsym(handle, find->name);
    vt_real_dlclose(handle);
    return find->fn != NULL;
}

static void *runtime_fn(unsigned api)
{
    void *fn = atomic_load_explicit(&runtime_real[api], memory_order_acquire);
    if (fn)
        return fn;
    vt_in_tracer++;
    fn = vt_real_dlsym(RTLD_NEXT, vt_api_name(api));
    if (!fn) {
        struct find_runtime find = { vt_api_name(api), NULL };
        dl_iterate_phdr(search_runtime_object, &find);
        fn = find.fn;
    }
    vt_in_tracer--;
    if (fn)
        atomic_store_explicit(&runtime_real[api], fn, memory_order_release);
    return fn;
}

#define VT_UNPAREN(...) __VA_ARGS__

#define VT_RT_HOOK(name, params, args)                                          \
    VT_EXPORT cudaError_t CUDARTAPI name params;                                \
    VT_EXPORT cudaError_t CUDARTAPI name params                                 \
    {                                                                           \
        typedef cudaError_t (*real_fn) params;                                  \
        real_fn real = (real_fn)runtime_fn(VT_API_##name);                      \
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
