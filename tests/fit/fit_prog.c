/* A parametric training program for `vramtrace fit`'s tests:
 *     fit_prog SCENARIO VALUE
 * makes the allocations of a few training steps (and an evaluation) whose
 * sizes follow known laws of VALUE (the batch), on the simulated GPU:
 *   parameters       constant, at start
 *   optimizer state  constant, made lazily at the end of the first step
 *   library buffer   constant, made at the second step (cuBLAS-like)
 *   activations      linear: LAYERS of VALUE x 8 MiB, per step
 *   scores           quadratic: VALUE^2 x 2 MiB (scenario quadratic, eval)
 *   KV cache         linear, VALUE x 128 MiB, in the phase "eval"
 *                    (scenario eval: it sets the limit)
 *   buckets          activations rounded up to a power of two (scenario
 *                    buckets: no polynomial)
 * Scenario layers: VALUE is the number of layers (each activation 64 MiB,
 * their count per step grows with it), batch 4; no scores.
 * Scenario other allocates from a function of its own only: a different
 * program, as far as fit can tell.
 * Exit status 0 when everything fit, 3 at the first allocation that did
 * not (its size on stderr): the tests find the true largest VALUE by
 * running every value untraced. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#define MIB ((size_t)1 << 20)
#define LAYERS 4
#define STEPS 3
#define SITE __attribute__((noinline, noclone))

static long long value;
static const char *scenario;
static int layers = LAYERS;

static CUdeviceptr must(size_t bytes)
{
    CUdeviceptr p;
    CUresult rc = cuMemAlloc(&p, bytes);
    if (rc != CUDA_SUCCESS) {
        fprintf(stderr, "fit_prog: %zu bytes did not fit (error %d)\n", bytes, (int)rc);
        exit(3);
    }
    return p;
}

static size_t pow2_at_least(size_t n)
{
    size_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

SITE static CUdeviceptr parameters(void) { return must(1024 * MIB); }
SITE static CUdeviceptr optimizer_state(void) { return must(2048 * MIB); }
SITE static CUdeviceptr library_workspace(void) { return must(768 * MIB); }

SITE static CUdeviceptr activation(void)
{
    size_t b = (size_t)(strcmp(scenario, "layers") ? value : 8) * 8 * MIB;
    return must(strcmp(scenario, "buckets") ? b : pow2_at_least(b + 3 * MIB));
}

SITE static CUdeviceptr attention_scores(void) { return must((size_t)(value * value) * 2 * MIB); }
SITE static CUdeviceptr kv_cache(void) { return must((size_t)value * 128 * MIB); }

/* Scenario other: another program, as far as its call sites go. */
SITE static CUdeviceptr other_program(void) { return must((size_t)value * MIB); }

static void train_step(int step, CUdeviceptr *opt, CUdeviceptr *lib)
{
    vramtrace_phase_push("train");
    CUdeviceptr act[1024], scores = 0;
    for (int l = 0; l < layers; l++)
        act[l] = activation();
    if (!strcmp(scenario, "quadratic") || !strcmp(scenario, "eval"))
        scores = attention_scores();
    if (step == 1 && !*lib)
        *lib = library_workspace();
    if (!*opt)
        *opt = optimizer_state(); /* lazily, while the activations live */
    if (scores)
        cuMemFree(scores);
    for (int l = layers; l-- > 0;)
        cuMemFree(act[l]);
    vramtrace_phase_pop();
}

static void evaluate(void)
{
    vramtrace_phase_push("eval");
    CUdeviceptr kv = kv_cache();
    CUdeviceptr act = activation();
    cuMemFree(act);
    cuMemFree(kv);
    vramtrace_phase_pop();
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fputs("usage: fit_prog linear|quadratic|eval|buckets|layers|other VALUE\n", stderr);
        return 2;
    }
    scenario = argv[1];
    value = atoll(argv[2]);
    if (!strcmp(scenario, "layers"))
        layers = value < 1024 ? (int)value : 1024;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 4;
    if (!strcmp(scenario, "other")) {
        cuMemFree(other_program());
        return 0;
    }
    CUdeviceptr params = parameters(), opt = 0, lib = 0;
    for (int step = 0; step < STEPS; step++)
        train_step(step, &opt, &lib);
    if (!strcmp(scenario, "eval"))
        evaluate();
    cuMemFree(lib);
    cuMemFree(opt);
    cuMemFree(params);
    cuDevicePrimaryCtxRelease(0);
    return 0;
}
