/* Classic device allocations (cuMemAlloc, pitch, managed, arrays), their
 * release, cuMemGetInfo and pointer queries.  Device memory is an address
 * range charged against the device's capacity, never host RAM; managed memory
 * is also host-touchable, so it gets a lazily backed host mapping too. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <string.h>
#include <sys/mman.h>

void *vtsim_host_map(uint64_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void vtsim_host_unmap(void *p, uint64_t size)
{
    munmap(p, size);
}

static void log_alloc(const char *fn, CUresult r, int dev, uint64_t addr, uint64_t size,
                      uint64_t charged, int kind)
{
    vtsim_ledger("alloc", r, "fn=%s\tdev=%d\taddr=0x%llx\tsize=%llu\tcharged=%llu\tkind=%s\tdelta=%lld",
                 fn, dev, (unsigned long long)addr, (unsigned long long)size,
                 (unsigned long long)charged, vtsim_kind_name(kind),
                 r == CUDA_SUCCESS ? (long long)charged : 0ll);
}

/* With the lock held.  Places and registers one device range that the caller
 * has already charged; on failure nothing is registered. */
CUresult vtsim_place_range(int dev, int kind, uint64_t size, uint64_t charged, void *owner,
                           uint64_t *addr_out)
{
    uint64_t addr;
    if (kind == VTSIM_KIND_MANAGED)
        addr = (uint64_t)(uintptr_t)vtsim_host_map(size);
    else
        addr = vtsim_va_alloc(vtsim_device_space(dev), size, VTSIM_ALLOC_ALIGN);
    struct vtsim_range range = { addr, size, charged, dev, kind, owner, vtsim_current_ctx() };
    if (addr == 0 || vtsim_reg_add(&vtsim_allocations, &range) != 0) {
        if (addr && kind == VTSIM_KIND_MANAGED)
            vtsim_host_unmap((void *)(uintptr_t)addr, size);
        else if (addr)
            vtsim_va_free(vtsim_device_space(dev), addr, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *addr_out = addr;
    return CUDA_SUCCESS;
}

static CUresult alloc_device(const char *fn, int kind, uint64_t size, int dev, CUdeviceptr *dptr)
{
    uint64_t addr = 0, charged = vtsim_charge_size(size);
    vtsim_lock();
    CUresult r = vtsim_charge(dev, charged);
    if (r == CUDA_SUCCESS) {
        r = vtsim_place_range(dev, kind, size, charged, NULL, &addr);
        if (r != CUDA_SUCCESS)
            vtsim_uncharge(dev, charged);
    }
    log_alloc(fn, r, dev, addr, size, charged, kind);
    vtsim_unlock();
    if (r == CUDA_SUCCESS)
        *dptr = addr;
    return r;
}

static CUresult alloc_on_current(const char *fn, int kind, CUdeviceptr *dptr, uint64_t size)
{
    int dev = -1;
    CUresult r = vtsim_current_device(&dev);
    if (r == CUDA_SUCCESS && (!dptr || size == 0))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS) {
        vtsim_ledger("alloc", r, "fn=%s\tdev=%d\taddr=0x0\tsize=%llu\tcharged=0\tkind=%s\tdelta=0",
                     fn, dev, (unsigned long long)size, vtsim_kind_name(kind));
        return r;
    }
    return alloc_device(fn, kind, size, dev, dptr);
}

VTSIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    return alloc_on_current("cuMemAlloc_v2", VTSIM_KIND_DEVICE, dptr, bytesize);
}

VTSIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    return alloc_on_current("cuMemAllocManaged", VTSIM_KIND_MANAGED, dptr, bytesize);
}

