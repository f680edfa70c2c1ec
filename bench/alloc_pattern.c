/*
 * Benchmark 2 (trace size) and the recorded input of benchmark 3: a
 * workload of many allocation events, the same on both backends.
 *
 *   alloc_pattern --api cuda|malloc --pattern train|random --events N
 *                 [--scale X] [--live K] [--seed S]
 *
 * train  : the shape of examples/train_eval_phases.c (24 layers: parameters
 *          once, AdamW states on the first step, forward activations on the
 *          main thread, backward on a second thread that frees them and
 *          allocates gradients, gradients freed after the optimizer step,
 *          an eval phase with a growing key/value cache every 3rd step),
 *          repeated until N events. Sizes are the example's times --scale
 *          (default 0.001: KiB-sized, so that malloc under heaptrack does
 *          not map gigabytes).
 * random : a flat live set of K (default 4096) allocations; each step frees
 *          a random one and allocates a new one of a random log-uniform size
 *          (512 B .. 1 MiB) from one of 4^6 = 4096 different call stacks
 *          (six levels of four noinline functions, chosen by the random
 *          number) - the worst case for a tracer that deduplicates stacks.
 * Prints "alloc_pattern ... events=E" (E counts allocations and frees).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_backend.h"

#define LAYERS 24
#define EVAL_TOKENS 16
#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

static enum bench_api api;
static long events_wanted;
static long events_done;

static uint64_t device_alloc(size_t bytes)
{
    events_done++;
    return bench_alloc(api, bytes);
}

static void device_free(uint64_t *p)
{
    if (*p) {
        events_done++;
        bench_free(api, *p);
    }
    *p = 0;
}

/* ---------------------------------------------------------------- train */

struct layer {
    uint64_t param, grad, exp_avg, exp_avg_sq, act;
};
static struct layer layers[LAYERS];
static size_t param_bytes, train_act_bytes, eval_act_bytes, kv_bytes;

static __attribute__((noinline)) void forward_layer(int i)
{
    layers[i].act = device_alloc(train_act_bytes);
}

static __attribute__((noinline)) void forward(void)
{
    for (int i = 0; i < LAYERS; i++)
        forward_layer(i);
}

static __attribute__((noinline)) void backward_layer(int i)
{
    layers[i].grad = device_alloc(param_bytes);
    device_free(&layers[i].act);
}

/* Backward runs on its own thread, as PyTorch's autograd engine does: the
 * main thread hands it each step and waits. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static enum { IDLE, REQUESTED, DONE, QUIT } state = IDLE;

static void *autograd_engine(void *arg)
{
    (void)arg;
    bench_backend_thread_init(api);
    pthread_mutex_lock(&lock);
    for (;;) {
        while (state != REQUESTED && state != QUIT)
            pthread_cond_wait(&cv, &lock);
        if (state == QUIT)
            break;
        pthread_mutex_unlock(&lock);
        for (int i = LAYERS - 1; i >= 0; i--)
            backward_layer(i);
        pthread_mutex_lock(&lock);
        state = DONE;
        pthread_cond_broadcast(&cv);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void set_state(int s)
{
    pthread_mutex_lock(&lock);
    state = s;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&lock);
}

static __attribute__((noinline)) void backward(void)
{
    set_state(REQUESTED);
    pthread_mutex_lock(&lock);
    while (state != DONE)
        pthread_cond_wait(&cv, &lock);
    state = IDLE;
    pthread_mutex_unlock(&lock);
}

static __attribute__((noinline)) void optimizer_step(void)
{
    for (int i = 0; i < LAYERS; i++)
        if (!layers[i].exp_avg) {
            layers[i].exp_avg = device_alloc(param_bytes);
            layers[i].exp_avg_sq = device_alloc(param_bytes);
        }
    for (int i = 0; i < LAYERS; i++)
        device_free(&layers[i].grad);
}

static __attribute__((noinline)) void grow_kv_cache(uint64_t *cache, int token)
{
    for (int i = 0; i < LAYERS; i++)
        cache[i * EVAL_TOKENS + token] = device_alloc(kv_bytes);
}

static __attribute__((noinline)) void eval_generate(void)
{
    uint64_t cache[LAYERS * EVAL_TOKENS] = {0};
    for (int t = 0; t < EVAL_TOKENS; t++) {
        for (int i = 0; i < LAYERS; i++) {
            uint64_t act = device_alloc(eval_act_bytes);
            device_free(&act);
        }
        grow_kv_cache(cache, t);
    }
    for (int k = 0; k < LAYERS * EVAL_TOKENS; k++)
        device_free(&cache[k]);
}

static void run_train(double scale)
{
    param_bytes = (size_t)(80 * MIB * scale);
    train_act_bytes = (size_t)(150 * MIB * scale);
    eval_act_bytes = (size_t)(300 * MIB * scale);
    kv_bytes = (size_t)(16 * MIB * scale);
    pthread_t engine;
    pthread_create(&engine, NULL, autograd_engine, NULL);
    pthread_setname_np(engine, "pt_autograd_0");
    for (int i = 0; i < LAYERS; i++)
        layers[i].param = device_alloc(param_bytes);
    for (long step = 1; events_done < events_wanted; step++) {
        forward();
        backward();
        optimizer_step();
        if (step % 3 == 0)
            eval_generate();
    }
    set_state(QUIT);
    pthread_join(engine, NULL);
    for (int i = 0; i < LAYERS; i++) {
        device_free(&layers[i].param);
        device_free(&layers[i].exp_avg);
        device_free(&layers[i].exp_avg_sq);
    }
}

/* --------------------------------------------------------------- random */

