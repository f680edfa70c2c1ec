/*
 * Benchmark 1: cost of one intercepted event.
 *
 *   event_cost --api cuda|malloc --pairs N --depth D [--size BYTES]
 *              [--sizes K]
 *
 * Recurses D frames deep through a noinline function, then makes N
 * allocate/free pairs there, and prints the loop's time per pair, as the
 * calling thread's CPU time and as wall time:
 *   event_cost api=cuda depth=32 pairs=200000 sys_ns_per_pair=3.1 minflt=12 cpu_ns_per_pair=398.2 ns_per_pair=412.7
 * (CPU time leaves out the time the thread waited for a core: on a busy
 * machine it is the steadier figure; a tracer's other threads are not in it.)
 * sys_ns_per_pair and minflt are the loop's system (kernel) part of that
 * CPU and its minor page faults, the calling thread's own
 * (getrusage(RUSAGE_THREAD)).
 * Run untraced, and under a tracer, the difference is the tracer's cost
 * (scripts/bench.sh does the arithmetic).
 *
 * --sizes K cycles through K sizes (BYTES, 2*BYTES, ... K*BYTES) instead
 * of one (bench/whole_process.py --pattern sizes: docs/internals/PERFORMANCE.md).
 *
 * --hook-lookups 1 (cuda only, untraced) adds the driver queries that
 * vramtrace's hooks make around each pair today (one
 * cuPointerGetAttribute(DEVICE_ORDINAL) after the allocation; DEVICE_ORDINAL
 * and IS_MANAGED before the free, preload/hooks/record_actions.c), so the
 * tracer's cost splits into "driver queries" and "recorder". 1000 pairs run first, untimed, so
 * that one-time work (a tracer's start, a driver's first call) is not
 * counted.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "alloc_backend.h"

struct run {
    enum bench_api api;
    long pairs;
    size_t size;
    long sizes; /* how many different sizes, cycled */
    long next;  /* the pair's index into them */
    int hook_lookups;
    double ns_per_pair;
    double cpu_ns_per_pair; /* this thread's CPU time: robust to other load */
    double sys_ns_per_pair; /* of it, in the kernel */
    long minflt;            /* this thread's minor page faults in the loop */
};

static void thread_usage(uint64_t *sys_ns, long *minflt)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    *sys_ns = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
    *minflt = ru.ru_minflt;
}

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keeps the compiler from folding the recursion into a loop or a tail
 * call: something observable happens after every return. */
static volatile int depth_sink;

static void one_pair(struct run *r)
{
    size_t size = r->size * (size_t)(1 + r->next);
    if (++r->next == r->sizes)
        r->next = 0;
    uint64_t p = bench_alloc(r->api, size);
    if (r->hook_lookups) {
        int ordinal = -1;
        unsigned managed = 0;
        cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
        cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p);
        cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, (CUdeviceptr)p);
    }
    bench_free(r->api, p);
}

static __attribute__((noinline)) void alloc_free_loop(struct run *r)
{
    for (long i = 0; i < 1000; i++)
        one_pair(r);
    uint64_t s0, s1;
    long f0, f1;
    thread_usage(&s0, &f0);
    uint64_t c0 = thread_cpu_ns();
    uint64_t t0 = bench_now_ns();
    for (long i = 0; i < r->pairs; i++)
        one_pair(r);
    uint64_t t1 = bench_now_ns();
    uint64_t c1 = thread_cpu_ns();
    thread_usage(&s1, &f1);
    r->sys_ns_per_pair = (double)(s1 - s0) / (double)r->pairs;
    r->minflt = f1 - f0;
    r->ns_per_pair = (double)(t1 - t0) / (double)r->pairs;
    r->cpu_ns_per_pair = (double)(c1 - c0) / (double)r->pairs;
}

static __attribute__((noinline)) int descend(int depth, struct run *r)
{
    if (depth <= 1) {
        alloc_free_loop(r);
        return 1;
    }
    int v = descend(depth - 1, r);
    depth_sink = v;
    __asm__ volatile("" ::: "memory");
    return v + 1;
}

static void usage(const char *argv0)
{
    fprintf(stderr, "usage: %s --api cuda|malloc --pairs N --depth D [--size BYTES] [--sizes K] "
                    "[--hook-lookups 0|1]\n", argv0);
    exit(2);
}

int main(int argc, char **argv)
{
    struct run r = {.api = BENCH_API_CUDA, .pairs = 100000, .size = 1 << 20, .sizes = 1};
    int depth = 8;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage(argv[0]);
        if (!strcmp(argv[i], "--api")) {
            if (bench_api_parse(argv[++i], &r.api))
                usage(argv[0]);
        } else if (!strcmp(argv[i], "--pairs"))
            r.pairs = atol(argv[++i]);
        else if (!strcmp(argv[i], "--depth"))
            depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hook-lookups"))
            r.hook_lookups = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sizes"))
            r.sizes = atol(argv[++i]);
        else if (!strcmp(argv[i], "--size"))
            r.size = (size_t)atol(argv[++i]);
        else
            usage(argv[0]);
    }
    if (r.pairs <= 0 || depth <= 0 || r.size == 0 || r.sizes <= 0 ||
        (r.hook_lookups && r.api != BENCH_API_CUDA))
        usage(argv[0]);
    bench_backend_init(r.api);
    descend(depth, &r);
    /* ns_per_pair (wall) stays last: scripts parse it with .*ns_per_pair= */
    printf("event_cost api=%s depth=%d pairs=%ld sys_ns_per_pair=%.1f minflt=%ld "
           "cpu_ns_per_pair=%.1f ns_per_pair=%.1f\n",
           r.api == BENCH_API_CUDA ? "cuda" : "malloc", depth, r.pairs, r.sys_ns_per_pair,
           r.minflt, r.cpu_ns_per_pair,
           r.ns_per_pair);
    return 0;
}
