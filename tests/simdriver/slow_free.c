/*
 * Preloaded AFTER libvramtrace.so in the slow-free scenario: a cuMemFree_v2
 * called by a thread named "rel-slow" waits REL_SLOW_FREE_MS milliseconds
 * before the simulated driver frees - a free that stays in the driver, as
 * a real cuMemFree waiting for a busy device does. The tracer's exported
 * wrapper calls the next definition after itself, which is this one.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* Exported: the project builds with -fvisibility=hidden. */
__attribute__((visibility("default"))) CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    CUresult (*next)(CUdeviceptr) = (CUresult(*)(CUdeviceptr))dlsym(RTLD_NEXT, "cuMemFree_v2");
    char name[17] = {0};
    const char *ms = getenv("REL_SLOW_FREE_MS");
    if (ms && prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && !strcmp(name, "rel-slow")) {
        long n = atol(ms);
        struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    return next ? next(dptr) : CUDA_ERROR_NOT_INITIALIZED;
}
