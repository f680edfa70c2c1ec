/* Stream-ordered allocation and memory pools.  A pool keeps device memory it
 * got from the device ("reserved") and hands it out ("used"); freed bytes stay
 * reserved up to the pool's release threshold (0 by default, as in CUDA, where
 * the excess goes back at the next synchronisation: here at once) and
 * cuMemPoolTrimTo gives cached bytes back.  Streams are accepted and ignored:
 * every stream-ordered operation completes immediately. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <string.h>

#define MAX_POOLS 128

struct vtsim_pool {
    int live;
    int dev;
    int is_default;
    uint64_t reserved, used, threshold;
    uint64_t reserved_high, used_high;
};

static struct vtsim_pool pools[MAX_POOLS];   /* slots 0..15: default pools */
static struct vtsim_pool *device_pool[VTSIM_MAX_DEVICES];  /* NULL: the default */

static struct vtsim_pool *default_pool(int dev)
{
    struct vtsim_pool *p = &pools[dev];
    if (!p->live) {
        p->live = 1;
        p->dev = dev;
        p->is_default = 1;
    }
    return p;
}

/* With the lock held. */
static struct vtsim_pool *as_pool(CUmemoryPool handle)
{
    struct vtsim_pool *p = (struct vtsim_pool *)handle;
    return p >= pools && p < pools + MAX_POOLS && p->live ? p : NULL;
}

CUmemoryPool vtsim_current_pool(int dev)
{
    return (CUmemoryPool)(device_pool[dev] ? device_pool[dev] : default_pool(dev));
}

/* With the lock held: give reserved-but-unused bytes beyond keep back. */
static uint64_t release_cached(struct vtsim_pool *p, uint64_t keep)
{
    uint64_t target = p->used > keep ? p->used : keep;
    if (p->reserved <= target)
        return 0;
    uint64_t bytes = p->reserved - target;
    p->reserved = target;
    vtsim_uncharge(p->dev, bytes);
    vtsim_ledger("pool_release", CUDA_SUCCESS, "dev=%d\tpool=%p\tsize=%llu\treserved=%llu\tdelta=%lld",
                 p->dev, (void *)p, (unsigned long long)bytes, (unsigned long long)p->reserved,
                 -(long long)bytes);
    return bytes;
}

void vtsim_pool_give_back(void *pool, const struct vtsim_range *range)
{
    struct vtsim_pool *p = pool;
    vtsim_va_free(vtsim_device_space(range->dev), range->addr, range->size);
    p->used -= range->charged <= p->used ? range->charged : p->used;
    release_cached(p, p->live ? p->threshold : 0);
}

static CUresult alloc_from_pool(const char *fn, CUdeviceptr *dptr, size_t size, CUmemoryPool handle)
{
    uint64_t charged = vtsim_charge_size(size), fresh = 0, addr = 0;
    int dev = -1;
    vtsim_lock();
    struct vtsim_pool *p = as_pool(handle);
    CUresult r = !vtsim_is_initialized() ? CUDA_ERROR_NOT_INITIALIZED
               : !p || !dptr || size == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        dev = p->dev;
        uint64_t cached = p->reserved - p->used;
        fresh = charged > cached ? charged - cached : 0;
        r = fresh ? vtsim_charge(dev, fresh) : CUDA_SUCCESS;
        if (r == CUDA_SUCCESS) {
            r = vtsim_place_range(dev, VTSIM_KIND_ASYNC, size, charged, p, &addr);
            if (r != CUDA_SUCCESS && fresh)
                vtsim_uncharge(dev, fresh);
        }
        if (r == CUDA_SUCCESS) {
            p->reserved += fresh;
            p->used += charged;
            if (p->reserved > p->reserved_high)
                p->reserved_high = p->reserved;
            if (p->used > p->used_high)
                p->used_high = p->used;
            *dptr = addr;
        }
    }
    vtsim_ledger("alloc", r,
                 "fn=%s\tdev=%d\taddr=0x%llx\tsize=%llu\tcharged=%llu\tkind=async\tpool=%p\tdelta=%lld",
                 fn, dev, (unsigned long long)addr, (unsigned long long)size,
                 (unsigned long long)charged, (void *)handle,
                 r == CUDA_SUCCESS ? (long long)fresh : 0ll);
    vtsim_unlock();
    return r;
}

static CUresult alloc_async(const char *fn, CUdeviceptr *dptr, size_t size)
{
    int dev = -1;
    CUresult r = vtsim_current_device(&dev);
    if (r != CUDA_SUCCESS) {
        vtsim_ledger("alloc", r, "fn=%s\tdev=-1\taddr=0x0\tsize=%llu\tcharged=0\tkind=async\tdelta=0",
                     fn, (unsigned long long)size);
        return r;
    }
    vtsim_lock();
    CUmemoryPool pool = vtsim_current_pool(dev);
    vtsim_unlock();
    return alloc_from_pool(fn, dptr, size, pool);
}

VTSIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    (void)stream;
    return alloc_async("cuMemAllocAsync", dptr, size);
}

VTSIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream stream)
{
    (void)stream;
    return alloc_async("cuMemAllocAsync_ptsz", dptr, size);
}

VTSIM_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
                                              CUstream stream)
{
    (void)stream;
    return alloc_from_pool("cuMemAllocFromPoolAsync", dptr, size, pool);
}

