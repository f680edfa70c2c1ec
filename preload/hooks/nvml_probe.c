/*
 * This process's device memory on one device as NVML, the management
 * library, counts it (what nvidia-smi shows per process): the one figure of
 * what a context costs that needs no current context, asked where the drop
 * of the driver's free memory could not be measured (context_size.c) -
 * typically a process's first context on a device, the stray context a rank
 * leaves on another rank's GPU.
 *
 * NVML is never linked: libnvidia-ml.so.1 is opened where it is present
 * (once; absent, nothing more is tried) through the real dlopen, so the
 * program's own dlopen/dlsym hooks see nothing. Each query is a balanced
 * nvmlInit_v2 / nvmlShutdown (NVML counts them: a program that uses NVML
 * itself keeps its own initialisation), with the recursion guard set.
 * The device is found by its UUID, not its ordinal: NVML numbers every
 * GPU of the machine, CUDA only those CUDA_VISIBLE_DEVICES shows.
 * No answer - no NVML, another pid namespace (NVML lists the host's pids),
 * no permission (NVML_VALUE_NOT_AVAILABLE) - is 0: "not measured".
 */
#include "hooks_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

/* The few NVML declarations used (nvml.h is not a build dependency). */
typedef int vt_nvml_return;
typedef struct vt_nvml_device *vt_nvml_device;
#define VT_NVML_SUCCESS 0
#define VT_NVML_VALUE_NOT_AVAILABLE (~0ULL)
struct vt_nvml_process_v1 { /* nvmlProcessInfo_v1_t */
    unsigned int pid;
    unsigned long long used_gpu_memory;
};
struct vt_nvml_process_v2 { /* nvmlProcessInfo_v2_t / nvmlProcessInfo_t (v3) */
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id, compute_instance_id;
};
typedef vt_nvml_return (*vt_nvml_init_fn)(void);
typedef vt_nvml_return (*vt_nvml_by_uuid_fn)(const char *uuid, vt_nvml_device *dev);
typedef vt_nvml_return (*vt_nvml_procs_fn)(vt_nvml_device dev, unsigned int *count, void *infos);

/* Processes asked for at once: a GPU serves a few compute processes. */
#define VT_NVML_PROCS_MAX 64

static struct {
    vt_nvml_init_fn init, shutdown;
    vt_nvml_by_uuid_fn by_uuid;
    vt_nvml_procs_fn procs;
    size_t entry_size; /* of the procs function's struct */
} nvml;
static pthread_once_t nvml_once = PTHREAD_ONCE_INIT;

static void nvml_open(void)
{
    void *lib = vt_real_dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return;
    nvml.init = (vt_nvml_init_fn)vt_real_dlsym(lib, "nvmlInit_v2");
    nvml.shutdown = (vt_nvml_init_fn)vt_real_dlsym(lib, "nvmlShutdown");
    nvml.by_uuid = (vt_nvml_by_uuid_fn)vt_real_dlsym(lib, "nvmlDeviceGetHandleByUUID");
    static const char *const v2_names[] = { "nvmlDeviceGetComputeRunningProcesses_v3",
                                            "nvmlDeviceGetComputeRunningProcesses_v2" };
    for (size_t i = 0; i < 2 && !nvml.procs; i++) {
        nvml.procs = (vt_nvml_procs_fn)vt_real_dlsym(lib, v2_names[i]);
        nvml.entry_size = sizeof(struct vt_nvml_process_v2);
    }
    if (!nvml.procs) {
        nvml.procs = (vt_nvml_procs_fn)vt_real_dlsym(lib, "nvmlDeviceGetComputeRunningProcesses");
        nvml.entry_size = sizeof(struct vt_nvml_process_v1);
    }
    if (!nvml.init || !nvml.shutdown || !nvml.by_uuid || !nvml.procs)
        nvml.init = NULL; /* the library is left loaded: unloading it could
                           * pull it from under a program that uses it */
}

/* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as NVML names a device. */
static void uuid_text(const uint8_t u[16], char out[41])
{
    snprintf(out, 41,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

/* Bytes of pid in the list the procs function filled, + 1; 0: not in it. */
static uint64_t used_of(const unsigned char *infos, unsigned int count, unsigned int pid)
{
    for (unsigned int i = 0; i < count; i++) {
        const unsigned char *e = infos + i * nvml.entry_size;
        /* pid and used_gpu_memory lead both layouts */
        const struct vt_nvml_process_v1 *p = (const void *)e;
        if (p->pid == pid && p->used_gpu_memory != VT_NVML_VALUE_NOT_AVAILABLE)
            return p->used_gpu_memory + 1;
    }
    return 0;
}

uint64_t vt_nvml_process_used1(CUdevice dev)
{
    uint8_t uuid[16];
    char name[41];
    pthread_once(&nvml_once, nvml_open);
    if (!nvml.init || !vt_device_uuid(dev, uuid))
        return 0;
    uuid_text(uuid, name);
    _Alignas(8) unsigned char infos[VT_NVML_PROCS_MAX * sizeof(struct vt_nvml_process_v2)];
    unsigned int count = VT_NVML_PROCS_MAX;
    uint64_t used1 = 0;
    vt_in_tracer++;
    if (nvml.init() == VT_NVML_SUCCESS) {
        vt_nvml_device handle = NULL;
        if (nvml.by_uuid(name, &handle) == VT_NVML_SUCCESS &&
            nvml.procs(handle, &count, infos) == VT_NVML_SUCCESS)
            used1 = used_of(infos, count <= VT_NVML_PROCS_MAX ? count : 0, (unsigned)getpid());
        nvml.shutdown();
    }
    vt_in_tracer--;
    return used1;
}
