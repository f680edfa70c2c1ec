/* A small model of PyTorch's caching allocator; see caching_allocator.h. */
#include "caching_allocator.h"

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define SMALL_SIZE CA_MIB            /* kSmallSize: <= 1 MiB goes to the small pool */
#define SMALL_BUFFER (2 * CA_MIB)    /* kSmallBuffer */
#define MIN_LARGE_ALLOC (10 * CA_MIB) /* kMinLargeAlloc */
#define LARGE_BUFFER (20 * CA_MIB)   /* kLargeBuffer */
#define ROUND_LARGE (2 * CA_MIB)     /* kRoundLarge */
#define MIN_BLOCK 512                /* kMinBlockSize */

struct block {
    char *ptr;
    size_t size;
    bool allocated;
    bool small;          /* which pool */
    struct block *prev;  /* neighbours inside the same segment, by address */
    struct block *next;
    struct block *all;   /* every block, for lookup and best fit */
};

static struct block *blocks;  /* list of every block of every segment */
static size_t released_last;  /* bytes the last flush gave back */

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static size_t round_size(size_t bytes)
{
    return bytes < MIN_BLOCK ? MIN_BLOCK : round_up(bytes, MIN_BLOCK);
}

static size_t segment_size(size_t rounded)
{
    if (rounded <= SMALL_SIZE)
        return SMALL_BUFFER;
    if (rounded < MIN_LARGE_ALLOC)
        return LARGE_BUFFER;
    return round_up(rounded, ROUND_LARGE);
}

static struct block *new_block(char *ptr, size_t size, bool small)
{
    struct block *b = calloc(1, sizeof *b);
    if (!b)
        abort();
    b->ptr = ptr;
    b->size = size;
    b->small = small;
    b->all = blocks;
    blocks = b;
    return b;
}

static void forget_block(struct block *b)
{
    for (struct block **p = &blocks; *p; p = &(*p)->all)
        if (*p == b) {
            *p = b->all;
            break;
        }
    free(b);
}

/* Best fit: the smallest free block of the pool that is large enough,
 * the lowest address on ties. */
static struct block *best_fit(size_t rounded, bool small)
{
    struct block *best = NULL;
    for (struct block *b = blocks; b; b = b->all)
        if (!b->allocated && b->small == small && b->size >= rounded &&
            (!best || b->size < best->size || (b->size == best->size && b->ptr < best->ptr)))
            best = b;
    return best;
}

static bool should_split(const struct block *b, size_t rounded)
{
    size_t remaining = b->size - rounded;
    return b->small ? remaining >= MIN_BLOCK : remaining > SMALL_SIZE;
}

/* A segment is one block with no neighbours: entirely free means unsplit. */
static bool is_unsplit_free(const struct block *b)
{
    return !b->allocated && !b->prev && !b->next;
}

/* release_cached_blocks(): give every unsplit cached segment back. */
static void release_cached_segments(void)
{
    released_last = 0;
    for (struct block *b = blocks, *next; b; b = next) {
        next = b->all;
        if (is_unsplit_free(b)) {
            cudaFree(b->ptr);
            released_last += b->size;
            forget_block(b);
        }
    }
}

static struct block *new_segment(size_t size, bool small)
{
    void *p = NULL;
    if (cudaMalloc(&p, size) != cudaSuccess) {
        /* The failure PyTorch reacts to: flush the cache, retry once. */
        release_cached_segments();
        if (cudaMalloc(&p, size) != cudaSuccess)
            return NULL;
    }
    return new_block(p, size, small);
}

void *ca_malloc(size_t bytes, size_t *failed_segment)
{
    size_t rounded = round_size(bytes);
    bool small = rounded <= SMALL_SIZE;
    struct block *b = best_fit(rounded, small);
    if (!b) {
        size_t seg = segment_size(rounded);
        b = new_segment(seg, small);
        if (!b) {
            if (failed_segment)
                *failed_segment = seg;
            return NULL;
        }
    }
    if (should_split(b, rounded)) {
        struct block *rest = new_block(b->ptr + rounded, b->size - rounded, small);
        rest->prev = b;
        rest->next = b->next;
        if (b->next)
            b->next->prev = rest;
        b->next = rest;
        b->size = rounded;
    }
    b->allocated = true;
    return b->ptr;
}

/* Merges b's right neighbour into b when it is free. */
static void merge_next(struct block *b)
{
    struct block *n = b->next;
    if (!n || n->allocated)
        return;
    b->size += n->size;
    b->next = n->next;
    if (n->next)
        n->next->prev = b;
    forget_block(n);
}

void ca_free(void *p)
{
    struct block *b = blocks;
    while (b && !(b->ptr == p && b->allocated))
        b = b->all;
    if (!b)
        abort();  /* a bug in the example */
    b->allocated = false;
    merge_next(b);
    if (b->prev && !b->prev->allocated)
        merge_next(b->prev);
}

void ca_stats(struct ca_stats *out)
{
    *out = (struct ca_stats){.released = released_last};
    for (const struct block *b = blocks; b; b = b->all) {
        if (b->allocated)
            out->allocated += b->size;
        out->reserved += b->size;
        if (!b->prev)
            out->segments++;
    }
}
