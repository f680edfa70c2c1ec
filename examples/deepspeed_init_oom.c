/*
 * Example 3: DeepSpeed initialisation runs out of memory.
 *
 *   "CUDA out of memory. Tried to allocate 6.93 GiB (GPU 0; 31.50 GiB total
 *    capacity; 24.26 GiB already allocated; 6.80 GiB free)"
 *
 * A 3.7-billion-parameter model on a 31.50 GiB GPU. Before the failure:
 *   - from_pretrained: the fp16 weights, 32 layers (6.93 GiB);
 *   - deepspeed.initialize with ZeRO stage 1 over two GPUs: this rank's
 *     half of the fp32 master copy and of AdamW's first moment (6.93 GiB
 *     each, in 32 per-layer partitions), three communication
 *     buckets (reduce, all-gather, gradient accumulation: 954 MiB each),
 *     activation-checkpoint buffers (692 MiB) and NCCL's own buffers
 *     (66 MiB, allocated by a library with a private copy of the CUDA
 *     runtime, libprivrt_user.so, as NCCL does).
 * Then flattening the second moment into one contiguous buffer asks for
 * 6.93 GiB at once: one allocation, and it does not fit.
 *
 * Tensors are plain cudaMalloc calls (large tensors get segments of their
 * own size in PyTorch's caching allocator).
 *
 * Run:  VTSIM_MEMORY=31.50GiB vramtrace run -- build/examples/deepspeed_init_oom
 */
#define _GNU_SOURCE  /* example_phases.h: syscall, O_CLOEXEC */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "example_phases.h"

#define LAYERS 32
#define MIB ((size_t)1 << 20)
#define GIB_D (1024.0 * 1024.0 * 1024.0)
#define LAYER_FP16 (221 * MIB + 3 * MIB / 4)  /* 221.75 MiB: 32 of them = 6.93 GiB */
#define BUCKET (954 * MIB)                    /* 5e8 fp16 elements */

/* From libprivrt_user.so: NCCL's stand-in, with its own runtime copy. */
int privrt_user_alloc(size_t size, void **ptr);

static void *weights[LAYERS], *master[LAYERS], *exp_avg[LAYERS];
static void *reduce_bucket, *allgather_bucket, *ipg_buffer, *checkpoint_buffers[4];
static void *nccl_buffers;

static void *tensor(size_t bytes, const char *what)
{
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaSuccess)
        return p;
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    fprintf(stderr,
            "RuntimeError: CUDA out of memory. Tried to allocate %.2f GiB (GPU 0; %.2f GiB total "
            "capacity; %.2f GiB free) for %s\n",
            (double)bytes / GIB_D, (double)total_bytes / GIB_D, (double)free_bytes / GIB_D, what);
    exit(1);
}

static void from_pretrained(void)
{
    range_push("from_pretrained");
    for (int l = 0; l < LAYERS; l++)
        weights[l] = tensor(LAYER_FP16, "weights");
    range_pop();
}

static void create_fp32_partitions(void)
{
    for (int l = 0; l < LAYERS; l++)
        master[l] = tensor(LAYER_FP16, "fp32 master partition");  /* half the layer, fp32 */
}

static void init_optimizer_state(void)
{
    for (int l = 0; l < LAYERS; l++)
        exp_avg[l] = tensor(LAYER_FP16, "exp_avg partition");
}

static void create_buckets(void)
{
    reduce_bucket = tensor(BUCKET, "reduce bucket");
    allgather_bucket = tensor(BUCKET, "allgather bucket");
    ipg_buffer = tensor(BUCKET, "ipg buffer");
    for (int i = 0; i < 4; i++)
        checkpoint_buffers[i] = tensor(173 * MIB, "activation checkpoints");
    if (privrt_user_alloc(66 * MIB, &nccl_buffers) != 0) {
        fprintf(stderr, "deepspeed_init_oom: NCCL buffers did not fit\n");
        exit(1);
    }
}

/* The failing request: the second moment as one flat buffer. */
static void *flatten_dense_tensors_aligned(size_t total)
{
    return tensor(total, "flatten_dense_tensors_aligned (exp_avg_sq)");
}

int main(void)
{
    if (cudaSetDevice(0) != cudaSuccess) {
        fprintf(stderr, "deepspeed_init_oom: no CUDA device\n");
        return 1;
    }
    from_pretrained();
    range_push("deepspeed.initialize");
    create_fp32_partitions();
    init_optimizer_state();
    create_buckets();
    void *exp_avg_sq = flatten_dense_tensors_aligned(LAYERS * LAYER_FP16);
    range_pop();
    printf("deepspeed_init_oom: initialised (is the device larger than 31.50 GiB?) %p\n", exp_avg_sq);
    return 0;
}
