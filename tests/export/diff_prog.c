/* The program `vramtrace diff`'s refactor tests compare with itself
 * (check_diff_refactor.py):
 *     diff_prog STEP_MIB
 * on the simulated GPU, in two phases:
 *   load   the weights, 2 GiB kept (two allocations in one function, so
 *          that a function's sites are told apart by their lines), and a
 *          staging buffer of 2 GiB freed at its end: the process's peak,
 *          4 GiB
 *   step   activations of STEP_MIB, freed at its end: the phase's peak,
 *          2 GiB + STEP_MIB, below the process's
 * Built three times from this one file (tests/export/meson.build), as a
 * refactor leaves a program:
 *   diff_prog          as written
 *   diff_prog_moved    -DDIFF_PROG_MOVED: every line moved down, as by
 *                      comment lines added at the top, and from the
 *                      second allocation of load_weights on a few more, as
 *                      by lines added between its two (#line says so to
 *                      the debug info exactly as added lines would)
 *   diff_prog_renamed  -DDIFF_PROG_RENAMED: load_weights renamed
 *                      fetch_weights, and stage_inputs moved into a file of
 *                      another name, diff_prog_io.c
 * Their allocations are the same, byte for byte. */
#if defined(DIFF_PROG_MOVED)
#line 60
#endif
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#define MIB ((size_t)1 << 20)
#define SITE __attribute__((noinline, noclone))

#if defined(DIFF_PROG_RENAMED)
#define load_weights fetch_weights
#endif

static CUdeviceptr must(size_t bytes)
{
    CUdeviceptr p;
    CUresult rc = cuMemAlloc(&p, bytes);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "diff_prog: %zu bytes did not fit (error %d)\n", bytes, (int)rc);
        exit(3);
    }
    return p;
}

SITE static void load_weights(CUdeviceptr *w)
{
    w[0] = must(1536 * MIB);
#if defined(DIFF_PROG_MOVED)
#line 120
#endif
    w[1] = must(512 * MIB);
}

static CUdeviceptr stage_inputs(void);

SITE static CUdeviceptr activations(size_t mib) { return must(mib * MIB); }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: diff_prog STEP_MIB\n", stderr);
        return 2;
    }
    size_t step_mib = (size_t)atoll(argv[1]);
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 4;
    CUdeviceptr weights[2];
    vramtrace_phase_push("load");
    CUdeviceptr staging = stage_inputs();
    load_weights(weights);
    cuMemFree(staging);
    vramtrace_phase_pop();
    vramtrace_phase_push("step");
    CUdeviceptr act = activations(step_mib);
    cuMemFree(act);
    vramtrace_phase_pop();
    cuMemFree(weights[1]);
    cuMemFree(weights[0]);
    cuDevicePrimaryCtxRelease(0);
    return 0;
}

#if defined(DIFF_PROG_RENAMED)
#line 1 "diff_prog_io.c"
#endif
SITE static CUdeviceptr stage_inputs(void) { return must(2048 * MIB); }
