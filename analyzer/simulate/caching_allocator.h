/*
 * A model of PyTorch's native CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator) for one
 * device: the same rounding, the small (<= 1 MiB) and large pools, the
 * same segment sizes, best fit over free blocks ordered by (stream, size,
 * address), the split rules, max_split_size and max_non_split_rounding,
 * roundup_power2_divisions, garbage_collection_threshold (with a memory
 * fraction), expandable segments (2 MiB / 20 MiB pages mapped at the low
 * end of one address range per stream and pool), free-neighbour merging,
 * and on a failed cudaMalloc: release oversize cached blocks (with
 * max_split_size), then release every unsplit cached segment and retry
 * once, then out of memory.
 *
 * Device memory is `capacity` bytes (0: unlimited) used only by this
 * process: cudaMalloc fails when reserved + segment > capacity.
 *
 * Not modelled: CUDA graphs' private pools, record_stream events (a block
 * is reusable when freed), IPC, several devices at once, the real
 * addresses cudaMalloc returns (segments get increasing addresses; only
 * best-fit ties among equal sizes depend on them).
 */
#ifndef VRAMTRACE_SIMULATE_CACHING_ALLOCATOR_H
#define VRAMTRACE_SIMULATE_CACHING_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_policy.h"

struct vt_cache_segment;

struct vt_cache_block {
    uint64_t addr, size;       /* size: bytes occupied */
    uint64_t requested;        /* what was asked (allocated blocks) */
    int64_t stream;
    bool allocated;
    bool small_pool;
    bool mapped;               /* false: unmapped address space of an expandable segment */
    struct vt_cache_block *prev, *next; /* neighbours in the same segment */
    struct vt_cache_segment *seg;
    uint64_t gc_base;          /* pool's get_free_block count when it became free */
};

struct vt_cache_segment {
    uint64_t addr, size;       /* expandable: the reserved address range */
    int64_t stream;
    bool small_pool, expandable;
    struct vt_cache_block *first; /* lowest block; the blocks tile the segment */
    size_t ordinal;            /* k for the k-th cudaMalloc (1-based), 0 for seeds */
    struct vt_cache_segment *prev_seg, *next_seg; /* all segments of the model */
};

struct vt_cache_pool {
    struct vt_cache_block **v; /* free, mapped blocks sorted by (stream, size, address) */
    size_t n, cap;
    bool small;
    uint64_t get_free_calls;   /* for the garbage collector's block ages */
};

/* Why an allocation failed (the model's OOM message). */
struct vt_cache_failure {
    uint64_t requested, rounded, segment_bytes;
    int64_t stream;
    uint64_t reserved, allocated;      /* after the flush, as PyTorch reports */
    uint64_t free_cached;              /* reserved but unallocated */
    uint64_t largest_free;             /* largest free block in any pool */
    uint64_t largest_free_same_pool;   /* in the pool and stream of the request */
    uint64_t device_free;              /* capacity - reserved */
    uint64_t released_on_retry;        /* bytes the flush gave back */
};

struct vt_cache_stats {
    uint64_t reserved, allocated, occupied;   /* now */
    uint64_t segments;                        /* now (mapped expandable ranges: 1 each) */
    uint64_t cuda_mallocs, cuda_frees;        /* segments created / released (or pages) */
    uint64_t flushes;                         /* release-all-and-retry passes */
    uint64_t gc_releases;
    uint64_t mallocs, frees, failures;
};

struct vt_cache_model {
    struct vt_alloc_config cfg;
    uint64_t capacity;         /* 0: unlimited */
    uint64_t limit;            /* capacity x memory fraction, 0: none */
    struct vt_cache_pool small, large;
    struct vt_cache_segment *segments;
    uint64_t next_addr;
    struct vt_cache_stats st;
    /* Optional: sizes of the segments cudaMalloc'ed, in order (set
     * log_segments before the first malloc). */
    bool log_segments;
    /* Optional: the address cudaMalloc returns for the k-th segment (the
     * driver's choice, not the allocator's: replaying a snapshot, the
     * recorded one); 0 or an address in use: the model picks. */
    uint64_t (*segment_address)(void *ctx, size_t ordinal, uint64_t size);
    void *segment_address_ctx;
    uint64_t *segment_log;
    size_t nsegment_log, segment_log_cap;
    char error[128];           /* out of memory inside the model */
};

bool vt_cache_init(struct vt_cache_model *m, const struct vt_alloc_config *cfg, uint64_t capacity);
void vt_cache_destroy(struct vt_cache_model *m);

/* torch's malloc: NULL when the allocation fails (out of memory: *why
 * filled if not NULL) or the model runs out of host memory (m->error). */
struct vt_cache_block *vt_cache_malloc(struct vt_cache_model *m, uint64_t size, int64_t stream,
                                       struct vt_cache_failure *why);
void vt_cache_free(struct vt_cache_model *m, struct vt_cache_block *b);
/* torch.cuda.empty_cache(): release every unsplit cached segment (and
 * every fully free page of expandable segments). */
void vt_cache_empty_cache(struct vt_cache_model *m);

/* Seeding a state that existed before a trace started: a segment at its
 * real address (whole and free), then live blocks carved out of it. */
bool vt_cache_seed_segment(struct vt_cache_model *m, uint64_t addr, uint64_t size, int64_t stream,
                           bool small);
struct vt_cache_block *vt_cache_seed_block(struct vt_cache_model *m, uint64_t addr, uint64_t size,
                                           uint64_t requested);

/* Free bytes in cached segments and the largest free block. */
void vt_cache_free_space(const struct vt_cache_model *m, uint64_t *free_bytes, uint64_t *largest);

#endif