VTSIM_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size,
                                                   CUmemoryPool pool, CUstream stream)
{
    (void)stream;
    return alloc_from_pool("cuMemAllocFromPoolAsync_ptsz", dptr, size, pool);
}

VTSIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return vtsim_free_device("cuMemFreeAsync", dptr, 1u << VTSIM_KIND_ASYNC);
}

VTSIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream stream)
{
    (void)stream;
    return vtsim_free_device("cuMemFreeAsync_ptsz", dptr, 1u << VTSIM_KIND_ASYNC);
}

VTSIM_EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pool || !props || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
        vtsim_check_device(props->location.id) != CUDA_SUCCESS)
        return CUDA_ERROR_INVALID_VALUE;
    struct vtsim_pool *p = NULL;
    vtsim_lock();
    for (int i = VTSIM_MAX_DEVICES; i < MAX_POOLS && !p; i++)
        if (!pools[i].live && pools[i].used == 0)
            p = &pools[i];
    CUresult r = p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    if (p) {
        memset(p, 0, sizeof *p);
        p->live = 1;
        p->dev = props->location.id;
        *pool = (CUmemoryPool)p;
    }
    vtsim_ledger("pool_create", r, "dev=%d\tpool=%p", props->location.id, (void *)p);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    vtsim_lock();
    struct vtsim_pool *p = as_pool(pool);
    CUresult r = p && !p->is_default ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        for (int d = 0; d < VTSIM_MAX_DEVICES; d++)
            if (device_pool[d] == p)
                device_pool[d] = NULL;
        release_cached(p, 0);  /* outstanding allocations return when freed */
        p->live = 0;
    }
    vtsim_ledger("pool_destroy", r, "dev=%d\tpool=%p\tused=%llu", p ? p->dev : -1, (void *)pool,
                 (unsigned long long)(p ? p->used : 0));
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    vtsim_lock();
    struct vtsim_pool *p = as_pool(pool);
    uint64_t released = p ? release_cached(p, keep) : 0;
    vtsim_ledger("pool_trim", p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE,
                 "dev=%d\tpool=%p\tkeep=%llu\treleased=%llu", p ? p->dev : -1, (void *)pool,
                 (unsigned long long)keep, (unsigned long long)released);
    vtsim_unlock();
    return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VTSIM_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = CUDA_SUCCESS;
    vtsim_lock();
    struct vtsim_pool *p = as_pool(pool);
    if (!p || !value) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) {
        p->threshold = *(cuuint64_t *)value;
        release_cached(p, p->threshold);
    } else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) {
        p->reserved_high = p->reserved;  /* only a reset to the current value exists */
    } else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) {
        p->used_high = p->used;
    }  /* reuse policies: accepted, without effect here */
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    CUresult r = CUDA_SUCCESS;
    vtsim_lock();
    struct vtsim_pool *p = as_pool(pool);
    if (!p || !value) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        switch (attr) {
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: *(cuuint64_t *)value = p->threshold; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: *(cuuint64_t *)value = p->reserved; break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: *(cuuint64_t *)value = p->reserved_high; break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: *(cuuint64_t *)value = p->used; break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH: *(cuuint64_t *)value = p->used_high; break;
        default: *(int *)value = 1; break;  /* the reuse policies are on, as by default */
        }
    }
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !pool)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        vtsim_lock();
        *pool = (CUmemoryPool)default_pool(dev);
        vtsim_unlock();
    }
    return r;
}

VTSIM_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !pool)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        vtsim_lock();
        *pool = vtsim_current_pool(dev);
        vtsim_unlock();
    }
    return r;
}

VTSIM_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    CUresult r = vtsim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    vtsim_lock();
    struct vtsim_pool *p = as_pool(pool);
    if (!p || p->dev != dev)
        r = CUDA_ERROR_INVALID_VALUE;
    else
        device_pool[dev] = p->is_default ? NULL : p;
    vtsim_unlock();
    return r;
}

/* CUDA 13 location-based forms; only device locations hold VRAM here. */
static CUresult device_of_location(const CUmemLocation *loc, CUmemAllocationType type, int *dev)
{
    if (!loc || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_NOT_SUPPORTED;
    *dev = loc->id;
    return vtsim_check_device(loc->id);
}

VTSIM_EXPORT CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool, CUmemLocation *loc,
                                             CUmemAllocationType type)
{
    int dev = 0;
    CUresult r = device_of_location(loc, type, &dev);
    return r == CUDA_SUCCESS ? cuDeviceGetDefaultMemPool(pool, dev) : r;
}

VTSIM_EXPORT CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *loc, CUmemAllocationType type)
{
    int dev = 0;
    CUresult r = device_of_location(loc, type, &dev);
    return r == CUDA_SUCCESS ? cuDeviceGetMemPool(pool, dev) : r;
}

VTSIM_EXPORT CUresult cuMemSetMemPool(CUmemLocation *loc, CUmemAllocationType type, CUmemoryPool pool)
{
    int dev = 0;
    CUresult r = device_of_location(loc, type, &dev);
    return r == CUDA_SUCCESS ? cuDeviceSetMemPool(dev, pool) : r;
}

/* A forked child owns no pool memory. */
static void forget_pools_in_child(void)
{
    for (int i = 0; i < MAX_POOLS; i++)
        pools[i].reserved = pools[i].used = 0;
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    vtsim_on_fork_child(forget_pools_in_child);
}
