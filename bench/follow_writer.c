/*
 * The load `vramtrace top` follows in bench/top_cost.py: one rank of a job
 * that allocates at a steady rate, as a training rank does.
 *
 *   follow_writer --rate EVENTS_PER_SECOND --seconds S
 *
 * Every 10 ms it frees and allocates pairs from a live set of 1024 device
 * allocations (512 B .. 64 KiB) until the rate is met, inside a phase
 * "step" that closes every second with 64 KiB more kept (a slow leak: the
 * growth per step top shows). Allocations go through the driver
 * (alloc_backend.c), so with the simulated driver no GPU is needed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VRAMTRACE_DYNAMIC
#include <vramtrace/vramtrace.h>

#include "alloc_backend.h"

#define LIVE_SET 1024
#define TICK_NS 10000000ull
#define LEAKS_MAX 4096

int main(int argc, char **argv)
{
    double rate = 1000, seconds = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rate"))
            rate = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--seconds"))
            seconds = atof(argv[i + 1]);
    }
    bench_backend_init(BENCH_API_CUDA);
    static uint64_t live[LIVE_SET], leaks[LEAKS_MAX];
    unsigned seed = 12345;
    for (int i = 0; i < LIVE_SET; i++)
        live[i] = bench_alloc(BENCH_API_CUDA, 512 + rand_r(&seed) % 65536);
    uint64_t start = bench_now_ns(), done = 0, step_end = start + 1000000000ull;
    size_t nleaks = 0;
    vramtrace_phase_push("step");
    for (uint64_t now = start; now - start < (uint64_t)(seconds * 1e9); now = bench_now_ns()) {
        uint64_t due = (uint64_t)((double)(now - start) * rate / 1e9);
        for (; done + 2 <= due; done += 2) {
            int k = rand_r(&seed) % LIVE_SET;
            bench_free(BENCH_API_CUDA, live[k]);
            live[k] = bench_alloc(BENCH_API_CUDA, 512 + rand_r(&seed) % 65536);
        }
        if (now >= step_end) {
            if (nleaks < LEAKS_MAX)
                leaks[nleaks++] = bench_alloc(BENCH_API_CUDA, 65536);
            vramtrace_phase_pop();
            vramtrace_phase_push("step");
            step_end += 1000000000ull;
        }
        struct timespec ts = {0, (long)TICK_NS};
        nanosleep(&ts, NULL);
    }
    vramtrace_phase_pop();
    for (int i = 0; i < LIVE_SET; i++)
        bench_free(BENCH_API_CUDA, live[i]);
    for (size_t i = 0; i < nleaks; i++)
        bench_free(BENCH_API_CUDA, leaks[i]);
    printf("follow_writer: %llu events\n", (unsigned long long)done + 2 * LIVE_SET);
    return 0;
}
