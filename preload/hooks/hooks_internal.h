/*
 * Shared declarations of the hooks (preload/hooks/). Include this first in
 * every hooks .c file that talks about driver types: it asks cuda.h for the
 * real versioned names (no cuMemAlloc -> cuMemAlloc_v2 renaming macros), so
 * the wrappers can be defined under the exact exported names.
 *
 * The hooks own every entry point of libvramtrace.so: the exported driver
 * and runtime symbols, dlsym/dlopen/dlclose, cuGetProcAddress, NVTX, the
 * public phase API, the exec family, and the library's constructor and
 * destructor (autostart.c), which start the recorder and hand it what it
 * needs of them (vt_recorder_links). Of the recorder they use only its face,
 * preload/record_api/ (recorder.h, recorder_control.h).
 */
#ifndef VRAMTRACE_HOOKS_INTERNAL_H
#define VRAMTRACE_HOOKS_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdatomic.h>
#include <stdint.h>

#include "recorder.h"
#include "single_tracer.h"

/* ---- API ids: 0 is "none", then every driver variant, then the runtime
 * entry points that only label. Ids are indexes of every per-variant table. */
enum vt_api_id {
    VT_API_NONE_ = 0,
#define VT_HOOK(name, ...) VT_API_##name,
#include "driver_hooks.def"
#undef VT_HOOK
    VT_API_DRIVER_END_,
    VT_API_RT_BEFORE_ = VT_API_DRIVER_END_ - 1,
#define VT_RT_HOOK(name, ...) VT_API_##name,
#include "runtime_hooks.def"
#undef VT_RT_HOOK
    VT_API_COUNT_
};

enum vt_helper_id {
#define VT_HELPER(name, pfn) VT_HELPER_##name,
#include "driver_helpers.def"
#undef VT_HELPER
    VT_HELPER_COUNT_
};
/* PFN_<helper>_t: the exact type of each helper. */
#define VT_HELPER(name, pfn) typedef pfn PFN_##name##_t;
#include "driver_helpers.def"
#undef VT_HELPER

/* Static facts of one hooked driver variant (driver_wrappers.c). */
struct vt_hook_info {
    const char *name;     /* exported symbol */
    const char *base;     /* cuGetProcAddress name */
    int version;
    int ptsz;
    void *exported;       /* the exported wrapper (calls the next object) */
    void *internal;       /* the wrapper handed out by dlsym/cuGetProcAddress */
};
/* Indexed by api id, valid for 1 <= id < VT_API_DRIVER_END_. */
extern const struct vt_hook_info vt_hooks[VT_API_DRIVER_END_];
/* Api id of an exported variant name, 0 if it is not hooked. */
unsigned vt_hook_by_name(const char *name);
/* Names of api ids (vt_mem_event.api, .label), from the X-macro lists;
 * NULL for an unknown id. Handed to the recorder at start, which writes the
 * names it uses into the trace (VT_REC_API), so ids need not be stable
 * across versions of the tool. */
const char *vt_api_name(unsigned api);
unsigned vt_api_count(void);

/* ---- the real dynamic-linker functions (real_dl.c). Never call plain
 * dlsym/dlopen/dlclose from inside the library: those are our own hooks.
 *
 * The library's own look-ups: each leaves no error behind for dlerror()
 * (a failed one clears what it set), so a program that checks dlerror()
 * after its own successful dlsym never sees ours (docs/internals/HOOKS.md). */
void *vt_real_dlsym(void *handle, const char *name);
void *vt_real_dlopen(const char *file, int mode);
int vt_real_dlclose(void *handle);
/* The program's own dlopen/dlclose, passed through: their errors are the
 * program's and stay for its dlerror(). */
void *vt_program_dlopen(const char *file, int mode);
int vt_program_dlclose(void *handle);
/* The next definition after this library of names[id] (a C library
 * function the library wraps), looked up once and kept in slots[id]: the
 * exec family, _exit and the signal family resolve theirs at load, so that
 * a vfork child never needs the loader. */
void *vt_next_cached(_Atomic(void *) *slots, const char *const *names, unsigned id);
/* The glibc dlsym itself (resolved with dlvsym), NULL if unavailable. */
typedef void *(*vt_dlsym_fn)(void *, const char *);
#define VT_NO_SANITIZE __attribute__((no_sanitize("address", "undefined", "thread")))
vt_dlsym_fn vt_real_dlsym_fn(void);

