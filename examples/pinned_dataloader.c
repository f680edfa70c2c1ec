/*
 * Example 4: a data loader with pinned host memory.
 *
 * An image-classification job (DataLoader(pin_memory=True)): a loader thread
 * ("pin_memory", as PyTorch's pin-memory thread) copies each batch of 256
 * 224x224 RGB float images (147 MiB) into page-locked host memory
 * (cudaHostAlloc); the training loop copies it to the GPU, trains, and
 * frees the device copy. The GPU stays half used (a 12 GiB model and
 * optimizer on a 24 GiB device), but the training loop keeps a reference to
 * every pinned batch (a `history.append(batch)` left in for debugging), so
 * page-locked host memory grows by 147 MiB a step: the machine, not the
 * GPU, is what this job will exhaust. The report shows the pinned-host
 * ledger beside the device.
 *
 * The loader and the loop hand batches over one at a time (a queue of one),
 * so the run is the same every time.
 *
 * Run:  vramtrace run -- build/examples/pinned_dataloader [--steps N]
 */
#define _GNU_SOURCE  /* pthread_setname_np; example_phases.h */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_phases.h"

#define MIB ((size_t)1 << 20)
#define BATCH_BYTES ((size_t)256 * 3 * 224 * 224 * 4)  /* 147 MiB */
#define MAX_STEPS 64

static void *slot;  /* the queue of one between loader and loop */
static int steps = 24;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static void check(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "pinned_dataloader: %s: %s\n", what, cudaGetErrorString(err));
        exit(1);
    }
}

static void *pin_batch(void)
{
    void *host = NULL;
    check(cudaHostAlloc(&host, BATCH_BYTES, cudaHostAllocDefault), "cudaHostAlloc");
    memset(host, 0, 4096);  /* the collate function writes the batch */
    return host;
}

static void *pin_memory_loop(void *arg)
{
    (void)arg;
    /* Named by itself, before its first allocation: the tracer records a
     * thread's name with its first event. */
    pthread_setname_np(pthread_self(), "pin_memory");
    for (int i = 0; i < steps; i++) {
        void *batch = pin_batch();
        pthread_mutex_lock(&lock);
        while (slot)
            pthread_cond_wait(&changed, &lock);
        slot = batch;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *next_batch(void)
{
    pthread_mutex_lock(&lock);
    while (!slot)
        pthread_cond_wait(&changed, &lock);
    void *batch = slot;
    slot = NULL;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return batch;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--steps"))
        steps = atoi(argv[2]);
    if (steps < 1 || steps > MAX_STEPS || (argc != 1 && argc != 3)) {
        fprintf(stderr, "usage: %s [--steps 1..%d]\n", argv[0], MAX_STEPS);
        return 2;
    }
    check(cudaSetDevice(0), "cudaSetDevice");

    /* The model, its gradients and AdamW's states: 12 GiB of 24. */
    void *model[4];
    range_push("setup");
    for (int i = 0; i < 4; i++)
        check(cudaMalloc(&model[i], 3072 * MIB), "cudaMalloc(model)");
    range_pop();

    pthread_t loader;
    pthread_create(&loader, NULL, pin_memory_loop, NULL);

    void *history[MAX_STEPS];
    range_push("train");
    for (int s = 0; s < steps; s++) {
        void *batch = next_batch();
        void *on_device, *activations;
        check(cudaMalloc(&on_device, BATCH_BYTES), "cudaMalloc(batch)");      /* .cuda(non_blocking=True) */
        check(cudaMalloc(&activations, 1536 * MIB), "cudaMalloc(activations)");
        cudaFree(activations);
        cudaFree(on_device);
        history[s] = batch;  /* the bug: the pinned batch stays referenced */
    }
    range_pop();
    pthread_join(loader, NULL);

    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    printf("pinned_dataloader: %d steps; device %.1f of %.1f GiB used; %.2f GiB of pinned host memory held\n",
           steps, (double)(total_bytes - free_bytes) / (1024.0 * MIB), (double)total_bytes / (1024.0 * MIB),
           (double)steps * (double)BATCH_BYTES / (1024.0 * MIB));
    for (int s = 0; s < steps; s++)
        cudaFreeHost(history[s]);
    for (int i = 0; i < 4; i++)
        cudaFree(model[i]);
    return 0;
}
