/*
 * Example 1: a training loop whose evaluation phase peaks above training.
 *
 * The memory behaviour of a transformer fine-tuning job, without kernels:
 *   - parameters allocated once at start;
 *   - AdamW's two optimizer states per parameter, created on the first step;
 *   - forward activations on the main thread, kept for backward;
 *   - backward on a thread named "pt_autograd_0" (as PyTorch names its
 *     backward worker) that frees each layer's activations and allocates its
 *     gradient;
 *   - optimizer step, then gradients released (zero_grad(set_to_none=True));
 *   - every few steps an eval phase with a larger batch and a key/value
 *     cache that grows with every generated token: eval peaks above train.
 * Phases are NVTX ranges (train, forward, backward, optimizer, eval), as
 * PyTorch's torch.cuda.nvtx or DeepSpeed would emit them (example_phases.h);
 * vramtrace picks them up as an NVTX injection library with no code change.
 *
 * Each tensor is one cudaMallocAsync/cudaFreeAsync, as PyTorch does with
 * PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, so the driver sees
 * tensor-level events. Sizes are scaled with --scale (default 1.0: a 24 GiB
 * device peaks around 13 GiB).
 *
 * Run:  vramtrace run -- build/examples/train_eval_phases
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_phases.h"

#define LAYERS 24
#define MIB (1024.0 * 1024.0)

struct model_sizes {
    size_t param;          /* bytes of one layer's parameters */
    size_t train_act;      /* activations kept per layer, training batch */
    size_t eval_act;       /* transient activation per layer, eval batch */
    size_t kv_per_token;   /* key/value cache per layer per generated token */
    int eval_tokens;
};

struct layer {
    void *param;
    void *grad;
    void *exp_avg;     /* AdamW first moment */
    void *exp_avg_sq;  /* AdamW second moment */
    void *act;
};

static struct layer layers[LAYERS];
static struct model_sizes sizes;
static cudaStream_t stream; /* the default stream: NULL */

static void *device_alloc(size_t bytes)
{
    void *p = NULL;
    cudaError_t err = cudaMallocAsync(&p, bytes, stream);
    if (err != cudaSuccess) {
        fprintf(stderr, "train_eval_phases: cudaMallocAsync(%.1f MiB): %s\n",
                (double)bytes / MIB, cudaGetErrorString(err));
        exit(1);
    }
    return p;
}

static void device_free(void **p)
{
    if (*p)
        cudaFreeAsync(*p, stream);
    *p = NULL;
}

static void allocate_parameters(void)
{
    for (int i = 0; i < LAYERS; i++)
        layers[i].param = device_alloc(sizes.param);
}

static void forward_layer(int i)
{
    layers[i].act = device_alloc(sizes.train_act);
}

static void forward(void)
{
    range_push("forward");
    for (int i = 0; i < LAYERS; i++)
        forward_layer(i);
    range_pop();
}

/* --- backward runs on its own thread, like PyTorch's autograd engine --- */

static pthread_mutex_t backward_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t backward_cv = PTHREAD_COND_INITIALIZER;
static enum { IDLE, REQUESTED, DONE, QUIT } backward_state = IDLE;

static void backward_layer(int i)
{
    layers[i].grad = device_alloc(sizes.param);
    device_free(&layers[i].act);
}

static void *autograd_engine(void *arg)
{
    (void)arg;
    /* Named by itself, before its first CUDA call, as PyTorch's engine does:
     * the tracer records a thread's name with its first event. */
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    cudaSetDevice(0);
    pthread_mutex_lock(&backward_lock);
    for (;;) {
        while (backward_state != REQUESTED && backward_state != QUIT)
            pthread_cond_wait(&backward_cv, &backward_lock);
        if (backward_state == QUIT)
            break;
        pthread_mutex_unlock(&backward_lock);

        range_push("backward");
        for (int i = LAYERS - 1; i >= 0; i--)
            backward_layer(i);
        range_pop();

        pthread_mutex_lock(&backward_lock);
        backward_state = DONE;
        pthread_cond_broadcast(&backward_cv);
    }
    pthread_mutex_unlock(&backward_lock);
    return NULL;
}

static void backward(void)
{
    pthread_mutex_lock(&backward_lock);
    backward_state = REQUESTED;
    pthread_cond_broadcast(&backward_cv);
    while (backward_state != DONE)
        pthread_cond_wait(&backward_cv, &backward_lock);
    backward_state = IDLE;
    pthread_mutex_unlock(&backward_lock);
}

static void adamw_init_state(int i)
{
    layers[i].exp_avg = device_alloc(sizes.param);
    layers[i].exp_avg_sq = device_alloc(sizes.param);
}

static void optimizer_step(void)
{
    range_push("optimizer");
    for (int i = 0; i < LAYERS; i++)
        if (!layers[i].exp_avg)
            adamw_init_state(i);
    for (int i = 0; i < LAYERS; i++) /* zero_grad(set_to_none=True) */
        device_free(&layers[i].grad);
    range_pop();
}

static void train_step(void)
{
    range_push("train");
    forward();
    backward();
    optimizer_step();
    range_pop();
}

static void grow_kv_cache(void **cache, int layer_count, int token)
{
    for (int i = 0; i < layer_count; i++)
        cache[i * sizes.eval_tokens + token] = device_alloc(sizes.kv_per_token);
}

static void eval_generate(void)
{
    range_push("eval");
    void **cache = calloc((size_t)LAYERS * (size_t)sizes.eval_tokens, sizeof(void *));
    for (int t = 0; t < sizes.eval_tokens; t++) {
        for (int i = 0; i < LAYERS; i++) { /* no_grad: activations are transient */
            void *act = device_alloc(sizes.eval_act);
            device_free(&act);
        }
        grow_kv_cache(cache, LAYERS, t);
    }
    for (size_t k = 0; k < (size_t)LAYERS * (size_t)sizes.eval_tokens; k++)
        device_free(&cache[k]);
    free(cache);
    range_pop();
}

int main(int argc, char **argv)
{
    double scale = 1.0;
    int steps = 6, eval_every = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scale") && i + 1 < argc)
            scale = atof(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--scale X] [--steps N]\n", argv[0]);
            return 2;
        }
    }
    sizes.param = (size_t)(80 * MIB * scale);
    sizes.train_act = (size_t)(150 * MIB * scale);
    sizes.eval_act = (size_t)(300 * MIB * scale);
    sizes.kv_per_token = (size_t)(16 * MIB * scale);
    sizes.eval_tokens = 16;

    if (cudaSetDevice(0) != cudaSuccess) {
        fprintf(stderr, "train_eval_phases: no CUDA device\n");
        return 1;
    }
    pthread_t engine;
    pthread_create(&engine, NULL, autograd_engine, NULL);

    allocate_parameters();
    for (int step = 1; step <= steps; step++) {
        train_step();
        if (step % eval_every == 0)
            eval_generate();
    }

    pthread_mutex_lock(&backward_lock);
    backward_state = QUIT;
    pthread_cond_broadcast(&backward_cv);
    pthread_mutex_unlock(&backward_lock);
    pthread_join(engine, NULL);

    for (int i = 0; i < LAYERS; i++) {
        device_free(&layers[i].param);
        device_free(&layers[i].exp_avg);
        device_free(&layers[i].exp_avg_sq);
    }
    size_t free_bytes = 0, total_bytes = 0;
    cudaMemGetInfo(&free_bytes, &total_bytes);
    printf("train_eval_phases: %d steps done; device free %.0f MiB of %.0f MiB\n",
           steps, (double)free_bytes / MIB, (double)total_bytes / MIB);
    return 0;
}
