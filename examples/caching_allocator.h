/*
 * A small model of PyTorch's native CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp), enough to reproduce how its
 * out-of-memory failures look from the driver:
 *
 *   - tensors live inside segments obtained with cudaMalloc; the driver
 *     sees only segments: 2 MiB for requests <= 1 MiB (small pool), 20 MiB
 *     for requests < 10 MiB, else the request rounded up to 2 MiB;
 *   - a request is served from the smallest cached free block that fits
 *     (best fit); a block is split when the remainder is worth keeping
 *     (small pool: >= 512 B, large pool: > 1 MiB); freed blocks merge with
 *     free neighbours but stay cached: cudaFree is not called;
 *   - when cudaMalloc fails, every cached segment that is entirely free
 *     ("unsplit") is released with cudaFree and cudaMalloc is retried once;
 *     if that fails too, the allocation raises an out-of-memory error.
 *
 * Single-threaded, one stream, no expandable segments, no max_split_size.
 */
#ifndef EXAMPLE_CACHING_ALLOCATOR_H
#define EXAMPLE_CACHING_ALLOCATOR_H

#include <stddef.h>

#define CA_MIB ((size_t)1 << 20)

struct ca_stats {
    size_t allocated;     /* bytes of live tensors (rounded sizes) */
    size_t reserved;      /* bytes of segments held from the driver */
    size_t segments;
    size_t released;      /* bytes given back by the flush of the last failure */
};

/* NULL when the device is out of memory even after the flush;
 * *segment_size is then the segment that could not be obtained. */
void *ca_malloc(size_t bytes, size_t *segment_size);
void ca_free(void *p);
void ca_stats(struct ca_stats *out);

#endif