static uint64_t rng_state;

static uint64_t next_random(void)
{ /* splitmix64: fast, and the same sequence on every run */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static volatile int frame_sink;
#define STACK_LEVELS 6

static uint64_t call_path(uint64_t bits, int level, size_t bytes);

/* Four distinct frames per level: the path through them spells the two
 * bits of the random number that choose it. */
#define PATH_FN(n)                                                               \
    static __attribute__((noinline)) uint64_t path_##n(uint64_t bits, int level, \
                                                       size_t bytes)             \
    {                                                                            \
        uint64_t p = call_path(bits >> 2, level + 1, bytes);                     \
        frame_sink = n;                                                          \
        __asm__ volatile("" ::: "memory");                                       \
        return p;                                                                \
    }
PATH_FN(0)
PATH_FN(1)
PATH_FN(2)
PATH_FN(3)

static uint64_t call_path(uint64_t bits, int level, size_t bytes)
{
    if (level == STACK_LEVELS)
        return device_alloc(bytes);
    switch (bits & 3) {
    case 0: return path_0(bits, level, bytes);
    case 1: return path_1(bits, level, bytes);
    case 2: return path_2(bits, level, bytes);
    default: return path_3(bits, level, bytes);
    }
}

static size_t random_size(uint64_t r)
{ /* log-uniform 512 B .. 1 MiB, 512-byte granules */
    unsigned shift = 9 + (unsigned)(r % 12);
    size_t bytes = ((size_t)1 << shift) + (size_t)((r >> 8) % ((size_t)1 << shift));
    return bytes & ~(size_t)511;
}

static void run_random(long live)
{
    uint64_t *slots = calloc((size_t)live, sizeof *slots);
    if (!slots) {
        perror("alloc_pattern");
        exit(1);
    }
    for (long i = 0; i < live && events_done < events_wanted; i++) {
        uint64_t r = next_random();
        slots[i] = call_path(r >> 20, 0, random_size(r));
    }
    while (events_done + 2 <= events_wanted - live) {
        uint64_t r = next_random();
        long k = (long)(r % (uint64_t)live);
        device_free(&slots[k]);
        slots[k] = call_path(r >> 20, 0, random_size(r >> 4));
    }
    for (long i = 0; i < live; i++)
        device_free(&slots[i]);
    free(slots);
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --api cuda|malloc --pattern train|random --events N\n"
            "          [--scale X] [--live K] [--seed S]\n",
            argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *pattern = "train";
    double scale = 0.001;
    long live = 4096;
    rng_state = 42;
    events_wanted = 1000000;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage(argv[0]);
        if (!strcmp(argv[i], "--api")) {
            if (bench_api_parse(argv[++i], &api))
                usage(argv[0]);
        } else if (!strcmp(argv[i], "--pattern"))
            pattern = argv[++i];
        else if (!strcmp(argv[i], "--events"))
            events_wanted = atol(argv[++i]);
        else if (!strcmp(argv[i], "--scale"))
            scale = atof(argv[++i]);
        else if (!strcmp(argv[i], "--live"))
            live = atol(argv[++i]);
        else if (!strcmp(argv[i], "--seed"))
            rng_state = (uint64_t)atoll(argv[++i]);
        else
            usage(argv[0]);
    }
    if (events_wanted <= 0 || live <= 0 || scale <= 0)
        usage(argv[0]);
    bench_backend_init(api);
    uint64_t t0 = bench_now_ns();
    if (!strcmp(pattern, "train"))
        run_train(scale);
    else if (!strcmp(pattern, "random"))
        run_random(live);
    else
        usage(argv[0]);
    uint64_t t1 = bench_now_ns();
    printf("alloc_pattern api=%s pattern=%s events=%ld ns_per_event=%.1f\n",
           api == BENCH_API_CUDA ? "cuda" : "malloc", pattern, events_done,
           (double)(t1 - t0) / (double)events_done);
    return 0;
}
