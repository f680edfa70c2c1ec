/* A worker thread renamed three ways - pthread_setname_np on itself,
 * prctl(PR_SET_NAME), pthread_setname_np from the main thread while it
 * waits - allocating after each: rename_check.py expects each allocation
 * (sized 1, 2, 3 MiB) under the name given just before it. Each rename and allocation follow
 * a burst of allocations under the old name, so that a periodic re-read
 * could not hide a missed rename. */
#include <cuda.h>
#include <pthread.h>
#include <sys/prctl.h>

#include "client_util.h"

#define MIB ((size_t)1 << 20)
#define BURST 300

static CUcontext ctx;
static pthread_barrier_t renamed_by_main, may_rename;

static void alloc_free(size_t bytes)
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc(&p, bytes));
    CHECK_CU(cuMemFree(p));
}

static void burst(void)
{
    for (int i = 0; i < BURST; i++)
        alloc_free(4096);
}

static void *worker(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    burst(); /* under the name it was created with */
    CHECK(pthread_setname_np(pthread_self(), "by-setname") == 0);
    alloc_free(1 * MIB);
    burst();
    CHECK(prctl(PR_SET_NAME, "by-prctl", 0, 0, 0) == 0);
    alloc_free(2 * MIB);
    burst();
    pthread_barrier_wait(&may_rename);
    pthread_barrier_wait(&renamed_by_main);
    alloc_free(3 * MIB);
    return NULL;
}

int main(void)
{
    pthread_t t;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(pthread_barrier_init(&may_rename, NULL, 2) == 0);
    CHECK(pthread_barrier_init(&renamed_by_main, NULL, 2) == 0);
    CHECK(pthread_create(&t, NULL, worker, NULL) == 0);
    pthread_barrier_wait(&may_rename);
    CHECK(pthread_setname_np(t, "by-other") == 0);
    pthread_barrier_wait(&renamed_by_main);
    CHECK(pthread_join(t, NULL) == 0);
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    return 0;
}
