/*
 * What each hooked call did, told to the recorder (see driver_hooks.def for
 * which variant uses which action). Actions run AFTER the real call with its
 * result (a free's record was begun before it, vt_pre_free: it is placed
 * by its call); they read the caller's out-parameters only when the call succeeded
 * and never write to them. Failed calls are recorded too, with the result
 * the program saw: a failed allocation also carries the driver's free/total
 * asked right after the failure.
 */
#include "hooks_internal.h"

#include <stdatomic.h>

#define VT_MAX_PRIMARY 256

/* Primary context of each device, so a release (which names only the device)
 * can name the context the retain recorded. */
static _Atomic(uintptr_t) primary_ctx[VT_MAX_PRIMARY];

static struct vt_mem_event mem_event(unsigned api, CUresult rc, unsigned op, unsigned kind,
                                     int device, uint64_t addr, uint64_t size, uint64_t aux)
{
    return (struct vt_mem_event){
        .op = (uint8_t)op,
        .kind = (uint8_t)kind,
        .api = (uint16_t)api,
        .label = vt_runtime_label,
        .device = device,
        .result = (int32_t)rc,
        .addr = addr,
        .size = size,
        .aux = aux,
    };
}

static void record_mem_op(unsigned api, CUresult rc, unsigned op, unsigned kind, int device,
                          uint64_t addr, uint64_t size, uint64_t aux)
{
    struct vt_mem_event ev = mem_event(api, rc, op, kind, device, addr, size, aux);
    if (op == VT_OP_ALLOC && rc != CUDA_SUCCESS)
        vt_query_mem_info(&ev.free_bytes, &ev.total_bytes);
    if (device >= 0) /* frees say -1: no call for them */
        vt_note_device(device);
    vt_record_mem(&ev);
}

/* A free's record: begun before the call (pre->slot, vt_pre_free) and
 * finished here, or, without one, recorded now as any other event. Called
 * whether or not the recorder still runs: a begun record must be finished
 * (the writer waits for it). */
static void emit_free(unsigned api, CUresult rc, const struct vt_pre *pre, unsigned kind,
                      int device, uint64_t addr, uint64_t size, uint64_t aux)
{
    if (!pre->slot) {
        if (vt_recorder_active())
            record_mem_op(api, rc, VT_OP_FREE, kind, device, addr, size, aux);
        return;
    }
    struct vt_mem_event ev = mem_event(api, rc, VT_OP_FREE, kind, device, addr, size, aux);
    if (device >= 0 && vt_recorder_active())
        vt_note_device(device);
    vt_record_free_end(pre->slot, &ev);
}

struct vt_pre vt_pre_free(struct vt_pre pre)
{
    pre.slot = vt_record_free_begin();
    return pre;
}

/* ---- pre-call look-ups for frees (the pointer still exists) ----
 *
 * A free needs no device: the analyzer matches it to its allocation by
 * (kind, address) and charges the allocation's device (docs/user/REPORT.md),
 * so frees of the per-event paths record device -1 and ask the driver
 * only what can change the KIND, and only when it can: every driver query
 * here was a lock in the driver on every free. */

/* Managed allocations made and not yet seen freed (cuMemAllocManaged
 * succeeded; a cuMemFree found IS_MANAGED). While there are none, a
 * cuMemFree frees DEVICE memory without asking. Counted whether or not
 * the recorder runs, so a trace started later still knows. Errs only
 * upward (a managed block freed some other way): then frees ask again. */
static atomic_long managed_live;

static int ptr_attribute(CUdeviceptr ptr, CUpointer_attribute which, void *out)
{
    PFN_cuPointerGetAttribute_t attr = VT_HELPER_FN(cuPointerGetAttribute);
    return ptr && attr && attr(out, which, ptr) == CUDA_SUCCESS;
}

struct vt_pre vt_pre_ptr(CUdeviceptr dptr, unsigned kind)
{
    struct vt_pre pre = { -1, (uint8_t)kind, NULL };
    int ordinal = -1;
    if (vt_recorder_active() && ptr_attribute(dptr, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, &ordinal))
        pre.device = ordinal;
    return pre;
}

struct vt_pre vt_pre_device_free(CUdeviceptr dptr)
{
    /* cuMemFree frees cuMemAlloc and cuMemAllocManaged memory alike. */
    struct vt_pre pre = { -1, VT_KIND_DEVICE, NULL };
    unsigned int managed = 0;
    if (atomic_load_explicit(&managed_live, memory_order_relaxed) > 0 && vt_recorder_active() &&
        ptr_attribute(dptr, CU_POINTER_ATTRIBUTE_IS_MANAGED, &managed) && managed)
        pre.kind = VT_KIND_MANAGED;
    return pre;
}