/* ---- signals (signal_hooks.c) ---- */
/* The next sigaction after this library (the C library's). */
struct sigaction;
int vt_libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* The recorder has started: from now on the fatal signals' dispositions
 * are its view (vt_record_sigaction). */
void vt_signal_hooks_arm(void);

/* ---- the driver object and its real functions (driver_link.c) ---- */
/* Adopt the object containing fn as THE driver (first one wins) and resolve
 * every hooked variant and helper from it, once. */
void vt_driver_attach_from(const void *fn);
/* Real driver function of a hooked variant, NULL if no driver is known. */
void *vt_driver_real(unsigned api);
/* Real function the EXPORTED wrapper calls: the next definition after this
 * library (libcuda, or an interposer loaded after us), else the driver's.
 * Looked up once per variant (vt_next_real_find), then one load. */
extern _Atomic(void *) vt_next_real_found[VT_API_DRIVER_END_];
void *vt_next_real_find(unsigned api);
static inline void *vt_next_real(unsigned api)
{
    void *fn = NULL;
    if (api > 0 && api < VT_API_DRIVER_END_)
        fn = atomic_load_explicit(&vt_next_real_found[api], memory_order_acquire);
    return fn ? fn : vt_next_real_find(api);
}
/* Api id whose real driver pointer is p, 0 if none. */
unsigned vt_driver_find_real(const void *p);
/* A helper function of the driver, NULL if unknown. */
void *vt_driver_helper(unsigned helper);
#define VT_HELPER_FN(name) ((PFN_##name##_t)vt_driver_helper(VT_HELPER_##name))

/* ---- the per-thread label set by runtime entry points (runtime_labels.c) */
extern __thread uint16_t vt_runtime_label __attribute__((tls_model("initial-exec")));
/* An object was unloaded: forget every cached real runtime function. */
void vt_runtime_labels_forget(void);

/* ---- facts gathered before the real call (a free asks what it frees) ---- */
struct vt_pre {
    int32_t device; /* -1: unknown */
    uint8_t kind;   /* 0: decided by the action */
    /* A free's record, begun before the real call (vt_pre_free); NULL:
     * none (not a free, or nothing recorded then). */
    struct vt_free_slot *slot;
};
#define VT_PRE_NONE ((struct vt_pre){ -1, 0, NULL })
/* Every free's pre-call step ends here: pre with its record begun, which
 * places the free in the trace when it was called
 * (vt_record_free_begin); its action must hand pre->slot on (emit_free in
 * record_actions.c), whatever the call's result. */
struct vt_pre vt_pre_free(struct vt_pre pre);
#define VT_PRE_FREE vt_pre_free(VT_PRE_NONE)

/* ---- devices and pools (device_facts.c, pool_registry.c) ---- */
/* Device of a live pointer: DEVICE_ORDINAL attribute, else the current
 * context's device, else -1. Records device facts at first sight. */
int vt_device_of_ptr(CUdeviceptr ptr);
/* Device of the calling thread's current context, -1 if none. */
int vt_current_device(void);
/* Records the facts of a device ordinal the first time it is seen. */
void vt_note_device(int ordinal);
/* Fills free/total from the real cuMemGetInfo_v2 (0, 0 if that fails). */
void vt_query_mem_info(uint64_t *free_bytes, uint64_t *total_bytes);
/* Size of the allocation containing ptr (cuMemGetAddressRange), 0 if unknown. */
uint64_t vt_size_of_ptr(CUdeviceptr ptr);

/* Remembers where a pool puts its memory: device ordinal (>= 0), or -1 for a
 * host location (not VRAM). */
void vt_pool_remember(CUmemoryPool pool, int device, int is_host);
void vt_pool_forget(CUmemoryPool pool);
/* 1 and fills device/is_host if the pool is known, else 0. */
int vt_pool_lookup(CUmemoryPool pool, int *device, int *is_host);
/* 1 if any known pool puts its memory on the host (a free's kind may
 * then depend on its pool), else 0. Lock-free. */
int vt_pool_any_host(void);

/* ---- recording actions (record_actions.c); see driver_hooks.def ---- */
struct vt_pre vt_pre_device_free(CUdeviceptr dptr);
struct vt_pre vt_pre_async_free(CUdeviceptr dptr);
struct vt_pre vt_pre_ptr(CUdeviceptr dptr, unsigned kind);
struct vt_pre vt_pre_vmm_handle(CUmemGenericAllocationHandle handle);
void vt_on_get_proc_address(CUresult rc, const char *symbol, void **pfn);
void vt_on_ptr_alloc(unsigned api, CUresult rc, unsigned kind, const CUdeviceptr *dptr,
                     size_t size, uint64_t aux);
