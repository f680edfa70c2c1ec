/* 16 threads allocating and freeing at once through the exported names. */
#include <cuda.h>
#include <pthread.h>

#include "client_util.h"

#define THREADS 16
#define ROUNDS 50

static CUcontext ctx;

static void *worker(void *arg)
{
    size_t base = (size_t)(uintptr_t)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (int i = 0; i < ROUNDS; i++) {
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAlloc(&p, (base + 1) * 4096 + (size_t)i * 512));
        CHECK_CU(cuMemFree(p));
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)i) == 0);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    return 0;
}
