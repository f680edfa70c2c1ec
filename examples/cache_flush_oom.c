/*
 * Example 2: "Tried to allocate 32.00 MiB. GPU 0 has a total capacity of
 * 23.52 GiB of which 28.25 MiB is free."
 *
 * The classic PyTorch report, reproduced: a training job on a 23.52 GiB
 * GPU shared with two other processes (3.80 GiB and 11.44 GiB), its
 * tensors managed by a small model of PyTorch's caching allocator
 * (caching_allocator.c). Step 1 caches the activation segments; step 2,
 * with a longer batch, reuses them (split), and its logits need a new
 * 32 MiB segment. cudaMalloc fails; the allocator releases the one unsplit
 * cached segment (20 MiB), retries, and fails again with 28.25 MiB free.
 *
 * Is it fragmentation? No: the device memory is held by this process
 * (7.88 GiB of segments, 24 MiB of them cached but unused inside split
 * segments) and, mostly, by the two other processes. vramtrace says so.
 *
 * Run (starts the two other processes, untraced, then this one traced):
 *     examples/shared_gpu_oom.sh
 */
#define _GNU_SOURCE  /* example_phases.h: syscall, O_CLOEXEC */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "caching_allocator.h"
#include "example_phases.h"

#define LAYERS 12
#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB_D (1024.0 * 1024.0)

/* The model: weights, gradients and AdamW's two states, 38 tensors of
 * 50 MiB each; a 168 MiB embedding; 40 small bias tensors of 256 KiB. */
static void *params[38], *grads[38], *exp_avg[38], *exp_avg_sq[38];
static void *embedding, *biases[40];
static void *activations[LAYERS];

static void *tensor(size_t bytes)
{
    size_t segment = 0;
    void *p = ca_malloc(bytes, &segment);
    if (p)
        return p;
    size_t free_bytes = 0, total_bytes = 0;
    struct ca_stats st;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    ca_stats(&st);
    /* PyTorch's message, with what this allocator knows. */
    fprintf(stderr,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f MiB. GPU 0 has a "
            "total capacity of %.2f GiB of which %.2f MiB is free. Of the allocated memory "
            "%.2f GiB is allocated by PyTorch, and %.2f MiB is reserved by PyTorch but "
            "unallocated. (the flush before the retry released %.2f MiB)\n",
            (double)segment / MIB_D, (double)total_bytes / GIB, (double)free_bytes / MIB_D,
            (double)st.allocated / GIB, (double)(st.reserved - st.allocated) / MIB_D,
            (double)st.released / MIB_D);
    /* Like a Python process dying of the exception: nothing is freed. */
    exit(1);
}

static void build_model(void)
{
    for (int i = 0; i < 38; i++)
        params[i] = tensor(50 * CA_MIB);
    embedding = tensor(168 * CA_MIB);
    for (int i = 0; i < 40; i++)
        biases[i] = tensor(256 * 1024);
    for (int i = 0; i < 38; i++) {
        grads[i] = tensor(50 * CA_MIB);
        exp_avg[i] = tensor(50 * CA_MIB);
        exp_avg_sq[i] = tensor(50 * CA_MIB);
    }
}

/* Attention scores: a short-lived 9 MiB tensor (a 20 MiB segment). */
static void attention(void)
{
    void *scores = tensor(9 * CA_MIB);
    ca_free(scores);
}

/* Step 1: 24 MiB of activations kept per layer, freed by backward: twelve
 * 24 MiB segments stay cached. */
static void step_short_batch(void)
{
    range_push("forward");
    for (int l = 0; l < LAYERS; l++) {
        activations[l] = tensor(24 * CA_MIB);
        attention();
    }
    range_pop();
    range_push("backward");
    for (int l = LAYERS - 1; l >= 0; l--)
        ca_free(activations[l]);
    range_pop();
}

/* Step 2, a longer batch: 22 MiB per layer reuse the cached 24 MiB
 * segments, split (2 MiB left free in each: "reserved but unallocated");
 * the attention scores reuse their cached 20 MiB segment. The 30.5 MiB
 * logits fit in no cached block and need a new 32 MiB segment. */
static void step_long_batch(void)
{
    range_push("forward");
    for (int l = 0; l < LAYERS; l++) {
        activations[l] = tensor(22 * CA_MIB);
        attention();
    }
    void *logits = tensor(30 * CA_MIB + CA_MIB / 2);
    ca_free(logits);
    range_pop();
}

int main(void)
{
    if (cudaSetDevice(0) != cudaSuccess) {
        fprintf(stderr, "cache_flush_oom: no CUDA device\n");
        return 1;
    }
    build_model();
    step_short_batch();
    step_long_batch();
    printf("cache_flush_oom: both steps fit (the GPU was not shared?)\n");
    return 0;
}
