/* Internal interfaces of the simulated driver (a test double of libcuda.so.1).
 *
 * Every .c file of the driver includes this header first.  __CUDA_API_VERSION_INTERNAL
 * makes cuda.h declare each exported variant under its real versioned name
 * (cuMemAlloc_v2, cuMemAllocAsync_ptsz, ...) instead of remapping names. */
#ifndef VTSIM_INTERNAL_H
#define VTSIM_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define VTSIM_EXPORT __attribute__((visibility("default")))
#define VTSIM_MAX_DEVICES 16
#define VTSIM_ALLOC_ALIGN 512ull            /* cuMemAlloc alignment */
#define VTSIM_VMM_GRANULARITY (2ull << 20)  /* cuMemGetAllocationGranularity */
#define VTSIM_DRIVER_VERSION 13000

/* ---- configuration (sim_config.c), read once from VTSIM_* variables ---- */
struct vtsim_config {
    int devices;
    uint64_t capacity[VTSIM_MAX_DEVICES];
    uint64_t context_bytes;   /* charged per context created on a device */
    uint64_t granule;         /* charge rounding, >= 512 */
    char shared[96];          /* VTSIM_SHARED name, "" when private */
    int has_visible;          /* CUDA_VISIBLE_DEVICES is set */
    int nvisible;             /* its valid leading entries (before any bad one) */
    int visible[VTSIM_MAX_DEVICES]; /* ordinal -> physical device */
    int ledger_fd;            /* VTSIM_LEDGER, -1 when off */
    int lookup_fd;            /* VTSIM_LOOKUP_LOG, -1 when off */
};
const struct vtsim_config *vtsim_config(void);
/* "24GiB", "23.52GiB", "512MiB", "1000" -> bytes; 0 on success. */
int vtsim_parse_bytes(const char *text, uint64_t *bytes);

/* ---- the one lock guarding all process-local state (sim_state.c) ---- */
void vtsim_lock(void);
void vtsim_unlock(void);
int vtsim_is_initialized(void);
void vtsim_set_initialized(void);
/* Registered by modules that must forget inherited state in a forked child
 * (called with the lock held). */
void vtsim_on_fork_child(void (*fn)(void));

/* ---- device capacity accounting (sim_capacity.c; local or shm shared) ---- */
int vtsim_device_count(void);                     /* what CUDA_VISIBLE_DEVICES leaves */
int vtsim_physical_device(int dev);               /* the physical device behind ordinal dev */
uint64_t vtsim_capacity(int dev);
uint64_t vtsim_charge_size(uint64_t size);        /* rounded to the granule */
CUresult vtsim_charge(int dev, uint64_t bytes);   /* OUT_OF_MEMORY if it does not fit */
void vtsim_uncharge(int dev, uint64_t bytes);
uint64_t vtsim_used_all(int dev);                 /* every process sharing the device */
uint64_t vtsim_used_mine(int dev);                /* this process only */
void vtsim_capacity_forget_mine(void);            /* fork child: start at zero */
/* A physical device's UUID (sim_device.c): stable per device and shared name. */
void vtsim_physical_uuid(int physical, unsigned char out[16]);

/* ---- what the NVML double (nvml/) asks the driver, exported for it ----
 * Physical devices (NVML ignores CUDA_VISIBLE_DEVICES), their UUIDs, and
 * every process holding bytes on one (contexts included), up to max; how
 * many. Private (no VTSIM_SHARED): this process alone. */
VTSIM_EXPORT int vtsim_nvml_device_count(void);
VTSIM_EXPORT void vtsim_nvml_uuid(int physical, unsigned char out[16]);
VTSIM_EXPORT int vtsim_nvml_processes(int physical, int *pids, uint64_t *bytes, int max);
/* A ledger line of the NVML double: op, then fields (tab-separated key=value). */
VTSIM_EXPORT void vtsim_nvml_ledger(const char *op, const char *fields);

/* ---- ground-truth ledger (sim_ledger.c) ---- */
/* Appends "op=<op>\tresult=<r>\t<fields>\tpid=..\ttid=..\tns=..\n" with one
 * O_APPEND write.  fields is a printf format of tab-separated key=value. */