struct vt_pre vt_pre_async_free(CUdeviceptr dptr)
{
    /* Only a host pool (CUDA 13) changes the kind; none known, no question. */
    struct vt_pre pre = { -1, VT_KIND_DEVICE, NULL };
    CUmemoryPool pool = NULL;
    int device, is_host;
    if (vt_pool_any_host() && vt_recorder_active() &&
        ptr_attribute(dptr, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, &pool) &&
        vt_pool_lookup(pool, &device, &is_host) && is_host)
        pre.kind = VT_KIND_HOST_PINNED;
    return pre;
}

/* Where cuMemCreate put the memory; kind and device of a physical handle. */
static struct vt_pre placement(const CUmemAllocationProp *prop)
{
    struct vt_pre pre = { -1, VT_KIND_VMM_PHYSICAL, NULL };
    if (prop == NULL)
        return pre;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        pre.device = prop->location.id;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        pre.kind = VT_KIND_HOST_PINNED; /* host RAM through VMM: not VRAM */
        break;
    default:
        break;
    }
    return pre;
}

struct vt_pre vt_pre_vmm_handle(CUmemGenericAllocationHandle handle)
{
    PFN_cuMemGetAllocationPropertiesFromHandle_t props =
        VT_HELPER_FN(cuMemGetAllocationPropertiesFromHandle);
    CUmemAllocationProp prop = { 0 };
    if (vt_recorder_active() && props && props(&prop, handle) == CUDA_SUCCESS)
        return placement(&prop);
    return (struct vt_pre){ -1, VT_KIND_VMM_PHYSICAL, NULL };
}

/* ---- actions ---- */

void vt_on_ptr_alloc(unsigned api, CUresult rc, unsigned kind, const CUdeviceptr *dptr,
                     size_t size, uint64_t aux)
{
    if (!vt_recorder_active())
        return;
    uint64_t addr = rc == CUDA_SUCCESS && dptr ? *dptr : 0;
    int device = rc == CUDA_SUCCESS ? vt_device_of_ptr(addr) : vt_current_device();
    record_mem_op(api, rc, VT_OP_ALLOC, kind, device, addr, size, aux);
}

void vt_on_ctx_alloc(unsigned api, CUresult rc, unsigned kind, const CUdeviceptr *dptr,
                     size_t size)
{
    if (kind == VT_KIND_MANAGED && rc == CUDA_SUCCESS)
        atomic_fetch_add(&managed_live, 1);
    if (!vt_recorder_active())
        return;
    uint64_t addr = rc == CUDA_SUCCESS && dptr ? *dptr : 0;
    /* The memory is on the device of the calling thread's current context
     * (there is no other for these calls): asking the context is a
     * thread-local read in the driver, asking the pointer a global lock. */
    int device = vt_current_device();
    if (device < 0 && rc == CUDA_SUCCESS)
        device = vt_device_of_ptr(addr);
    record_mem_op(api, rc, VT_OP_ALLOC, kind, device, addr, size, 0);
}

void vt_on_pitch_alloc(unsigned api, CUresult rc, const CUdeviceptr *dptr, const size_t *pitch,
                       size_t width, size_t height)
{
    /* The driver pads each row to the pitch it chose: that is what it used. */
    size_t size = rc == CUDA_SUCCESS && pitch ? *pitch * height : width * height;
    vt_on_ctx_alloc(api, rc, VT_KIND_DEVICE, dptr, size);
}

void vt_on_pool_alloc(unsigned api, CUresult rc, const CUdeviceptr *dptr, size_t size,
                      CUmemoryPool pool, CUstream stream)
{
    if (!vt_recorder_active())
        return;
    int device = -1, is_host = 0;
    uint64_t addr = rc == CUDA_SUCCESS && dptr ? *dptr : 0;
    if (!vt_pool_lookup(pool, &device, &is_host))
        device = rc == CUDA_SUCCESS ? vt_device_of_ptr(addr) : vt_current_device();
    record_mem_op(api, rc, VT_OP_ALLOC, is_host ? VT_KIND_HOST_PINNED : VT_KIND_DEVICE,
                  is_host ? -1 : device, addr, size, (uint64_t)(uintptr_t)stream);
}

