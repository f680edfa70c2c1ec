/* Shared by the golden clients: what the checker needs to tie the driver's
 * ledger to the program's own structure. Each client prints facts the
 * ledger cannot know (which function made an allocation, where a phase
 * began) as plain lines on stdout; golden_check.py reads them. */
#ifndef VT_GOLDEN_CLIENT_H
#define VT_GOLDEN_CLIENT_H

#include <cuda.h>
#include <stdio.h>

#include "client_util.h"

#define MIB ((size_t)1 << 20)

/* Functions whose names the report must show: never inlined, cloned or
 * turned into a tail call (the build adds -fno-optimize-sibling-calls). */
#if defined(__clang__) /* clang never clones functions and has no noclone */
#define GOLD_SITE __attribute__((noinline))
#else
#define GOLD_SITE __attribute__((noinline, noclone))
#endif

/* "alloc FUNCTION ADDRESS": this allocation was made by FUNCTION. */
static inline void gold_note_alloc(const char *function, CUdeviceptr p)
{
    printf("alloc %s 0x%llx\n", function, (unsigned long long)p);
    fflush(stdout);
}

/* The primary context of device 0, current on this thread. */
static inline void gold_start(void)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
}

static inline void gold_stop(void)
{
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
}

#endif
