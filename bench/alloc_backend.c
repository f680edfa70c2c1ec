/* The two allocation backends of the benchmarks. See alloc_backend.h. */
#define _GNU_SOURCE
#include "alloc_backend.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static CUcontext primary_ctx;

int bench_api_parse(const char *text, enum bench_api *api)
{
    if (!strcmp(text, "cuda"))
        *api = BENCH_API_CUDA;
    else if (!strcmp(text, "malloc"))
        *api = BENCH_API_MALLOC;
    else
        return -1;
    return 0;
}

static void check(CUresult r, const char *what)
{
    if (r != CUDA_SUCCESS) {
        fprintf(stderr, "bench: %s failed: %d\n", what, (int)r);
        exit(1);
    }
}

void bench_backend_init(enum bench_api api)
{
    if (api != BENCH_API_CUDA)
        return;
    CUdevice dev;
    check(cuInit(0), "cuInit");
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    check(cuDevicePrimaryCtxRetain(&primary_ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(primary_ctx), "cuCtxSetCurrent");
}

void bench_backend_thread_init(enum bench_api api)
{
    if (api == BENCH_API_CUDA)
        check(cuCtxSetCurrent(primary_ctx), "cuCtxSetCurrent");
}

__attribute__((noinline)) uint64_t bench_alloc(enum bench_api api, size_t bytes)
{
    if (api == BENCH_API_CUDA) {
        CUdeviceptr p = 0;
        check(cuMemAlloc_v2(&p, bytes), "cuMemAlloc_v2");
        return (uint64_t)p;
    }
    void *p = malloc(bytes);
    if (!p) {
        fprintf(stderr, "bench: malloc(%zu) failed\n", bytes);
        exit(1);
    }
    return (uint64_t)(uintptr_t)p;
}

__attribute__((noinline)) void bench_free(enum bench_api api, uint64_t ptr)
{
    if (api == BENCH_API_CUDA)
        check(cuMemFree_v2((CUdeviceptr)ptr), "cuMemFree_v2");
    else
        free((void *)(uintptr_t)ptr);
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
