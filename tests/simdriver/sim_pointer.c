/* cuPointerGetAttribute(s): what the driver knows about an address, from the
 * allocation registry and the VMM mappings. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <string.h>

struct pointer_facts {
    int dev;           /* CU_DEVICE_CPU for host memory */
    int kind;
    uint64_t base, size;
    struct vtsim_ctx *ctx;
    void *pool;
};

static int lookup(uint64_t ptr, struct pointer_facts *f)
{
    memset(f, 0, sizeof *f);
    struct vtsim_range *r = vtsim_reg_find(&vtsim_allocations, ptr);
    if (r) {
        f->dev = r->dev >= 0 ? r->dev : CU_DEVICE_CPU;
        f->kind = r->kind;
        f->base = r->addr;
        f->size = r->size;
        f->ctx = r->ctx;
        f->pool = r->kind == VTSIM_KIND_ASYNC ? r->owner : NULL;
        return 0;
    }
    if (vtsim_vmm_lookup(ptr, &f->dev, &f->base, &f->size) == 0) {
        f->kind = VTSIM_KIND_MAP;
        return 0;
    }
    return -1;
}

static CUresult answer(void *data, CUpointer_attribute attr, uint64_t ptr, const struct pointer_facts *f)
{
    int host = f->kind == VTSIM_KIND_HOST || f->kind == VTSIM_KIND_REGISTERED;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = (CUcontext)f->ctx; break;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *(CUmemorytype *)data = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host && f->kind != VTSIM_KIND_MANAGED)
            return CUDA_ERROR_INVALID_VALUE;
        *(void **)data = (void *)(uintptr_t)ptr;
        break;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(unsigned int *)data = f->kind == VTSIM_KIND_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = f->dev; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = f->base; break;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = f->size; break;
    case CU_POINTER_ATTRIBUTE_MAPPED: *(unsigned int *)data = 1; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
        *(unsigned int *)data = f->kind == VTSIM_KIND_DEVICE || f->kind == VTSIM_KIND_PITCH;
        break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: *(CUmemoryPool *)data = (CUmemoryPool)f->pool; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID: *(unsigned long long *)data = f->base; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    struct pointer_facts f;
    vtsim_lock();
    int known = lookup(ptr, &f) == 0;
    vtsim_unlock();
    return known ? answer(data, attr, ptr, &f) : CUDA_ERROR_INVALID_VALUE;
}

VTSIM_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
                                             CUdeviceptr ptr)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!attrs || !data)
        return CUDA_ERROR_INVALID_VALUE;
    struct pointer_facts f;
    vtsim_lock();
    int known = lookup(ptr, &f) == 0;
    vtsim_unlock();
    for (unsigned i = 0; i < n; i++) {
        /* Unlike the single form, unknown pointers are not an error here:
         * memory type 0 says "not CUDA memory". */
        if (!known) {
            if (attrs[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
                *(CUmemorytype *)data[i] = (CUmemorytype)0;
            continue;
        }
        if (answer(data[i], attrs[i], ptr, &f) != CUDA_SUCCESS)
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
