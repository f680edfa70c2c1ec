/*
 * Example 5 (one rank): data-parallel training with uneven memory use.
 * Started by launch_ranks with RANK, LOCAL_RANK and WORLD_SIZE.
 *
 * Every rank holds the same model state (weights, gradients, AdamW's two
 * states: 4 x 1.5 GiB) on GPU LOCAL_RANK % 2, so two ranks share each GPU.
 * Activations differ: each rank's batch has different sequence lengths
 * (2, 2.5, 3 ... GiB), and rank 0 also gathers every rank's outputs to
 * compute evaluation metrics (1.5 GiB more). The ranks meet at barriers, so
 * every rank's step is live at once: each GPU's combined peak is the sum of
 * its two ranks' peaks.
 *
 * EXAMPLE_STEP_MS=N keeps the step live N ms longer (default 0), long
 * enough to watch it with `vramtrace top` (README.md, docs/user/TOP.md).
 */
#define _GNU_SOURCE  /* example_phases.h */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "example_phases.h"

#define MIB ((size_t)1 << 20)
#define GPUS_PER_NODE 2

static pthread_barrier_t *barrier;

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v) {
        fprintf(stderr, "rank_worker: %s is not set (start me with launch_ranks)\n", name);
        exit(2);
    }
    return atoi(v);
}

/* torch.distributed.barrier() */
static void barrier_wait(void)
{
    pthread_barrier_wait(barrier);
}

static void *device_alloc(size_t bytes, int rank)
{
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
        fprintf(stderr, "rank %d: cudaMalloc(%zu MiB): %s\n", rank, bytes / MIB, cudaGetErrorString(err));
        exit(1);
    }
    return p;
}

static void *gather_outputs(int world, int rank)
{
    return device_alloc((size_t)world * 384 * MIB, rank);  /* all_gather of the logits */
}

int main(void)
{
    int rank = env_int("RANK"), local_rank = env_int("LOCAL_RANK"), world = env_int("WORLD_SIZE");
    barrier = mmap(NULL, sizeof *barrier, PROT_READ | PROT_WRITE, MAP_SHARED,
                   env_int("EXAMPLE_BARRIER_FD"), 0);
    if (barrier == MAP_FAILED) {
        perror("rank_worker: barrier");
        return 1;
    }
    if (cudaSetDevice(local_rank % GPUS_PER_NODE) != cudaSuccess) {
        fprintf(stderr, "rank %d: no device %d\n", rank, local_rank % GPUS_PER_NODE);
        return 1;
    }

    void *state[4];
    range_push("setup");
    for (int i = 0; i < 4; i++)
        state[i] = device_alloc(1536 * MIB, rank);
    range_pop();
    barrier_wait();

    range_push("train_step");
    void *activations = device_alloc((size_t)(2048 + 512 * rank) * MIB, rank);
    void *gathered = rank == 0 ? gather_outputs(world, rank) : NULL;
    barrier_wait();  /* every rank's step is live here */
    const char *hold = getenv("EXAMPLE_STEP_MS");
    if (hold && atol(hold) > 0) {
        struct timespec ts = {atol(hold) / 1000, atol(hold) % 1000 * 1000000L};
        nanosleep(&ts, NULL);
    }
    cudaFree(gathered);
    cudaFree(activations);
    range_pop();
    barrier_wait();

    for (int i = 0; i < 4; i++)
        cudaFree(state[i]);
    printf("rank %d: done on GPU %d\n", rank, local_rank % GPUS_PER_NODE);
    return 0;
}
