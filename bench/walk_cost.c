/*
 * The stack walk alone: unw_backtrace (libunwind) against the tracer's own
 * walker (preload/record/stacks/fast_unwind.h), from D frames of recursion, walked
 * N times each, alternately (docs/internals/performance-history.md, section 1, "Own
 * unwinder").
 *
 *   walk_cost --depth D [--size S] [--walks N] [--frames fp|nofp]
 *
 * S: entries asked for (default D + 4, the tracer's margin). fp: frames
 * built with frame pointers (push rbp; mov rsp, rbp), nofp: without, CFA
 * from rsp (GCC only). Prints ns per walk as the thread's CPU time, median
 * of 7 alternating rounds:
 *   walk_cost frames=fp depth=32 size=36 libunwind_ns=412.3 fast_ns=98.1 ratio=4.20
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "fast_unwind.h"

typedef int (*walker_fn)(void **buf, int size);

static volatile int sink;
static walker_fn walker;
static int size;
static long walks;
static double ns_per_walk;

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static __attribute__((noinline)) void walk_loop(void)
{
    void *buf[512];
    for (int i = 0; i < 1000; i++)
        sink += walker(buf, size);
    uint64_t t0 = thread_cpu_ns();
    for (long i = 0; i < walks; i++)
        sink += walker(buf, size);
    ns_per_walk = (double)(thread_cpu_ns() - t0) / (double)walks;
}

static __attribute__((noinline)) int descend_fp(int depth)
{
    if (depth <= 1) {
        walk_loop();
        return 1;
    }
    int v = descend_fp(depth - 1);
    sink = v;
    return v + 1;
}

#if defined(__GNUC__) && !defined(__clang__)
#define HAVE_NOFP 1
static __attribute__((noinline, optimize("omit-frame-pointer"))) int descend_nofp(int depth)
{
    if (depth <= 1) {
        walk_loop();
        return 1;
    }
    int v = descend_nofp(depth - 1);
    sink = v;
    return v + 1;
}
#else
#define HAVE_NOFP 0
#endif

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int depth = 32;
    const char *frames = "fp";
    walks = 200000;
    size = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--depth"))
            depth = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--size"))
            size = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--walks"))
            walks = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--frames"))
            frames = argv[i + 1];
    }
    if (size < 0)
        size = depth + 4;
    bool nofp = !strcmp(frames, "nofp");
    if (depth < 1 || size < 1 || size > 512 || walks < 1 || (nofp && !HAVE_NOFP) ||
        (!nofp && strcmp(frames, "fp"))) {
        fprintf(stderr, "usage: %s --depth D [--size S<=512] [--walks N] [--frames fp|nofp (GCC)]\n",
                argv[0]);
        return 2;
    }
#if !VT_HAVE_FAST_UNWIND
    fprintf(stderr, "walk_cost: no fast walker on this architecture\n");
    return 2;
#else
    enum { ROUNDS = 7 };
    double lib[ROUNDS], fast[ROUNDS];
    walker_fn fns[2] = {unw_backtrace, vt_fast_backtrace};
    double *out[2] = {lib, fast};
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < 2; k++) {
            walker = fns[k];
#if HAVE_NOFP
            if (nofp)
                descend_nofp(depth);
            else
#endif
                descend_fp(depth);
            out[k][r] = ns_per_walk;
        }
    qsort(lib, ROUNDS, sizeof lib[0], cmp_double);
    qsort(fast, ROUNDS, sizeof fast[0], cmp_double);
    printf("walk_cost frames=%s depth=%d size=%d libunwind_ns=%.1f fast_ns=%.1f ratio=%.2f\n", frames,
           depth, size, lib[ROUNDS / 2], fast[ROUNDS / 2], lib[ROUNDS / 2] / fast[ROUNDS / 2]);
    return 0;
#endif
}
