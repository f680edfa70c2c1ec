/* The virtual memory management family.  Address reservations cost no device
 * memory; physical memory is charged at cuMemCreate and returned only when
 * the handle has been released (every reference) AND unmapped everywhere -
 * cuMemRelease of a still-mapped handle keeps the memory until the last
 * cuMemUnmap, as in the real driver.  The ledger's vmm_phys_free line marks
 * the moment the bytes really come back. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <stdlib.h>

#define VMM_SPACE_BASE 0x100000000000ull
#define VMM_SPACE_SIZE (16ull << 40)

struct vmm_handle {
    uint64_t id;
    int dev;
    uint64_t size;
    int refs;   /* cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease */
    int maps;   /* live cuMemMap of it */
    struct vmm_handle *next;
};

static struct vtsim_vaspace vmm_space = { VMM_SPACE_BASE, VMM_SPACE_SIZE, NULL, 0, 0 };
static struct vtsim_registry reservations;   /* kind va */
static struct vtsim_registry mappings;       /* kind map, owner = handle */
static struct vmm_handle *handles;
static uint64_t next_handle_id = 0x1000;

static struct vmm_handle *find_handle(uint64_t id)
{
    for (struct vmm_handle *h = handles; h; h = h->next)
        if (h->id == id)
            return h;
    return NULL;
}

/* With the lock held: frees the physical memory once nothing holds it. */
static void maybe_free_physical(struct vmm_handle *h, const char *fn)
{
    if (h->refs > 0 || h->maps > 0)
        return;
    vtsim_uncharge(h->dev, h->size);
    vtsim_ledger("vmm_phys_free", CUDA_SUCCESS,
                 "fn=%s\tdev=%d\thandle=0x%llx\tsize=%llu\tkind=vmm\tdelta=%lld", fn, h->dev,
                 (unsigned long long)h->id, (unsigned long long)h->size, -(long long)h->size);
    for (struct vmm_handle **p = &handles; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            break;
        }
    }
    free(h);
}

int vtsim_vmm_lookup(uint64_t addr, int *dev, uint64_t *base, uint64_t *size)
{
    struct vtsim_range *m = vtsim_reg_find(&mappings, addr);
    if (!m)
        return -1;
    *dev = m->dev;
    *base = m->addr;
    *size = m->size;
    return 0;
}

VTSIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                    CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = VTSIM_VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                          CUdeviceptr hint, unsigned long long flags)
{
    (void)hint;  /* a hint is only a hint */
    (void)flags;
    uint64_t align = alignment ? alignment : VTSIM_VMM_GRANULARITY;
    CUresult r = !vtsim_is_initialized() ? CUDA_ERROR_NOT_INITIALIZED
               : !ptr || size == 0 || size % VTSIM_VMM_GRANULARITY || (align & (align - 1))
                   ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    uint64_t addr = 0;
    vtsim_lock();
    if (r == CUDA_SUCCESS) {
        addr = vtsim_va_alloc(&vmm_space, size, align < VTSIM_VMM_GRANULARITY ? VTSIM_VMM_GRANULARITY : align);
        struct vtsim_range range = { addr, size, 0, -1, VTSIM_KIND_VA, NULL, NULL };
        if (!addr) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else if (vtsim_reg_add(&reservations, &range) != 0) {
            vtsim_va_free(&vmm_space, addr, size);
            addr = 0;
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            *ptr = addr;
        }
    }
    vtsim_ledger("vmm_reserve", r, "fn=cuMemAddressReserve\taddr=0x%llx\tsize=%llu\tkind=va\tdelta=0",
                 (unsigned long long)addr, (unsigned long long)size);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    struct vtsim_range *res = vtsim_reg_find(&reservations, ptr);
    CUresult r = res && res->addr == ptr && res->size == size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        struct vtsim_range *m = vtsim_reg_find(&mappings, ptr);
        for (size_t i = 0; i < mappings.n && !m; i++)
            if (mappings.v[i].addr >= ptr && mappings.v[i].addr < ptr + size)
                m = &mappings.v[i];
        if (m)
            r = CUDA_ERROR_INVALID_VALUE;  /* still mapped: unmap first */
    }
    if (r == CUDA_SUCCESS) {
        vtsim_reg_remove(&reservations, ptr, NULL);
        vtsim_va_free(&vmm_space, ptr, size);
    }
    vtsim_ledger("vmm_address_free", r, "fn=cuMemAddressFree\taddr=0x%llx\tsize=%llu\tkind=va\tdelta=0",
                 (unsigned long long)ptr, (unsigned long long)size);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                  const CUmemAllocationProp *prop, unsigned long long flags)
{
    (void)flags;
    int dev = prop ? prop->location.id : -1;
    CUresult r = !vtsim_is_initialized() ? CUDA_ERROR_NOT_INITIALIZED
               : !handle || !prop || size == 0 || size % VTSIM_VMM_GRANULARITY ||
                 prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
                 prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE
                   ? CUDA_ERROR_INVALID_VALUE : vtsim_check_device(dev);
    struct vmm_handle *h = NULL;
    vtsim_lock();
    if (r == CUDA_SUCCESS) {
        h = calloc(1, sizeof *h);
        r = h ? vtsim_charge(dev, size) : CUDA_ERROR_OUT_OF_MEMORY;
        if (r == CUDA_SUCCESS) {
            h->id = next_handle_id++;
            h->dev = dev;
            h->size = size;
            h->refs = 1;
            h->next = handles;
            handles = h;
            *handle = h->id;
        } else {
            free(h);
            h = NULL;
        }
    }
    vtsim_ledger("vmm_create", r, "fn=cuMemCreate\tdev=%d\thandle=0x%llx\tsize=%llu\tkind=vmm\tdelta=%lld",
                 dev, h ? (unsigned long long)h->id : 0ull, (unsigned long long)size,
                 h ? (long long)size : 0ll);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle id)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    struct vmm_handle *h = find_handle(id);
    CUresult r = h && h->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        h->refs--;
    vtsim_ledger("vmm_release", r, "fn=cuMemRelease\tdev=%d\thandle=0x%llx\tsize=%llu\trefs=%d\tmaps=%d\tkind=vmm\tdelta=0",
                 h ? h->dev : -1, (unsigned long long)id, h ? (unsigned long long)h->size : 0ull,
                 h ? h->refs : 0, h ? h->maps : 0);
    if (r == CUDA_SUCCESS)
        maybe_free_physical(h, "cuMemRelease");
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                               CUmemGenericAllocationHandle id, unsigned long long flags)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    struct vmm_handle *h = find_handle(id);
    struct vtsim_range *res = vtsim_reg_find(&reservations, ptr);
    CUresult r = CUDA_SUCCESS;
    if (!h || h->refs <= 0 || flags || size == 0 || size % VTSIM_VMM_GRANULARITY ||
        offset > h->size || size > h->size - offset)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (!res || ptr + size > res->addr + res->size)
        r = CUDA_ERROR_INVALID_VALUE;
    else if (vtsim_reg_find(&mappings, ptr) || vtsim_reg_find(&mappings, ptr + size - 1))
        r = CUDA_ERROR_INVALID_VALUE;  /* already mapped */
    if (r == CUDA_SUCCESS) {
        for (size_t i = 0; i < mappings.n; i++)  /* a smaller mapping strictly inside */
            if (mappings.v[i].addr > ptr && mappings.v[i].addr < ptr + size)
                r = CUDA_ERROR_INVALID_VALUE;
    }
    if (r == CUDA_SUCCESS) {
        struct vtsim_range m = { ptr, size, 0, h->dev, VTSIM_KIND_MAP, h, NULL };
        if (vtsim_reg_add(&mappings, &m) != 0)
            r = CUDA_ERROR_OUT_OF_MEMORY;
        else
            h->maps++;
    }
    vtsim_ledger("vmm_map", r, "fn=cuMemMap\tdev=%d\taddr=0x%llx\tsize=%llu\toffset=%llu\thandle=0x%llx\tkind=vmm\tdelta=0",
                 h ? h->dev : -1, (unsigned long long)ptr, (unsigned long long)size,
                 (unsigned long long)offset, (unsigned long long)id);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    /* The range must be covered exactly by whole mappings. */
    CUresult r = size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    for (uint64_t a = ptr; r == CUDA_SUCCESS && a < ptr + size;) {
        struct vtsim_range *m = vtsim_reg_find(&mappings, a);
        if (!m || m->addr != a || m->addr + m->size > ptr + size)
            r = CUDA_ERROR_INVALID_VALUE;
        else
            a = m->addr + m->size;
    }
    for (uint64_t a = ptr; r == CUDA_SUCCESS && a < ptr + size;) {
        struct vtsim_range m;
        vtsim_reg_remove(&mappings, a, &m);
        struct vmm_handle *h = m.owner;
        h->maps--;
        vtsim_ledger("vmm_unmap", r, "fn=cuMemUnmap\tdev=%d\taddr=0x%llx\tsize=%llu\thandle=0x%llx\tkind=vmm\tdelta=0",
                     h->dev, (unsigned long long)m.addr, (unsigned long long)m.size,
                     (unsigned long long)h->id);
        maybe_free_physical(h, "cuMemUnmap");
        a = m.addr + m.size;
    }
    if (r != CUDA_SUCCESS)
        vtsim_ledger("vmm_unmap", r, "fn=cuMemUnmap\tdev=-1\taddr=0x%llx\tsize=%llu\tkind=vmm\tdelta=0",
                     (unsigned long long)ptr, (unsigned long long)size);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || count == 0 || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    vtsim_lock();
    struct vtsim_range *m = vtsim_reg_find(&mappings, ptr);
    vtsim_unlock();
    return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VTSIM_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    vtsim_lock();
    struct vtsim_range *m = vtsim_reg_find(&mappings, (uint64_t)(uintptr_t)addr);
    struct vmm_handle *h = m ? m->owner : NULL;
    if (h) {
        h->refs++;
        *handle = h->id;
    }
    vtsim_ledger("vmm_retain", h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE,
                 "fn=cuMemRetainAllocationHandle\tdev=%d\taddr=%p\thandle=0x%llx\trefs=%d\tkind=vmm\tdelta=0",
                 h ? h->dev : -1, addr, h ? (unsigned long long)h->id : 0ull, h ? h->refs : 0);
    vtsim_unlock();
    return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* A forked child holds no physical memory and no mappings of its own. */
static void forget_vmm_in_child(void)
{
    vtsim_reg_clear(&mappings);
    vtsim_reg_clear(&reservations);
    handles = NULL;  /* the copies leak in the child, harmlessly */
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    vtsim_on_fork_child(forget_vmm_in_child);
}
