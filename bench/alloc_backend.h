/*
 * One allocate/free interface over the two things the benchmarks compare:
 * device memory through the (simulated) CUDA driver, which vramtrace
 * records, and host malloc/free, which heaptrack records. The workload
 * programs are written once against it, so both tracers see the same
 * program shape (same call stacks, sizes and order of events).
 */
#ifndef VRAMTRACE_BENCH_ALLOC_BACKEND_H
#define VRAMTRACE_BENCH_ALLOC_BACKEND_H

#include <stddef.h>
#include <stdint.h>

enum bench_api { BENCH_API_CUDA, BENCH_API_MALLOC };

/* Parses "cuda" or "malloc"; -1 if neither. */
int bench_api_parse(const char *text, enum bench_api *api);

/* Makes the backend usable on the calling thread (cuInit + the primary
 * context of device 0 for CUDA). Exits with a message on failure. */
void bench_backend_init(enum bench_api api);

/* A thread other than the first one calls this before allocating. */
void bench_backend_thread_init(enum bench_api api);

/* Never inlined: each is one frame of the recorded stacks, like the
 * allocator entry of a real framework. Exit on failure. */
uint64_t bench_alloc(enum bench_api api, size_t bytes);
void bench_free(enum bench_api api, uint64_t ptr);

/* Monotonic nanoseconds. */
uint64_t bench_now_ns(void);

#endif
