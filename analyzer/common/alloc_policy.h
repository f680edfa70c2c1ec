/*
 * The sizing rules of PyTorch's native CUDA caching allocator
 * (c10/cuda/CUDACachingAllocator.cpp, c10/core/AllocatorConfig.cpp), as
 * pure functions, and its configuration (PYTORCH_CUDA_ALLOC_CONF).
 * Shared by the snapshot report (to know a block's rounded size) and the
 * allocator model (analyzer/simulate/caching_allocator.h).
 */
#ifndef VRAMTRACE_SIMULATE_ALLOC_POLICY_H
#define VRAMTRACE_SIMULATE_ALLOC_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_PT_MIN_BLOCK ((uint64_t)512)            /* kMinBlockSize */
#define VT_PT_SMALL_SIZE ((uint64_t)1 << 20)       /* kSmallSize: largest small request */
#define VT_PT_SMALL_BUFFER ((uint64_t)2 << 20)     /* kSmallBuffer: small segment */
#define VT_PT_MIN_LARGE_ALLOC ((uint64_t)10 << 20) /* kMinLargeAlloc */
#define VT_PT_LARGE_BUFFER ((uint64_t)20 << 20)    /* kLargeBuffer */
#define VT_PT_ROUND_LARGE ((uint64_t)2 << 20)      /* kRoundLarge */
#define VT_PT_INTERVALS 16                         /* roundup_power2 intervals from 1 MiB */

struct vt_alloc_config {
    uint64_t max_split_size;          /* UINT64_MAX: unlimited (default) */
    uint64_t max_non_split_rounding;  /* default kLargeBuffer */
    uint64_t roundup_power2_divisions[VT_PT_INTERVALS]; /* 0/1: plain 512 B rounding */
    double garbage_collection_threshold;                /* 0: off */
    bool expandable_segments;
    /* Not an allocator option: torch.cuda.set_per_process_memory_fraction.
     * 0 means not set (the garbage collector only runs when it is set). */
    double per_process_memory_fraction;
};

void vt_alloc_config_default(struct vt_alloc_config *c);
/* Parses PYTORCH_CUDA_ALLOC_CONF syntax ("max_split_size_mb:128,
 * roundup_power2_divisions:[256:1,>:4],expandable_segments:True,
 * garbage_collection_threshold:0.6,max_non_split_rounding_mb:64,
 * backend:native") on top of *c, plus the model's own
 * "per_process_memory_fraction:F". Returns false with a message in err
 * for anything PyTorch would reject or this model does not know. */
bool vt_alloc_config_parse(struct vt_alloc_config *c, const char *spec, char *err, size_t errlen);
/* The settings as text in the same syntax (only what differs from default). */
void vt_alloc_config_format(const struct vt_alloc_config *c, char *buf, size_t n);

/* round_size(): the bytes a request occupies in a block. */
uint64_t vt_pt_round_size(const struct vt_alloc_config *c, uint64_t size);
/* Rounded sizes up to 1 MiB go to the small pool. */
bool vt_pt_is_small(uint64_t rounded);
/* get_allocation_size(): the segment cudaMalloc'ed for a rounded request. */
uint64_t vt_pt_segment_size(uint64_t rounded);
/* should_split(): is the rest of a block of block_size worth keeping as a
 * free block after placing a rounded request in it? */
bool vt_pt_should_split(const struct vt_alloc_config *c, bool small_pool, uint64_t block_size,
                        uint64_t rounded);

#endif
