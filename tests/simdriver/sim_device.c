/* cuInit, the driver version and device queries of the simulated GPUs. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <stdio.h>
#include <string.h>

/* What callers (runtimes, PyTorch, NCCL) ask about a device; a plausible
 * Ampere/Ada-class card.  Unlisted attributes read as 0. */
#define VTSIM_DEVICE_ATTRIBUTES(X)                                   \
    X(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024)               \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024)                     \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024)                     \
    X(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64)                       \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647)                \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535)                     \
    X(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535)                     \
    X(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152)        \
    X(CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32)                             \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 128)                 \
    X(CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 2520000)                       \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 10501000)               \
    X(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 384)              \
    X(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 75497472)                   \
    X(CU_DEVICE_ATTRIBUTE_INTEGRATED, 0)                             \
    X(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1)                    \
    X(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1)                     \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8)               \
    X(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 9)               \
    X(CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1)                         \
    X(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1)              \
    X(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1)                 \
    X(CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1)    \
    X(CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1) \
    X(CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2)                     \
    X(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1)                     \
    X(CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512)                    \
    X(CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647)

VTSIM_EXPORT CUresult cuInit(unsigned int flags)
{
    CUresult r = flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS && !vtsim_is_initialized()) {
        vtsim_device_count();  /* sets up the (maybe shared) usage table now */
        vtsim_set_initialized();
        if (vtsim_config()->has_visible) {
            char map[VTSIM_MAX_DEVICES * 4 + 1] = "";
            size_t o = 0;
            for (int d = 0; d < vtsim_device_count(); d++)
                o += (size_t)snprintf(map + o, sizeof map - o, "%s%d", d ? "," : "",
                                      vtsim_physical_device(d));
            vtsim_ledger("init", r, "devices=%d\tvisible=%s", vtsim_device_count(), map);
        } else {
            vtsim_ledger("init", r, "devices=%d", vtsim_device_count());
        }
    }
    return r;
}

VTSIM_EXPORT CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = VTSIM_DRIVER_VERSION;
    return CUDA_SUCCESS;
}

CUresult vtsim_check_device(CUdevice dev)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    return dev >= 0 && dev < vtsim_device_count() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

VTSIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = vtsim_device_count();
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    CUresult r = vtsim_check_device(ordinal);
    if (r == CUDA_SUCCESS && !device)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *device = ordinal;
    return r;
}

VTSIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Simulated GPU %d (%.2f GiB)", vtsim_physical_device(dev),
             (double)vtsim_capacity(dev) / (double)(1ull << 30));
    return CUDA_SUCCESS;
}

/* Stable per physical device, and per shared-ledger name, so two processes
 * sharing a simulated device see the same UUID, whatever ordinal
 * CUDA_VISIBLE_DEVICES gives it in each. */
void vtsim_physical_uuid(int physical, unsigned char out[16])
{
    const char *shared = vtsim_config()->shared;
    uint64_t h = 1469598103934665603ull;  /* FNV-1a */
    for (const char *p = shared; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    h = (h ^ (uint64_t)(physical + 1)) * 1099511628211ull;
    for (int i = 0; i < 16; i++) {
        h = (h ^ (uint64_t)i) * 1099511628211ull;
        out[i] = (unsigned char)(h >> 56);
    }
}

static void fill_uuid(CUuuid *uuid, CUdevice dev)
{
    unsigned char bytes[16];
    vtsim_physical_uuid(vtsim_physical_device(dev), bytes);
    memcpy(uuid->bytes, bytes, sizeof bytes);
}

VTSIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !uuid)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        fill_uuid(uuid, dev);
    return r;
}

VTSIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

VTSIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !bytes)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *bytes = vtsim_capacity(dev);
    return r;
}

VTSIM_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    if (!value || attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    switch (attrib) {
#define VTSIM_ATTRIBUTE_CASE(attr, v) case attr: *value = (v); break;
    VTSIM_DEVICE_ATTRIBUTES(VTSIM_ATTRIBUTE_CASE)
#undef VTSIM_ATTRIBUTE_CASE
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = 1 + (int)dev; break;
    default: *value = 0; break;
    }
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS)
        r = vtsim_check_device(peer);
    if (r == CUDA_SUCCESS && !can)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *can = dev != peer;
    return r;
}