VTSIM_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width,
                                         size_t height, unsigned int element_size)
{
    uint64_t row = (width + VTSIM_ALLOC_ALIGN - 1) & ~(VTSIM_ALLOC_ALIGN - 1);
    int ok_element = element_size == 4 || element_size == 8 || element_size == 16;
    if (!pitch || !ok_element || (height && row > UINT64_MAX / height)) {
        vtsim_ledger("alloc", CUDA_ERROR_INVALID_VALUE,
                     "fn=cuMemAllocPitch_v2\tdev=-1\taddr=0x0\tsize=0\tcharged=0\tkind=pitch\tdelta=0");
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = alloc_on_current("cuMemAllocPitch_v2", VTSIM_KIND_PITCH, dptr, row * height);
    if (r == CUDA_SUCCESS)
        *pitch = row;
    return r;
}

/* With the lock held: return a removed range's resources. */
static void release_range(const struct vtsim_range *range)
{
    if (range->kind == VTSIM_KIND_ASYNC && range->owner) {
        vtsim_pool_give_back(range->owner, range);
        return;
    }
    if (range->kind == VTSIM_KIND_MANAGED)
        vtsim_host_unmap((void *)(uintptr_t)range->addr, range->size);
    else
        vtsim_va_free(vtsim_device_space(range->dev), range->addr, range->size);
    if (range->charged)
        vtsim_uncharge(range->dev, range->charged);
}

/* Frees a device range of one of the allowed kinds (a bit mask); the ledger
 * line says how much device memory came back (delta). */
CUresult vtsim_free_device(const char *fn, uint64_t addr, unsigned kinds)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct vtsim_range range = { 0 };
    range.dev = -1;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    vtsim_lock();
    struct vtsim_range *found = vtsim_reg_find(&vtsim_allocations, addr);
    if (found && found->addr == addr && (kinds & (1u << found->kind))) {
        vtsim_reg_remove(&vtsim_allocations, addr, &range);
        release_range(&range);
        r = CUDA_SUCCESS;
    }
    /* An async range's bytes may stay cached in its pool: that pool's
     * pool_release line reports the device memory actually returned. */
    long long delta = r == CUDA_SUCCESS && range.kind != VTSIM_KIND_ASYNC ? -(long long)range.charged : 0;
    vtsim_ledger("free", r, "fn=%s\tdev=%d\taddr=0x%llx\tsize=%llu\tcharged=%llu\tkind=%s\tdelta=%lld",
                 fn, range.dev, (unsigned long long)addr, (unsigned long long)range.size,
                 (unsigned long long)range.charged,
                 r == CUDA_SUCCESS ? vtsim_kind_name(range.kind) : "?", delta);
    vtsim_unlock();
    return r;
}

#define FREEABLE_BY_CUMEMFREE \
    ((1u << VTSIM_KIND_DEVICE) | (1u << VTSIM_KIND_PITCH) | (1u << VTSIM_KIND_MANAGED) | \
     (1u << VTSIM_KIND_ASYNC))

VTSIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return vtsim_free_device("cuMemFree_v2", dptr, FREEABLE_BY_CUMEMFREE);
}

VTSIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    int dev = -1;
    CUresult r = vtsim_current_device(&dev);
    uint64_t total = 0, used = 0;
    if (r == CUDA_SUCCESS) {
        total = vtsim_capacity(dev);
        used = vtsim_used_all(dev);
        if (free_bytes)
            *free_bytes = used < total ? total - used : 0;
        if (total_bytes)
            *total_bytes = total;
    }
    vtsim_ledger("getinfo", r, "dev=%d\tfree=%llu\ttotal=%llu\tmine=%llu", dev,
                 (unsigned long long)(used < total ? total - used : 0),
                 (unsigned long long)total,
                 (unsigned long long)(dev >= 0 ? vtsim_used_mine(dev) : 0));
    return r;
}

VTSIM_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    struct vtsim_range *found = vtsim_reg_find(&vtsim_allocations, dptr);
    if (found) {
        if (pbase)
            *pbase = found->addr;
        if (psize)
            *psize = found->size;
    }
    vtsim_unlock();
    return found ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

VTSIM_EXPORT CUresult cuArrayCreate_v2(CUarray *handle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    size_t elem = desc ? format_bytes(desc->Format) : 0;
    if (!handle || !elem || desc->Width == 0 || desc->NumChannels == 0) {
        vtsim_ledger("alloc", CUDA_ERROR_INVALID_VALUE,
                     "fn=cuArrayCreate_v2\tdev=-1\taddr=0x0\tsize=0\tcharged=0\tkind=array\tdelta=0");
        return CUDA_ERROR_INVALID_VALUE;
    }
    uint64_t size = (uint64_t)desc->Width * (desc->Height ? desc->Height : 1) * desc->NumChannels * elem;
    CUdeviceptr addr = 0;
    CUresult r = alloc_on_current("cuArrayCreate_v2", VTSIM_KIND_ARRAY, &addr, size);
    if (r == CUDA_SUCCESS)
        *handle = (CUarray)(uintptr_t)addr;
    return r;
}

VTSIM_EXPORT CUresult cuArrayDestroy(CUarray array)
{
    return vtsim_free_device("cuArrayDestroy", (uint64_t)(uintptr_t)array, 1u << VTSIM_KIND_ARRAY);
}

/* A forked child starts with no allocations of its own. */
static void forget_allocations_in_child(void)
{
    vtsim_reg_clear(&vtsim_allocations);
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    vtsim_on_fork_child(forget_allocations_in_child);
}
