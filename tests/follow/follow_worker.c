/*
 * A rank of a job that runs long enough to be watched (tests/follow/): it
 * allocates in steps, sleeping between them, and leaks a little each
 * step, so that `vramtrace top` has bytes that change while it looks,
 * a phase that repeats ("step") and growth per step. The simulated
 * driver's ledger is the truth the checks compare with.
 *
 *   rank, device      RANK (default 0); device LOCAL_RANK (default RANK) % count
 *   FOLLOW_DELAY_MS   wait this long before the first allocation (a late rank)
 *   FOLLOW_STEPS      steps (default 8)
 *   FOLLOW_STEP_MS    sleep after each step (default 300)
 *   each step         phase "step": 64 MiB x (rank + 1) of activations,
 *                     allocated and freed; 16 MiB x (rank + 1) kept (the leak)
 *   FOLLOW_FAIL_STEP  at this step, ask for 1 TiB (fails: larger than the GPU)
 *   FOLLOW_HOLD_MS    after the steps, hold everything this long, then exit
 *                     without freeing (the driver takes it back)
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define VRAMTRACE_DYNAMIC
#include <vramtrace/vramtrace.h>

#define MIB ((size_t)1 << 20)

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    long rank = env_long("RANK", 0), local = env_long("LOCAL_RANK", rank);
    long steps = env_long("FOLLOW_STEPS", 8), step_ms = env_long("FOLLOW_STEP_MS", 300);
    long fail_step = env_long("FOLLOW_FAIL_STEP", -1);
    sleep_ms(env_long("FOLLOW_DELAY_MS", 0));
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1 ||
        cudaSetDevice((int)(local % count)) != cudaSuccess) {
        fprintf(stderr, "follow_worker rank %ld: no device\n", rank);
        return 3;
    }
    for (long s = 0; s < steps; s++) {
        void *act = NULL, *leak = NULL, *huge = NULL;
        vramtrace_phase_push("step");
        if (cudaMalloc(&act, 64 * MIB * (size_t)(rank + 1)) != cudaSuccess ||
            cudaMalloc(&leak, 16 * MIB * (size_t)(rank + 1)) != cudaSuccess) {
            fprintf(stderr, "follow_worker rank %ld: allocation failed\n", rank);
            return 4;
        }
        if (s == fail_step && cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess)
            cudaFree(huge);
        cudaFree(act);
        vramtrace_phase_pop();
        sleep_ms(step_ms);
    }
    sleep_ms(env_long("FOLLOW_HOLD_MS", 0));
    return 0;
}
