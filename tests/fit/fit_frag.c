/* A program whose limit fragmentation sets, for `vramtrace fit --allocator`:
 *     fit_frag VALUE
 * Each step makes an activation (120 MiB x VALUE) and frees it, then a
 * small buffer (50 MiB x VALUE) and a large one (80 MiB x VALUE). Under
 * PyTorch's caching allocator (FIT_CACHING=1: the small model of
 * examples/caching_allocator.c) the small buffer is carved out of the
 * activation's cached segment, whose rest (70 MiB x VALUE) is too small
 * for the large one, and that segment cannot be released while split: the
 * device holds 200 MiB x VALUE where the tensors hold 130. Without it
 * (plain cudaMalloc per tensor, as PyTorch runs with
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1) the trace is the tensors'.
 * Exit status 0 when everything fit, 3 when an allocation did not. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "caching_allocator.h"

#define MIB ((size_t)1 << 20)
#define STEPS 2
#define SITE __attribute__((noinline, noclone))

static int caching;
static size_t value;

static void *must(size_t bytes)
{
    void *p = NULL;
    size_t segment;
    if (caching ? (p = ca_malloc(bytes, &segment)) == NULL
                : cudaMalloc(&p, bytes) != cudaSuccess) {
        fprintf(stderr, "fit_frag: %zu bytes did not fit\n", bytes);
        exit(3);
    }
    return p;
}

static void release(void *p)
{
    if (caching)
        ca_free(p);
    else
        cudaFree(p);
}

SITE static void *parameters(void) { return must(1024 * MIB); }
SITE static void *activation(void) { return must(value * 120 * MIB); }
SITE static void *small_buffer(void) { return must(value * 50 * MIB); }
SITE static void *large_buffer(void) { return must(value * 80 * MIB); }

int main(int argc, char **argv)
{
    if (argc != 2) {
        fputs("usage: fit_frag VALUE\n", stderr);
        return 2;
    }
    value = (size_t)atoll(argv[1]);
    const char *c = getenv("FIT_CACHING");
    caching = c && *c == '1';
    void *params = parameters();
    for (int step = 0; step < STEPS; step++) {
        release(activation());
        void *small = small_buffer();
        void *large = large_buffer();
        release(large);
        release(small);
    }
    release(params);
    return 0;
}