void vt_on_pre_free(unsigned api, CUresult rc, const struct vt_pre *pre, uint64_t addr,
                    uint64_t aux)
{
    /* Stream-ordered frees are recorded when issued (aux = stream): the
     * memory is reusable by later work on that stream from then on. */
    if (pre->kind == VT_KIND_MANAGED && rc == CUDA_SUCCESS)
        atomic_fetch_sub(&managed_live, 1);
    emit_free(api, rc, pre, pre->kind, pre->device, addr, 0, aux);
}

void vt_on_pool_created(CUresult rc, const CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (rc != CUDA_SUCCESS || !pool || !props)
        return;
    int is_host = props->location.type != CU_MEM_LOCATION_TYPE_DEVICE &&
                  props->location.type != CU_MEM_LOCATION_TYPE_INVALID;
    vt_pool_remember(*pool, is_host ? -1 : props->location.id, is_host);
}

void vt_on_pool_destroyed(CUresult rc, CUmemoryPool pool)
{
    if (rc == CUDA_SUCCESS)
        vt_pool_forget(pool);
}

void vt_on_device_pool(CUresult rc, const CUmemoryPool *pool, CUdevice dev)
{
    if (rc == CUDA_SUCCESS && pool)
        vt_pool_remember(*pool, (int)dev, 0);
}

void vt_on_location_pool(CUresult rc, const CUmemoryPool *pool, const CUmemLocation *location)
{
    if (rc != CUDA_SUCCESS || !pool || !location)
        return;
    int is_host = location->type != CU_MEM_LOCATION_TYPE_DEVICE;
    vt_pool_remember(*pool, is_host ? -1 : location->id, is_host);
}

void vt_on_ipc_open(unsigned api, CUresult rc, const CUdeviceptr *dptr)
{
    if (!vt_recorder_active())
        return;
    uint64_t addr = rc == CUDA_SUCCESS && dptr ? *dptr : 0;
    uint64_t size = rc == CUDA_SUCCESS ? vt_size_of_ptr(addr) : 0;
    int device = rc == CUDA_SUCCESS ? vt_device_of_ptr(addr) : vt_current_device();
    record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_IPC, device, addr, size, 0);
}

void vt_on_va_reserve(unsigned api, CUresult rc, const CUdeviceptr *ptr, size_t size)
{
    if (vt_recorder_active())
        record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_VA_RESERVE, -1,
                      rc == CUDA_SUCCESS && ptr ? *ptr : 0, size, 0);
}

void vt_on_range_op(unsigned api, CUresult rc, const struct vt_pre *pre, unsigned op,
                    unsigned kind, uint64_t addr, uint64_t size, uint64_t aux)
{
    if (op == VT_OP_FREE)
        emit_free(api, rc, pre, kind, -1, addr, size, aux);
    else if (vt_recorder_active())
        record_mem_op(api, rc, op, kind, -1, addr, size, aux);
}

void vt_on_mem_create(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle,
                      size_t size, const CUmemAllocationProp *prop)
{
    if (!vt_recorder_active())
        return;
    struct vt_pre where = placement(prop);
    record_mem_op(api, rc, VT_OP_ALLOC, where.kind, where.device,
                  rc == CUDA_SUCCESS && handle ? *handle : 0, size, 0);
}

void vt_on_handle_free(unsigned api, CUresult rc, const struct vt_pre *pre, unsigned kind,
                       uint64_t handle, int device)
{
    emit_free(api, rc, pre, kind, device, handle, 0, 0);
}

void vt_on_handle_retain(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle,
                         void *addr)
{
    /* One more reference to a live physical handle (it must be released
     * again): size 0, aux = the mapped address it was found from. */
    if (vt_recorder_active())
        record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_VMM_PHYSICAL, -1,
                      rc == CUDA_SUCCESS && handle ? *handle : 0, 0, (uint64_t)(uintptr_t)addr);
}

void vt_on_handle_import(unsigned api, CUresult rc, const CUmemGenericAllocationHandle *handle)
{
    /* Memory another process created: not this process's VRAM. */
    if (vt_recorder_active())
        record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_IPC, -1,
                      rc == CUDA_SUCCESS && handle ? *handle : 0, 0, 0);
}

void vt_on_graph_alloc(unsigned api, CUresult rc, const CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
    if (!vt_recorder_active() || params == NULL)
        return;
    int device = params->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                     ? params->poolProps.location.id
                     : -1;
    record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_GRAPH, device, rc == CUDA_SUCCESS ? params->dptr : 0,
                  params->bytesize, 0);
}

/* Bytes of one channel of an array element; 0 for formats we do not know
 * (the array is then recorded with size 0 rather than a wrong size). */
