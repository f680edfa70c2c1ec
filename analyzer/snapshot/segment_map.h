/*
 * The layout of a device's cached segments at one moment: for each segment
 * its blocks in address order, live and free, the largest free block and
 * the fragmentation figure.
 *
 * Live blocks are known by address and requested size; the bytes a block
 * really occupies follow the allocator's rules (alloc_policy.h): the
 * rounded size, plus the rest of the free space after it when the
 * allocator would not have split that rest off (large pool: a rest of at
 * most 1 MiB; a request >= max_split_size: a rest below
 * max_non_split_rounding). Free space between live blocks is one free
 * block: the allocator merges free neighbours, and blocks never span
 * segments.
 *
 *   fragmentation = 1 - largest free block / total free bytes in segments
 *   (0 when nothing is free: one piece is no fragmentation).
 */
#ifndef VRAMTRACE_SNAPSHOT_SEGMENT_MAP_H
#define VRAMTRACE_SNAPSHOT_SEGMENT_MAP_H

#include "alloc_policy.h"
#include "snapshot_timeline.h"

struct vt_segmap_block {
    uint64_t addr, size;     /* bytes occupied */
    uint64_t requested;      /* 0 for free blocks */
    bool free;
    const struct vt_snap_live *live; /* NULL for free blocks */
};

struct vt_segmap_segment {
    const struct vt_snap_seg *seg;
    size_t first, nblocks;   /* into vt_segmap.blocks */
    uint64_t allocated;      /* bytes occupied by live blocks */
    uint64_t requested;
    uint64_t free_bytes, largest_free;
};

struct vt_segmap {
    struct vt_segmap_segment *segments;
    size_t nsegments;
    struct vt_segmap_block *blocks;
    size_t nblocks;
    uint64_t free_bytes;      /* free inside segments: reserved but unallocated */
    uint64_t largest_free;    /* over all segments */
    uint64_t largest_free_small, largest_free_large; /* per pool */
    double fragmentation;
    size_t outside;           /* live blocks in no known segment */
};

/* Builds the map of a state (blocks and segments sorted by address).
 * Returns false when out of memory. */
bool vt_segmap_build(struct vt_segmap *m, const struct vt_snap_state *st,
                     const struct vt_alloc_config *cfg);
void vt_segmap_free(struct vt_segmap *m);

/* The allocator configuration a snapshot recorded (defaults if none). */
void vt_alloc_config_from_snapshot(struct vt_alloc_config *c, const struct vt_snap_settings *s);

#endif