void vtsim_ledger(const char *op, CUresult result, const char *fields, ...)
    __attribute__((format(printf, 3, 4)));
void vtsim_lookup_log(const char *name, int version, unsigned long long flags,
                      CUresult result, int status, const char *symbol);

/* ---- contexts (sim_context.c) ---- */
struct vtsim_ctx {
    int dev;
    int primary;
    int live;
    unsigned flags;
};
struct vtsim_ctx *vtsim_current_ctx(void);
/* The device of the calling thread's current context, or INVALID_CONTEXT. */
CUresult vtsim_current_device(int *dev);
CUresult vtsim_check_device(CUdevice dev);        /* NOT_INITIALIZED / INVALID_DEVICE */

/* ---- address ranges (sim_registry.c): sorted, non-overlapping ---- */
enum vtsim_kind {
    VTSIM_KIND_DEVICE, VTSIM_KIND_PITCH, VTSIM_KIND_MANAGED, VTSIM_KIND_ASYNC,
    VTSIM_KIND_ARRAY, VTSIM_KIND_HOST, VTSIM_KIND_REGISTERED, VTSIM_KIND_VA,
    VTSIM_KIND_MAP,
};
const char *vtsim_kind_name(int kind);

struct vtsim_range {
    uint64_t addr;
    uint64_t size;      /* bytes asked for */
    uint64_t charged;   /* bytes charged to the device (0 for host kinds) */
    int dev;            /* -1 for host memory */
    int kind;
    void *owner;        /* pool of an async allocation, handle of a mapping */
    struct vtsim_ctx *ctx;
};
struct vtsim_registry {
    struct vtsim_range *v;
    size_t n, cap;
};
int vtsim_reg_add(struct vtsim_registry *r, const struct vtsim_range *range);
int vtsim_reg_remove(struct vtsim_registry *r, uint64_t addr, struct vtsim_range *out);
struct vtsim_range *vtsim_reg_find(struct vtsim_registry *r, uint64_t addr);
void vtsim_reg_clear(struct vtsim_registry *r);

/* The registry of every device, managed, host and array allocation. */
extern struct vtsim_registry vtsim_allocations;

/* ---- virtual address spaces (sim_vaspace.c): first fit, coalescing ---- */
struct vtsim_vaspace {
    uint64_t base, size;
    struct { uint64_t addr, size; } *free;
    size_t n, cap;
};
/* 0 when the space is exhausted.  align must be a power of two. */
uint64_t vtsim_va_alloc(struct vtsim_vaspace *s, uint64_t size, uint64_t align);
void vtsim_va_free(struct vtsim_vaspace *s, uint64_t addr, uint64_t size);
/* Device address space of a device (cuMemAlloc & co). */
struct vtsim_vaspace *vtsim_device_space(int dev);

/* ---- device allocations (sim_memory.c) ---- */
/* With the lock held: places and registers a device range the caller has
 * already charged (charged is recorded with it). */
CUresult vtsim_place_range(int dev, int kind, uint64_t size, uint64_t charged, void *owner,
                           uint64_t *addr_out);
/* Frees the range starting at addr if its kind is in the mask (1u << kind). */
CUresult vtsim_free_device(const char *fn, uint64_t addr, unsigned kinds);

/* ---- pools (sim_pool.c) ---- */
CUmemoryPool vtsim_current_pool(int dev);
/* An async allocation's pool takes back its bytes (with the lock held). */
void vtsim_pool_give_back(void *pool, const struct vtsim_range *range);

/* ---- VMM (sim_vmm.c) ---- */
/* With the lock held: the mapping containing addr; -1 when none. */
int vtsim_vmm_lookup(uint64_t addr, int *dev, uint64_t *base, uint64_t *size);

/* Host memory that programs really touch: lazily backed anonymous mapping. */
void *vtsim_host_map(uint64_t size);
void vtsim_host_unmap(void *p, uint64_t size);

#endif
