/*
 * A test double of libnvidia-ml.so.1, the management library, answering
 * from the simulated driver's ledger of device usage: the few entry points
 * the tracer asks (preload/hooks/nvml_probe.c) - init and shutdown,
 * a device by UUID, the compute processes on a device with their bytes
 * (allocations and contexts, as the real NVML counts them). Devices are
 * physical, as NVML's are: CUDA_VISIBLE_DEVICES does not renumber them.
 * Built apart from the driver (its own directory): only tests that put it
 * on the library path have an NVML.
 *
 * Each call is a line in the ledger (op=nvml_init, nvml_shutdown,
 * nvml_processes), so a test sees whether and when it was asked.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../sim_internal.h"

typedef int nvmlReturn_t;
typedef struct nvml_device *nvmlDevice_t;
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

static int initialised; /* nvmlInit_v2 calls not yet shut down */

static void note(const char *op, const char *format, int a, int b)
{
    char fields[64];
    snprintf(fields, sizeof fields, format, a, b);
    vtsim_nvml_ledger(op, fields);
}

VTSIM_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    initialised++;
    note("nvml_init", "refs=%d", initialised, 0);
    return NVML_SUCCESS;
}

VTSIM_EXPORT nvmlReturn_t nvmlInit(void) { return nvmlInit_v2(); }

VTSIM_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    if (initialised == 0)
        return NVML_ERROR_UNINITIALIZED;
    initialised--;
    note("nvml_shutdown", "refs=%d", initialised, 0);
    return NVML_SUCCESS;
}

static void uuid_text(int physical, char out[41])
{
    unsigned char u[16];
    vtsim_nvml_uuid(physical, u);
    snprintf(out, 41,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

VTSIM_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int d = 0; d < vtsim_nvml_device_count(); d++) {
        char text[41];
        uuid_text(d, text);
        if (!strcmp(text, uuid)) {
            *device = (nvmlDevice_t)(uintptr_t)(d + 1);
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* The processes on a device into infos (entry_size bytes each, pid and
 * used bytes first in every layout). */
static nvmlReturn_t processes(nvmlDevice_t device, unsigned int *count, void *infos,
                              size_t entry_size)
{
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    int physical = (int)(uintptr_t)device - 1;
    if (!count || physical < 0 || physical >= vtsim_nvml_device_count())
        return NVML_ERROR_INVALID_ARGUMENT;
    int pids[256];
    uint64_t bytes[256];
    int n = vtsim_nvml_processes(physical, pids, bytes, 256);
    note("nvml_processes", "dev=%d\tcount=%d", physical, n);
    if ((unsigned)n > *count || (n > 0 && !infos)) {
        *count = (unsigned)n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (int i = 0; i < n; i++) {
        unsigned char *e = (unsigned char *)infos + (size_t)i * entry_size;
        memset(e, 0, entry_size);
        nvmlProcessInfo_v1_t head = { (unsigned)pids[i], bytes[i] };
        memcpy(e, &head, sizeof head);
    }
    *count = (unsigned)n;
    return NVML_SUCCESS;
}

VTSIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                  unsigned int *count,
                                                                  nvmlProcessInfo_t *infos)
{
    return processes(device, count, infos, sizeof *infos);
}

VTSIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device,
                                                                  unsigned int *count,
                                                                  nvmlProcessInfo_t *infos)
{
    return processes(device, count, infos, sizeof *infos);
}

VTSIM_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                               unsigned int *count,
                                                               nvmlProcessInfo_v1_t *infos)
{
    return processes(device, count, infos, sizeof *infos);
}