static uint64_t format_bytes(CUarray_format format)
{
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

static uint64_t at_least_one(size_t n)
{
    return n ? n : 1;
}

void vt_on_array_create(unsigned api, CUresult rc, const CUarray *handle,
                        const CUDA_ARRAY_DESCRIPTOR *desc)
{
    if (!vt_recorder_active() || desc == NULL)
        return;
    uint64_t size = format_bytes(desc->Format) * desc->NumChannels * desc->Width *
                    at_least_one(desc->Height);
    record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_ARRAY, vt_current_device(),
                  rc == CUDA_SUCCESS && handle ? (uint64_t)(uintptr_t)*handle : 0, size, 0);
}

void vt_on_array3d_create(unsigned api, CUresult rc, const CUarray *handle,
                          const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!vt_recorder_active() || desc == NULL)
        return;
    uint64_t size = format_bytes(desc->Format) * desc->NumChannels * desc->Width *
                    at_least_one(desc->Height) * at_least_one(desc->Depth);
    record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_ARRAY, vt_current_device(),
                  rc == CUDA_SUCCESS && handle ? (uint64_t)(uintptr_t)*handle : 0, size, 0);
}

void vt_on_external_import(unsigned api, CUresult rc, const CUexternalMemory *mem,
                           const CUDA_EXTERNAL_MEMORY_HANDLE_DESC *desc)
{
    if (!vt_recorder_active())
        return;
    record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_EXTERNAL, vt_current_device(),
                  rc == CUDA_SUCCESS && mem ? (uint64_t)(uintptr_t)*mem : 0, desc ? desc->size : 0, 0);
}

void vt_on_host_alloc(unsigned api, CUresult rc, void *const *pp, size_t size)
{
    if (vt_recorder_active())
        record_mem_op(api, rc, VT_OP_ALLOC, VT_KIND_HOST_PINNED, -1,
                      rc == CUDA_SUCCESS && pp ? (uint64_t)(uintptr_t)*pp : 0, size, 0);
}

/* A context retained or created, stamped when its call returned and
 * finished once what creating it cost was asked (vt_ctx_created_cost: all
 * 0 where this call created none; its helper calls come after the stamp). */
static void record_context(unsigned api, CUresult rc, CUdevice dev, uint64_t ctx,
                           const CUcontext *pctx, int primary)
{
    struct vt_free_slot *slot = NULL;
    if (vt_recorder_active()) {
        vt_note_device((int)dev); /* its record first: nothing between the two steps */
        slot = vt_record_mem_begin();
    }
    struct vt_ctx_cost cost = vt_ctx_created_cost(rc, pctx, dev, primary);
    struct vt_mem_event ev = mem_event(api, rc, VT_OP_ALLOC, VT_KIND_CONTEXT, (int)dev, ctx,
                                       cost.size, 0);
    if (rc != CUDA_SUCCESS) {
        vt_query_mem_info(&ev.free_bytes, &ev.total_bytes);
    } else {
        ev.context.free_after1 = cost.free_after1;
        ev.context.process_used1 = cost.process_used1;
    }
    if (slot)
        vt_record_mem_end(slot, &ev);
    else if (vt_recorder_active())
        vt_record_mem(&ev);
}

void vt_on_primary_retain(unsigned api, CUresult rc, const CUcontext *pctx, CUdevice dev)
{
    uintptr_t ctx = rc == CUDA_SUCCESS && pctx ? (uintptr_t)*pctx : 0;
    if (ctx && dev >= 0 && dev < VT_MAX_PRIMARY)
        atomic_store(&primary_ctx[dev], ctx);
    /* size: what creating it cost, estimated (context_size.c); 0 if this
     * retain did not create it or it could not be measured */
    record_context(api, rc, dev, ctx, pctx, 1);
}

void vt_on_primary_release(unsigned api, CUresult rc, const struct vt_pre *pre, CUdevice dev)
{
    uintptr_t ctx = dev >= 0 && dev < VT_MAX_PRIMARY ? atomic_load(&primary_ctx[dev]) : 0;
    emit_free(api, rc, pre, VT_KIND_CONTEXT, (int)dev, ctx, 0, 0);
}

void vt_on_ctx_create(unsigned api, CUresult rc, const CUcontext *pctx, CUdevice dev)
{
    record_context(api, rc, dev, rc == CUDA_SUCCESS && pctx ? (uint64_t)(uintptr_t)*pctx : 0,
                   pctx, 0);
}
