/* Pinned host memory: real (lazily backed) host memory, since programs touch
 * it; recorded with kind host/registered and never charged to a device. */
#define _GNU_SOURCE
#include "sim_internal.h"

static CUresult host_alloc(const char *fn, void **pp, size_t size, unsigned int flags)
{
    CUresult r = !vtsim_is_initialized() ? CUDA_ERROR_NOT_INITIALIZED
               : !pp || size == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    void *p = NULL;
    vtsim_lock();
    if (r == CUDA_SUCCESS) {
        p = vtsim_host_map(size);
        struct vtsim_range range = { (uint64_t)(uintptr_t)p, size, 0, -1, VTSIM_KIND_HOST, NULL,
                                     vtsim_current_ctx() };
        if (!p) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else if (vtsim_reg_add(&vtsim_allocations, &range) != 0) {
            vtsim_host_unmap(p, size);
            p = NULL;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            *pp = p;
        }
    }
    vtsim_ledger("host_alloc", r, "fn=%s\tdev=-1\taddr=%p\tsize=%llu\tflags=%u\tkind=host\tdelta=0",
                 fn, p, (unsigned long long)size, flags);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    return host_alloc("cuMemHostAlloc", pp, size, flags);
}

VTSIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    return host_alloc("cuMemAllocHost_v2", pp, size, 0);
}

VTSIM_EXPORT CUresult cuMemFreeHost(void *p)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct vtsim_range range = { 0 };
    vtsim_lock();
    struct vtsim_range *found = vtsim_reg_find(&vtsim_allocations, (uint64_t)(uintptr_t)p);
    CUresult r = found && found->addr == (uint64_t)(uintptr_t)p && found->kind == VTSIM_KIND_HOST
                     ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        vtsim_reg_remove(&vtsim_allocations, range.addr = found->addr, &range);
        vtsim_host_unmap(p, range.size);
    }
    vtsim_ledger("host_free", r, "fn=cuMemFreeHost\tdev=-1\taddr=%p\tsize=%llu\tkind=host\tdelta=0", p,
                 (unsigned long long)range.size);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
    CUresult r = !vtsim_is_initialized() ? CUDA_ERROR_NOT_INITIALIZED
               : !p || size == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    vtsim_lock();
    uint64_t a = (uint64_t)(uintptr_t)p;
    if (r == CUDA_SUCCESS && (vtsim_reg_find(&vtsim_allocations, a) ||
                              vtsim_reg_find(&vtsim_allocations, a + size - 1)))
        r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (r == CUDA_SUCCESS) {
        struct vtsim_range range = { a, size, 0, -1, VTSIM_KIND_REGISTERED, NULL, vtsim_current_ctx() };
        if (vtsim_reg_add(&vtsim_allocations, &range) != 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    vtsim_ledger("host_register", r,
                 "fn=cuMemHostRegister_v2\tdev=-1\taddr=%p\tsize=%llu\tflags=%u\tkind=registered\tdelta=0",
                 p, (unsigned long long)size, flags);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemHostUnregister(void *p)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct vtsim_range range = { 0 };
    vtsim_lock();
    struct vtsim_range *found = vtsim_reg_find(&vtsim_allocations, (uint64_t)(uintptr_t)p);
    CUresult r = found && found->addr == (uint64_t)(uintptr_t)p && found->kind == VTSIM_KIND_REGISTERED
                     ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (r == CUDA_SUCCESS)
        vtsim_reg_remove(&vtsim_allocations, found->addr, &range);
    vtsim_ledger("host_unregister", r,
                 "fn=cuMemHostUnregister\tdev=-1\taddr=%p\tsize=%llu\tkind=registered\tdelta=0", p,
                 (unsigned long long)range.size);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *dptr, void *p, unsigned int flags)
{
    if (!dptr || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    vtsim_lock();
    struct vtsim_range *found = vtsim_reg_find(&vtsim_allocations, (uint64_t)(uintptr_t)p);
    int host = found && (found->kind == VTSIM_KIND_HOST || found->kind == VTSIM_KIND_REGISTERED);
    vtsim_unlock();
    if (host)
        *dptr = (CUdeviceptr)(uintptr_t)p;  /* unified addressing: the same address */
    return host ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
