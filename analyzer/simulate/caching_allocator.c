/* The caching allocator model: see caching_allocator.h. Function names
 * follow DeviceCachingAllocator's so the two can be read side by side. */
#include "caching_allocator.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

#define SEGMENT_ALIGN ((uint64_t)2 << 20)
#define ADDRESS_BASE ((uint64_t)0x7f0000000000)
#define UNLIMITED_VA ((uint64_t)1 << 40)

/* ---- free pools: sorted by (stream, size, address) ---- */

static int key_cmp(int64_t stream, uint64_t size, uint64_t addr, const struct vt_cache_block *b)
{
    if (stream != b->stream)
        return stream < b->stream ? -1 : 1;
    if (size != b->size)
        return size < b->size ? -1 : 1;
    if (addr != b->addr)
        return addr < b->addr ? -1 : 1;
    return 0;
}

/* Index of the first block >= (stream, size, addr). */
static size_t lower_bound(const struct vt_cache_pool *p, int64_t stream, uint64_t size,
                          uint64_t addr)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (key_cmp(stream, size, addr, p->v[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static bool pool_insert(struct vt_cache_model *m, struct vt_cache_pool *p, struct vt_cache_block *b)
{
    if (!vt_grow_array((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v)) {
        snprintf(m->error, sizeof m->error, "out of memory in the allocator model");
        return false;
    }
    size_t at = lower_bound(p, b->stream, b->size, b->addr);
    memmove(p->v + at + 1, p->v + at, (p->n - at) * sizeof *p->v);
    p->v[at] = b;
    p->n++;
    b->gc_base = p->get_free_calls;
    return true;
}

static void pool_erase(struct vt_cache_pool *p, const struct vt_cache_block *b)
{
    size_t at = lower_bound(p, b->stream, b->size, b->addr);
    if (at < p->n && p->v[at] == b) {
        memmove(p->v + at, p->v + at + 1, (p->n - at - 1) * sizeof *p->v);
        p->n--;
    }
}

static struct vt_cache_pool *pool_of(struct vt_cache_model *m, bool small)
{
    return small ? &m->small : &m->large;
}

static bool insert_free(struct vt_cache_model *m, struct vt_cache_block *b)
{
    return pool_insert(m, pool_of(m, b->small_pool), b);
}

/* ---- blocks and segments ---- */

static void *model_alloc(struct vt_cache_model *m, size_t size)
{
    void *p = calloc(1, size);
    if (!p)
        snprintf(m->error, sizeof m->error, "out of memory in the allocator model");
    return p;
}

static uint64_t align_up(uint64_t x, uint64_t a)
{
    return (x + a - 1) / a * a;
}

static struct vt_cache_segment *add_segment(struct vt_cache_model *m, uint64_t addr, uint64_t size,
                                            int64_t stream, bool small, bool expandable)
{
    struct vt_cache_segment *seg = model_alloc(m, sizeof *seg);
    struct vt_cache_block *b = seg ? model_alloc(m, sizeof *b) : NULL;
    if (!b) {
        free(seg);
        return NULL;
    }
    *seg = (struct vt_cache_segment){.addr = addr,
                                     .size = size,
                                     .stream = stream,
                                     .small_pool = small,
                                     .expandable = expandable,
                                     .first = b,
                                     .next_seg = m->segments};
    if (m->segments)
        m->segments->prev_seg = seg;
    m->segments = seg;
    b->addr = addr;
    b->size = size;
    b->stream = stream;
    b->small_pool = small;
    b->mapped = !expandable;
    b->seg = seg;
    if (addr + size > m->next_addr)
        m->next_addr = align_up(addr + size, SEGMENT_ALIGN);
    if (!expandable) {
        m->st.reserved += size;
        m->st.segments++;
    }
    return seg;
}

static void remove_segment(struct vt_cache_model *m, struct vt_cache_segment *seg)
{
    if (seg->prev_seg)
        seg->prev_seg->next_seg = seg->next_seg;
    else
        m->segments = seg->next_seg;
    if (seg->next_seg)
        seg->next_seg->prev_seg = seg->prev_seg;
    for (struct vt_cache_block *b = seg->first, *n; b; b = n) {
        n = b->next;
        free(b);
    }
    free(seg);
}

bool vt_cache_init(struct vt_cache_model *m, const struct vt_alloc_config *cfg, uint64_t capacity)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->capacity = capacity;
    if (cfg->per_process_memory_fraction > 0 && capacity)
        m->limit = (uint64_t)(cfg->per_process_memory_fraction * (double)capacity);
    m->small.small = true;
    m->next_addr = ADDRESS_BASE;
    return true;
}

void vt_cache_destroy(struct vt_cache_model *m)
{
    while (m->segments)
        remove_segment(m, m->segments);
    free(m->small.v);
    free(m->large.v);
    free(m->segment_log);
    memset(m, 0, sizeof *m);
}

static bool is_whole(const struct vt_cache_block *b)
{
    return !b->prev && !b->next;
}

/* cudaFree of a whole, free, non-expandable segment. */
static void release_block(struct vt_cache_model *m, struct vt_cache_block *b)
{
    pool_erase(pool_of(m, b->small_pool), b);
    m->st.reserved -= b->size;
    m->st.segments--;
    m->st.cuda_frees++;
    remove_segment(m, b->seg); /* frees b, its only block */
}

/* try_merge_blocks: src, a free neighbour of dst in the same mapping
 * state, is absorbed by dst. */
static void try_merge(struct vt_cache_model *m, struct vt_cache_block *dst,
                      struct vt_cache_block *src)
{
    if (!src || src->allocated || src->mapped != dst->mapped)
        return;
    if (src->mapped)
        pool_erase(pool_of(m, src->small_pool), src);
    if (dst->prev == src) {
        dst->addr = src->addr;
        dst->prev = src->prev;
        if (dst->prev)
            dst->prev->next = dst;
        else
            dst->seg->first = dst;
    } else {
        dst->next = src->next;
        if (dst->next)
            dst->next->prev = dst;
    }
    dst->size += src->size;
    free(src);
}

/* Splits b so that b keeps its first `size` bytes; returns the rest (a
 * new block right after b, same state). */
static struct vt_cache_block *split_off(struct vt_cache_model *m, struct vt_cache_block *b,
                                        uint64_t size)
{
    struct vt_cache_block *r = model_alloc(m, sizeof *r);
    if (!r)
        return NULL;
    *r = *b;
    r->addr = b->addr + size;
    r->size = b->size - size;
    r->allocated = false;
    r->requested = 0;
    r->prev = b;
    r->next = b->next;
    if (r->next)
        r->next->prev = r;
    b->next = r;
    b->size = size;
    return r;
}

/* ---- expandable segments ---- */

static uint64_t page_size(bool small)
{
    return small ? VT_PT_SMALL_BUFFER : VT_PT_LARGE_BUFFER;
}

static bool has_room(const struct vt_cache_block *b, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && b && !b->allocated) {
        bytes += b->size;
        b = b->next;
    }
    return bytes >= size;
}

/* find_expandable_block: the lowest unmapped range of this stream's
 * expandable segments (with the free block just before it) that has
 * room; else a new segment's whole address range. */
static struct vt_cache_block *find_expandable_block(struct vt_cache_model *m, int64_t stream,
                                                    bool small, uint64_t size)
{
    struct vt_cache_block *best = NULL;
    for (struct vt_cache_segment *s = m->segments; s; s = s->next_seg) {
        if (!s->expandable || s->stream != stream || s->small_pool != small)
            continue;
        for (struct vt_cache_block *b = s->first; b; b = b->next) {
            if (b->mapped)
                continue;
            /* A free mapped block right before the unmapped range can be
             * its start. */
            struct vt_cache_block *c = b->prev && !b->prev->allocated ? b->prev : b;
            if (has_room(c, size) && (!best || c->addr < best->addr))
                best = c;
        }
    }
    if (best)
        return best;
    /* 1 1/8 of the device: room to map pages at the end after unmapping
     * earlier ones. */
    uint64_t va = m->capacity ? align_up(m->capacity + m->capacity / 8, page_size(small)) : UNLIMITED_VA;
    struct vt_cache_segment *seg = add_segment(m, m->next_addr, va, stream, small, true);
    return seg ? seg->first : NULL;
}

/* map_block: back the start of an unmapped block with whole pages. */
static bool map_block(struct vt_cache_model *m, struct vt_cache_block *b, uint64_t size)
{
    uint64_t bytes = align_up(size, page_size(b->small_pool));
    if (bytes > b->size)
        bytes = b->size;
    if ((m->capacity && m->st.reserved + bytes > m->capacity))
        return false;
    if (bytes < b->size && !split_off(m, b, bytes))
        return false;
    b->mapped = true;
    m->st.reserved += bytes;
    m->st.cuda_mallocs += bytes / page_size(b->small_pool);
    try_merge(m, b, b->prev);
    try_merge(m, b, b->next);
    return insert_free(m, b);
}

static struct vt_cache_block *
try_allocate_expandable_block(struct vt_cache_model *m, int64_t stream, bool small, uint64_t size)
{
    struct vt_cache_block *c = find_expandable_block(m, stream, small, size);
    if (!c)
        return NULL;
    if (!c->mapped && !map_block(m, c, c->size < size ? c->size : size))
        return NULL;
    while (c->size < size) {
        struct vt_cache_block *n = c->next; /* unmapped, by construction */
        uint64_t rest = size - c->size;
        if (!n || n->mapped || !map_block(m, n, rest < n->size ? rest : n->size))
            return NULL;
        c = n; /* map_block merged c into n */
    }
    pool_erase(pool_of(m, small), c);
    return c;
}

/* unmap_block: give back the whole pages inside a free block. */
static void unmap_block(struct vt_cache_model *m, struct vt_cache_block *b)
{
    uint64_t page = page_size(b->small_pool), base = b->seg->addr;
    uint64_t lo = base + align_up(b->addr - base, page);
    uint64_t hi = base + (b->addr + b->size - base) / page * page;
    if (hi <= lo)
        return;
    pool_erase(pool_of(m, b->small_pool), b);
    if (hi < b->addr + b->size) {
        struct vt_cache_block *after = split_off(m, b, hi - b->addr);
        if (!after || !insert_free(m, after))
            return;
    }
    if (lo > b->addr) {
        struct vt_cache_block *mid = split_off(m, b, lo - b->addr);
        if (!mid || !insert_free(m, b))
            return;
        b = mid;
    }
    b->mapped = false;
    m->st.reserved -= b->size;
    m->st.cuda_frees += b->size / page;
    try_merge(m, b, b->prev);
    try_merge(m, b, b->next);
    if (is_whole(b))
        remove_segment(m, b->seg);
}

/* ---- the allocator's decisions ---- */

/* get_free_block: best fit in the pool, with the oversize rules. */
static struct vt_cache_block *get_free_block(struct vt_cache_model *m, struct vt_cache_pool *p,
                                             int64_t stream, uint64_t size)
{
    if (m->limit && m->cfg.garbage_collection_threshold > 0)
        p->get_free_calls++;
    size_t at = lower_bound(p, stream, size, 0);
    if (at == p->n || p->v[at]->stream != stream)
        return NULL;
    if (p->v[at]->seg->expandable) {
        /* Best fit counts what an expandable block could grow into. */
        for (;;) {
            struct vt_cache_block *b = p->v[at];
            uint64_t grow = b->size + (b->next && !b->next->mapped ? b->next->size : 0);
            if (at + 1 >= p->n || p->v[at + 1]->stream != stream || !b->seg->expandable)
                break;
            struct vt_cache_block *n = p->v[at + 1];
            uint64_t grow_n = n->size + (n->next && !n->next->mapped ? n->next->size : 0);
            if (grow_n >= grow)
                break;
            at++;
        }
    }
    struct vt_cache_block *b = p->v[at];
    if (size < m->cfg.max_split_size && b->size >= m->cfg.max_split_size)
        return NULL;
    if (size >= m->cfg.max_split_size && b->size >= size + m->cfg.max_non_split_rounding)
        return NULL;
    pool_erase(p, b);
    return b;
}

/* garbage_collect_cached_blocks: free unsplit large blocks, oldest first
 * (age = get_free_block calls since they became free), until reserved
 * memory is back under the threshold. */
static void garbage_collect(struct vt_cache_model *m)
{
    uint64_t threshold = (uint64_t)(m->cfg.garbage_collection_threshold * (double)m->limit);
    if (m->st.reserved <= threshold)
        return;
    uint64_t target = m->st.reserved - threshold, reclaimed = 0;
    struct vt_cache_pool *p = &m->large;
    double total_age = 0;
    size_t count = 0;
    for (size_t k = 0; k < p->n; k++)
        if (is_whole(p->v[k]) && !p->v[k]->seg->expandable) {
            total_age += (double)(p->get_free_calls - p->v[k]->gc_base);
            count++;
        }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double threshold_age = total_age / (double)count;
        freed = false;
        for (size_t k = 0; k < p->n;) {
            struct vt_cache_block *b = p->v[k];
            double age = (double)(p->get_free_calls - b->gc_base);
            if (is_whole(b) && !b->seg->expandable && age >= threshold_age) {
                freed = true;
                reclaimed += b->size;
                total_age -= age;
                count--;
                m->st.gc_releases++;
                release_block(m, b); /* removes p->v[k] */
            } else {
                k++;
            }
        }
    }
}

static bool overlaps(const struct vt_cache_model *m, uint64_t addr, uint64_t size)
{
    for (const struct vt_cache_segment *s = m->segments; s; s = s->next_seg)
        if (addr < s->addr + s->size && s->addr < addr + size)
            return true;
    return false;
}

/* alloc_block: a new segment (cudaMalloc), or pages of an expandable one. */
static struct vt_cache_block *alloc_block(struct vt_cache_model *m, uint64_t alloc_size,
                                          uint64_t size, int64_t stream, bool small)
{
    if (m->limit && m->st.reserved + alloc_size > m->limit)
        return NULL;
    if (m->cfg.expandable_segments)
        return try_allocate_expandable_block(m, stream, small, size);
    if (m->capacity && m->st.reserved + alloc_size > m->capacity)
        return NULL;
    uint64_t addr = m->next_addr;
    if (m->segment_address) {
        uint64_t want = m->segment_address(m->segment_address_ctx, (size_t)m->st.cuda_mallocs + 1,
                                           alloc_size);
        if (want && !overlaps(m, want, alloc_size))
            addr = want;
    }
    struct vt_cache_segment *seg = add_segment(m, addr, alloc_size, stream, small, false);
    if (!seg)
        return NULL;
    m->st.cuda_mallocs++;
    seg->ordinal = (size_t)m->st.cuda_mallocs;
    if (m->log_segments && vt_grow_array((void **)&m->segment_log, &m->segment_log_cap,
                                         m->nsegment_log + 1, sizeof *m->segment_log))
        m->segment_log[m->nsegment_log++] = alloc_size;
    return seg->first;
}

/* release_available_cached_blocks: with max_split_size set, free cached
 * oversize blocks (one big enough, else the largest ones) before the
 * full flush. */
static bool release_available_cached_blocks(struct vt_cache_model *m, struct vt_cache_pool *p,
                                            int64_t stream, uint64_t size)
{
    if (m->cfg.max_split_size == UINT64_MAX)
        return false;
    uint64_t key = size < m->cfg.max_split_size ? m->cfg.max_split_size : size;
    size_t at = lower_bound(p, stream, key, 0);
    if (at == p->n || p->v[at]->stream != stream) {
        uint64_t released = 0;
        while (at > 0 && released < key) {
            struct vt_cache_block *b = p->v[at - 1];
            if (b->stream != stream || b->size < m->cfg.max_split_size)
                break;
            at--;
            if (is_whole(b) && !b->seg->expandable) {
                released += b->size;
                release_block(m, b);
            }
        }
        return released >= key;
    }
    struct vt_cache_block *b = p->v[at];
    if (!is_whole(b) || b->seg->expandable)
        return false;
    release_block(m, b);
    return true;
}

/* release_cached_blocks (also empty_cache): every free whole segment goes
 * back to CUDA; expandable segments give back their free pages. */
static void release_cached_blocks(struct vt_cache_model *m)
{
    struct vt_cache_pool *pools[2] = {&m->large, &m->small};
    for (int i = 0; i < 2; i++) {
        struct vt_cache_pool *p = pools[i];
        /* Unmapping changes the pool: gather the expandable blocks first
         * (unmapping frees only unmapped blocks, so these stay valid). */
        struct vt_cache_block **exp = NULL;
        size_t nexp = 0;
        for (size_t k = 0; k < p->n; k++)
            if (p->v[k]->seg->expandable) {
                if (!exp && !(exp = model_alloc(m, p->n * sizeof *exp)))
                    return;
                exp[nexp++] = p->v[k];
            }
        for (size_t k = 0; k < nexp; k++)
            unmap_block(m, exp[k]);
        free(exp);
        for (size_t k = 0; k < p->n;) {
            struct vt_cache_block *b = p->v[k];
            if (!b->seg->expandable && is_whole(b))
                release_block(m, b);
            else
                k++;
        }
    }
}

void vt_cache_empty_cache(struct vt_cache_model *m)
{
    release_cached_blocks(m);
}

void vt_cache_free_space(const struct vt_cache_model *m, uint64_t *free_bytes, uint64_t *largest)
{
    *free_bytes = 0;
    *largest = 0;
    const struct vt_cache_pool *pools[2] = {&m->small, &m->large};
    for (int i = 0; i < 2; i++)
        for (size_t k = 0; k < pools[i]->n; k++) {
            uint64_t s = pools[i]->v[k]->size;
            *free_bytes += s;
            if (s > *largest)
                *largest = s;
        }
}

static uint64_t largest_in(const struct vt_cache_pool *p, int64_t stream)
{
    uint64_t best = 0;
    for (size_t k = 0; k < p->n; k++)
        if (p->v[k]->stream == stream && p->v[k]->size > best)
            best = p->v[k]->size;
    return best;
}

struct vt_cache_block *vt_cache_malloc(struct vt_cache_model *m, uint64_t size, int64_t stream,
                                       struct vt_cache_failure *why)
{
    uint64_t rounded = vt_pt_round_size(&m->cfg, size);
    bool small = vt_pt_is_small(rounded);
    struct vt_cache_pool *p = pool_of(m, small);
    uint64_t alloc_size = vt_pt_segment_size(rounded);
    m->st.mallocs++;
    struct vt_cache_block *b = get_free_block(m, p, stream, rounded);
    uint64_t before_flush = 0;
    if (!b) {
        if (m->limit && m->cfg.garbage_collection_threshold > 0)
            garbage_collect(m);
        b = alloc_block(m, alloc_size, rounded, stream, small);
        if (!b && !m->error[0] && release_available_cached_blocks(m, p, stream, rounded))
            b = alloc_block(m, alloc_size, rounded, stream, small);
        if (!b && !m->error[0]) {
            before_flush = m->st.reserved;
            m->st.flushes++;
            release_cached_blocks(m);
            b = alloc_block(m, alloc_size, rounded, stream, small);
        }
    }
    if (!b) {
        m->st.failures++;
        if (why && !m->error[0]) {
            memset(why, 0, sizeof *why);
            why->requested = size;
            why->rounded = rounded;
            why->segment_bytes = alloc_size;
            why->stream = stream;
            why->reserved = m->st.reserved;
            why->allocated = m->st.allocated;
            vt_cache_free_space(m, &why->free_cached, &why->largest_free);
            why->largest_free_same_pool = largest_in(p, stream);
            uint64_t cap = m->limit ? m->limit : m->capacity;
            why->device_free = cap > m->st.reserved ? cap - m->st.reserved : 0;
            why->released_on_retry = before_flush > m->st.reserved ? before_flush - m->st.reserved : 0;
        }
        return NULL;
    }
    /* alloc_found_block: keep the front, return the rest to the pool if
     * it is worth a block of its own. */
    bool expandable = b->seg->expandable;
    if (vt_pt_should_split(&m->cfg, small || expandable, b->size, rounded)) {
        struct vt_cache_block *rest = split_off(m, b, rounded);
        if (!rest || !insert_free(m, rest))
            return NULL;
    }
    b->allocated = true;
    b->requested = size;
    m->st.allocated += size;
    m->st.occupied += b->size;
    return b;
}

void vt_cache_free(struct vt_cache_model *m, struct vt_cache_block *b)
{
    b->allocated = false;
    m->st.allocated -= b->requested;
    m->st.occupied -= b->size;
    b->requested = 0;
    m->st.frees++;
    try_merge(m, b, b->prev);
    try_merge(m, b, b->next);
    insert_free(m, b);
}

bool vt_cache_seed_segment(struct vt_cache_model *m, uint64_t addr, uint64_t size, int64_t stream,
                           bool small)
{
    struct vt_cache_segment *seg = add_segment(m, addr, size, stream, small, false);
    return seg && insert_free(m, seg->first);
}

struct vt_cache_block *vt_cache_seed_block(struct vt_cache_model *m, uint64_t addr, uint64_t size,
                                           uint64_t requested)
{
    for (struct vt_cache_segment *s = m->segments; s; s = s->next_seg) {
        if (addr < s->addr || addr >= s->addr + s->size)
            continue;
        struct vt_cache_block *b = s->first;
        while (b && !(addr >= b->addr && addr < b->addr + b->size))
            b = b->next;
        if (!b || b->allocated || addr + size > b->addr + b->size)
            return NULL;
        pool_erase(pool_of(m, b->small_pool), b);
        if (addr > b->addr) {
            struct vt_cache_block *mid = split_off(m, b, addr - b->addr);
            if (!mid || !insert_free(m, b))
                return NULL;
            b = mid;
        }
        if (b->size > size) {
            struct vt_cache_block *rest = split_off(m, b, size);
            if (!rest || !insert_free(m, rest))
                return NULL;
        }
        b->allocated = true;
        b->requested = requested;
        m->st.allocated += requested;
        m->st.occupied += b->size;
        return b;
    }
    return NULL;
}
