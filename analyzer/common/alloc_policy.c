/* PyTorch's caching allocator sizing rules: see alloc_policy.h. */
#include "alloc_policy.h"

static unsigned floor_log2(uint64_t x)
{
    return 63u - (unsigned)__builtin_clzll(x);
}

/* roundup_power2_divisions(size): the setting of size's interval. */
static uint64_t divisions_for(const struct vt_alloc_config *c, uint64_t size)
{
    unsigned log_size = floor_log2(size);
    unsigned index = log_size > 20 ? log_size - 20 : 0;
    if (index > VT_PT_INTERVALS - 1)
        index = VT_PT_INTERVALS - 1;
    return c->roundup_power2_divisions[index];
}

/* roundup_power2_next_division(): the next of `divisions` equal steps of
 * size's power-of-two interval. */
static uint64_t next_division(uint64_t size, uint64_t divisions)
{
    if ((size & (size - 1)) == 0)
        return size;
    uint64_t floor2 = (uint64_t)1 << floor_log2(size);
    uint64_t step = floor2 >> floor_log2(divisions);
    if (step == 0)
        return floor2 << 1;
    uint64_t down = size & ~(step - 1);
    return down == size ? size : down + step;
}

uint64_t vt_pt_round_size(const struct vt_alloc_config *c, uint64_t size)
{
    if (size < VT_PT_MIN_BLOCK)
        return VT_PT_MIN_BLOCK;
    uint64_t d = divisions_for(c, size);
    if (d > 1 && size > VT_PT_MIN_BLOCK * d)
        return next_division(size, d);
    return VT_PT_MIN_BLOCK * ((size + VT_PT_MIN_BLOCK - 1) / VT_PT_MIN_BLOCK);
}

bool vt_pt_is_small(uint64_t rounded)
{
    return rounded <= VT_PT_SMALL_SIZE;
}

uint64_t vt_pt_segment_size(uint64_t rounded)
{
    if (rounded <= VT_PT_SMALL_SIZE)
        return VT_PT_SMALL_BUFFER;
    if (rounded < VT_PT_MIN_LARGE_ALLOC)
        return VT_PT_LARGE_BUFFER;
    return VT_PT_ROUND_LARGE * ((rounded + VT_PT_ROUND_LARGE - 1) / VT_PT_ROUND_LARGE);
}

bool vt_pt_should_split(const struct vt_alloc_config *c, bool small_pool, uint64_t block_size,
                        uint64_t rounded)
{
    uint64_t remaining = block_size - rounded;
    if (small_pool || c->expandable_segments)
        return remaining >= VT_PT_MIN_BLOCK;
    return rounded < c->max_split_size && remaining > VT_PT_SMALL_SIZE;
}
