/* The OOM verdict's numbers (docs/user/REPORT.md "Allocation failures"), checked
 * by check_oom.py against the simulated driver's ledger.
 *
 *     oom_contexts run HOLD_MIB REQUEST_MIB FLUSH_MIB
 *
 * Creates contexts in every situation the tracer's context-size estimate
 * (preload/hooks/context_size.c) distinguishes, printing for each one
 * "ctx API ADDRESS measurable 0|1": measurable when the call creates a
 * context and the thread's current context is on the same device before it
 * (cuMemGetInfo answers only for the current context's device). Then, on
 * device 1 whose contexts are all measurable, holds HOLD_MIB (in 256 MiB
 * pieces), asks REQUEST_MIB (must fail), frees FLUSH_MIB of its pieces as a
 * caching allocator flushes its cache, and retries once.
 * It also checks that the tracer left its context stack as it was.
 *
 *     oom_contexts hold MIB
 *
 * Another process on device 1 (VTSIM_SHARED): holds MIB, says "held", keeps
 * it until its stdin closes. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_util.h"

#define MIB ((size_t)1 << 20)
#define PIECE_MIB 256

/* Is the context about to be created measurable (see above)? */
static int measurable(CUdevice dev, int primary)
{
    CUdevice current = -1;
    if (cuCtxGetDevice(&current) != CUDA_SUCCESS || current != dev)
        return 0;
    if (primary) {
        unsigned flags;
        int active = 1;
        CHECK_CU(cuDevicePrimaryCtxGetState(dev, &flags, &active));
        return !active;
    }
    return 1;
}

static void note(const char *api, CUcontext c, int m)
{
    printf("ctx %s %p measurable %d\n", api, (void *)c, m);
}

static CUcontext retain(CUdevice dev)
{
    CUcontext c;
    int m = measurable(dev, 1);
    CHECK_CU(cuDevicePrimaryCtxRetain(&c, dev));
    note("cuDevicePrimaryCtxRetain", c, m);
    return c;
}

static CUcontext create(CUdevice dev)
{
    CUcontext c;
    int m = measurable(dev, 0);
    CHECK_CU(cuCtxCreate(&c, NULL, 0, dev));
    note("cuCtxCreate", c, m);
    return c;
}

static int run(size_t hold, size_t request, size_t flush)
{
    CHECK_CU(cuInit(0));
    CUcontext p0 = retain(0);          /* no current context: not measurable */
    CHECK_CU(cuCtxSetCurrent(p0));
    create(0);                         /* current on device 0: measurable */
    retain(0);                         /* exists already: costs nothing */
    CUcontext c1 = create(1);          /* current on device 0: not measurable */
    CUcontext c2 = create(1);          /* current on device 1: measurable */
    CUcontext top;
    CHECK_CU(cuCtxPopCurrent(&top));
    CHECK(top == c2);
    CHECK_CU(cuCtxPopCurrent(&top));
    CHECK(top == c1);
    CHECK_CU(cuCtxDestroy(c1));
    CHECK_CU(cuCtxPushCurrent(c2));
    retain(1);                         /* current on device 1: measurable */
    /* the tracer pushed and popped the primary context to measure it */
    CHECK_CU(cuCtxGetCurrent(&top));
    CHECK(top == c2);
    fflush(stdout);

    size_t n = hold / PIECE_MIB;
    CUdeviceptr *pieces = calloc(n + 1, sizeof *pieces), big = 0;
    CHECK(pieces);
    for (size_t i = 0; i < n; i++)
        CHECK_CU(cuMemAlloc(&pieces[i], PIECE_MIB * MIB));
    CHECK(cuMemAlloc(&big, request * MIB) == CUDA_ERROR_OUT_OF_MEMORY);
    for (size_t i = 0; i < flush / PIECE_MIB && i < n; i++) {
        CHECK_CU(cuMemFree(pieces[n - 1 - i]));
        pieces[n - 1 - i] = 0;
    }
    CUresult retry = cuMemAlloc(&big, request * MIB);
    CHECK(retry == CUDA_ERROR_OUT_OF_MEMORY || retry == CUDA_SUCCESS);
    if (retry == CUDA_SUCCESS)
        CHECK_CU(cuMemFree(big));
    for (size_t i = 0; i < n; i++)
        if (pieces[i])
            CHECK_CU(cuMemFree(pieces[i]));
    free(pieces);
    return 0;
}

static int hold(size_t mib)
{
    CUcontext c;
    CUdeviceptr p;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&c, 1));
    CHECK_CU(cuCtxSetCurrent(c));
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    printf("held\n");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    CHECK_CU(cuMemFree(p));
    CHECK_CU(cuDevicePrimaryCtxRelease(1));
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "run"))
        return run(strtoull(argv[2], NULL, 10), strtoull(argv[3], NULL, 10),
                   strtoull(argv[4], NULL, 10));
    if (argc == 3 && !strcmp(argv[1], "hold"))
        return hold(strtoull(argv[2], NULL, 10));
    fprintf(stderr, "usage: oom_contexts run HOLD REQUEST FLUSH | hold MIB\n");
    return 2;
}
