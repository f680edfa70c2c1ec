/*
 * Which device an event belongs to, and the facts of each device.
 *
 * The device comes from the allocation when it says (cuMemCreate props,
 * pools), else from the pointer (DEVICE_ORDINAL attribute), else from the
 * current context. cuCtxGetDevice alone is not enough: it fails on worker
 * threads that never made a context current (expandable segments).
 * All driver calls here run with the recursion guard set.
 */
#include "hooks_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define VT_MAX_ORDINALS 256

static atomic_ullong seen_devices[VT_MAX_ORDINALS / 64];

/* cuCtxGetDevice, asked on every cuMemAlloc: kept here once found (the
 * driver's helpers never change once resolved, driver_link.c). */
static _Atomic(PFN_cuCtxGetDevice_t) ctx_get_device;

int vt_current_device(void)
{
    PFN_cuCtxGetDevice_t get = atomic_load_explicit(&ctx_get_device, memory_order_relaxed);
    if (__builtin_expect(get == NULL, 0)) {
        get = VT_HELPER_FN(cuCtxGetDevice);
        if (!get)
            return -1;
        atomic_store_explicit(&ctx_get_device, get, memory_order_relaxed);
    }
    CUdevice dev = -1;
    vt_in_tracer++;
    CUresult rc = get(&dev);
    vt_in_tracer--;
    return rc == CUDA_SUCCESS ? (int)dev : -1;
}

int vt_device_of_ptr(CUdeviceptr ptr)
{
    PFN_cuPointerGetAttribute_t attr = VT_HELPER_FN(cuPointerGetAttribute);
    if (ptr && attr) {
        int ordinal = -1;
        vt_in_tracer++;
        CUresult rc = attr(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
        vt_in_tracer--;
        if (rc == CUDA_SUCCESS && ordinal >= 0)
            return ordinal;
    }
    return vt_current_device();
}

uint64_t vt_size_of_ptr(CUdeviceptr ptr)
{
    PFN_cuMemGetAddressRange_v2_t range = VT_HELPER_FN(cuMemGetAddressRange_v2);
    if (!ptr || !range)
        return 0;
    CUdeviceptr base = 0;
    size_t size = 0;
    vt_in_tracer++;
    CUresult rc = range(&base, &size, ptr);
    vt_in_tracer--;
    return rc == CUDA_SUCCESS ? size : 0;
}

void vt_query_mem_info(uint64_t *free_bytes, uint64_t *total_bytes)
{
    PFN_cuMemGetInfo_v2_t info = VT_HELPER_FN(cuMemGetInfo_v2);
    size_t f = 0, t = 0;
    CUresult rc = CUDA_ERROR_NOT_INITIALIZED;
    if (info) {
        vt_in_tracer++;
        rc = info(&f, &t);
        vt_in_tracer--;
    }
    *free_bytes = rc == CUDA_SUCCESS ? f : 0;
    *total_bytes = rc == CUDA_SUCCESS ? t : 0;
}

int vt_device_uuid(CUdevice dev, uint8_t out[16])
{
    PFN_cuDeviceGetUuid_v2_t uuid_v2 = VT_HELPER_FN(cuDeviceGetUuid_v2);
    PFN_cuDeviceGetUuid_t uuid_v1 = VT_HELPER_FN(cuDeviceGetUuid);
    CUuuid uuid;
    _Static_assert(sizeof uuid.bytes == 16, "CUuuid is 16 bytes");
    vt_in_tracer++;
    int ok = (uuid_v2 && uuid_v2(&uuid, dev) == CUDA_SUCCESS) ||
             (uuid_v1 && uuid_v1(&uuid, dev) == CUDA_SUCCESS);
    vt_in_tracer--;
    memcpy(out, ok ? uuid.bytes : (const char[16]){0}, 16);
    return ok;
}

static void record_device_facts(int ordinal)
{
    PFN_cuDeviceGet_t get = VT_HELPER_FN(cuDeviceGet);
    PFN_cuDeviceGetName_t get_name = VT_HELPER_FN(cuDeviceGetName);
    PFN_cuDeviceTotalMem_v2_t total_mem = VT_HELPER_FN(cuDeviceTotalMem_v2);

    CUdevice dev = ordinal;
    char name[256] = "";
    size_t total = 0;

    vt_in_tracer++;
    if (get && get(&dev, ordinal) != CUDA_SUCCESS)
        dev = ordinal;
    vt_in_tracer--;
    uint8_t raw[VT_UUID_SIZE];
    _Static_assert(VT_UUID_SIZE == 16, "a UUID is 16 bytes");
    vt_device_uuid(dev, raw);
    vt_in_tracer++;
    if (!get_name || get_name(name, (int)sizeof name - 1, dev) != CUDA_SUCCESS)
        name[0] = '\0';
    name[sizeof name - 1] = '\0';
    if (!total_mem || total_mem(&total, dev) != CUDA_SUCCESS)
        total = 0;
    vt_in_tracer--;

    vt_record_device(ordinal, raw, name, total);
}

void vt_note_device(int ordinal)
{
    if (ordinal < 0 || ordinal >= VT_MAX_ORDINALS)
        return;
    unsigned long long bit = 1ull << (ordinal % 64);
    atomic_ullong *word = &seen_devices[ordinal / 64];
    if (atomic_load_explicit(word, memory_order_relaxed) & bit)
        return; /* seen: the common case, decided first */
    if (!vt_recorder_active())
        return;
    if (atomic_fetch_or(word, bit) & bit)
        return; /* another thread claimed it */
    record_device_facts(ordinal);
}

/* A forked child may start a trace of its own: it must describe its devices
 * again. */
static void forget_devices_in_child(void)
{
    for (size_t i = 0; i < VT_MAX_ORDINALS / 64; i++)
        atomic_store(&seen_devices[i], 0);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_devices_in_child);
}