/* An allocation in the calling thread's current context (cuMemAlloc,
 * cuMemAllocManaged, cuMemAllocPitch): device from that context. */
void vt_on_ctx_alloc(unsigned api, CUresult rc, unsigned kind, const CUdeviceptr *dptr,
                     size_t size);
void vt_on_pitch_alloc(unsigned api, CUresult rc, const CUdeviceptr *dptr, const size_t *pitch,
                       size_t width, size_t height);
void vt_on_pool_alloc(unsigned api, CUresult rc, const CUdeviceptr *dptr, size_t size,
                      CUmemoryPool pool, CUstream stream);
void vt_on_pre_free(unsigned api, CUresult rc, const struct vt_pre *pre, uint64_t addr,
                    uint64_t aux);
void vt_on_pool_created(CUresult rc, const CUmemoryPool *pool, const CUmemPoolProps *props);
void vt_on_pool_destroyed(CUresult rc, CUmemoryPool pool);
void vt_on_device_pool(CUresult rc, const CUmemoryPool *pool, CUdevice dev);
void vt_on_location_pool(CUresult rc, const CUmemoryPool *pool, const CUmemLocation *location);
void vt_on_ipc_open(unsigned api, CUresult rc, const CUdeviceptr *dptr);
void vt_on_va_reserve(unsigned api, CUresult rc, const CUdeviceptr *ptr, size_t size);
void vt_on_range_op(unsigned api, CUresult rc, const struct vt_pre *pre, unsigned op,
                    unsigned kind, uint64_t addr, uint64_t size, uint64_t aux);
void vt_on_mem_create(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle,
                      size_t size, const CUmemAllocationProp *prop);
void vt_on_handle_free(unsigned api, CUresult rc, const struct vt_pre *pre, unsigned kind,
                       uint64_t handle, int device);
void vt_on_handle_retain(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle,
                         void *addr);
void vt_on_handle_import(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle);
void vt_on_graph_alloc(unsigned api, CUresult rc, const CUDA_MEM_ALLOC_NODE_PARAMS *params);
void vt_on_array_create(unsigned api, CUresult rc, const CUarray *handle,
                        const CUDA_ARRAY_DESCRIPTOR *desc);
void vt_on_array3d_create(unsigned api, CUresult rc, const CUarray *handle,
                          const CUDA_ARRAY3D_DESCRIPTOR *desc);
void vt_on_external_import(unsigned api, CUresult rc, const CUexternalMemory *mem,
                           const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *desc);
void vt_on_host_alloc(unsigned api, CUresult rc, void *const *pp, size_t size);
void vt_on_primary_retain(unsigned api, CUresult rc, const CUcontext *pctx, CUdevice dev);
void vt_on_primary_release(unsigned api, CUresult rc, const struct vt_pre *pre, CUdevice dev);
void vt_on_ctx_create(unsigned api, CUresult rc, const CUcontext *pctx, CUdevice dev);
/* A context's creation cost (context_size.c): the pre-call measurement of a
 * cuCtxCreate* (primary 0) or cuDevicePrimaryCtxRetain (primary 1), and
 * after it what the new context cost: size, the estimate in bytes (0: not
 * created by this call, or unknown), and the figures a reader needs where
 * it is unknown (vt_mem_event.context: the device's free bytes once it
 * existed, NVML's count of this process's bytes there; each + 1, 0: none). */
struct vt_ctx_cost {
    uint64_t size;
    uint64_t free_after1, process_used1;
};
struct vt_pre vt_pre_ctx_create(CUdevice dev, int primary);
struct vt_ctx_cost vt_ctx_created_cost(CUresult rc, const CUcontext *pctx, CUdevice dev,
                                       int primary);
/* This process's device memory on dev as NVML counts it (nvml_probe.c), + 1;
 * 0 where NVML is absent or has no answer. */
uint64_t vt_nvml_process_used1(CUdevice dev);
/* The device's UUID (cuDeviceGetUuid); false if the driver gave none. */
int vt_device_uuid(CUdevice dev, uint8_t out[16]);

#endif
