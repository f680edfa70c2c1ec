/* Unit tests of the caching allocator model against cases worked by hand
 * from the policy (/work/shared/brief/pytorch.md, CUDACachingAllocator.cpp):
 * every expected number below is derived in the comment next to it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_policy.h"
#include "caching_allocator.h"

#define KiB ((uint64_t)1 << 10)
#define MiB ((uint64_t)1 << 20)

static struct vt_alloc_config cfg_of(const char *spec)
{
    struct vt_alloc_config c;
    char err[256];
    vt_alloc_config_default(&c);
    assert_true(vt_alloc_config_parse(&c, spec, err, sizeof err));
    return c;
}

static void test_round_size(void **state)
{
    (void)state;
    struct vt_alloc_config c = cfg_of("");
    assert_int_equal(vt_pt_round_size(&c, 1), 512);              /* < 512 -> 512 */
    assert_int_equal(vt_pt_round_size(&c, 512), 512);
    assert_int_equal(vt_pt_round_size(&c, 513), 1024);           /* next multiple of 512 */
    assert_int_equal(vt_pt_round_size(&c, MiB + 1), MiB + 512);
    c = cfg_of("roundup_power2_divisions:4");
    assert_int_equal(vt_pt_round_size(&c, 2000), 2048);          /* 2000 <= 512*4: plain */
    assert_int_equal(vt_pt_round_size(&c, 3000), 3072);          /* [2048,4096) in 4 steps of 512 */
    assert_int_equal(vt_pt_round_size(&c, 600 * MiB), 640 * MiB); /* [512M,1G) steps of 128M */
    assert_int_equal(vt_pt_round_size(&c, 1024 * MiB), 1024 * MiB); /* a power of two stays */
    c = cfg_of("roundup_power2_divisions:[256:1,>:4]");
    assert_int_equal(vt_pt_round_size(&c, 300 * MiB + 1), 300 * MiB + 512); /* interval 256M: 1 */
    assert_int_equal(vt_pt_round_size(&c, 600 * MiB), 640 * MiB);           /* above: 4 */
    assert_int_equal(vt_pt_round_size(&c, 3000), 3072); /* first entry also covers below */
}

static void test_segment_sizes(void **state)
{
    (void)state;
    assert_int_equal(vt_pt_segment_size(512), 2 * MiB);          /* small pool */
    assert_int_equal(vt_pt_segment_size(MiB), 2 * MiB);
    assert_int_equal(vt_pt_segment_size(MiB + 512), 20 * MiB);   /* < 10 MiB: 20 MiB */
    assert_int_equal(vt_pt_segment_size(10 * MiB - 512), 20 * MiB);
    assert_int_equal(vt_pt_segment_size(10 * MiB), 10 * MiB);    /* else round to 2 MiB */
    assert_int_equal(vt_pt_segment_size(11 * MiB + 512), 12 * MiB);
    assert_true(vt_pt_is_small(MiB));
    assert_false(vt_pt_is_small(MiB + 512));
}

static void test_config_errors(void **state)
{
    (void)state;
    struct vt_alloc_config c;
    char err[256];
    vt_alloc_config_default(&c);
    assert_false(vt_alloc_config_parse(&c, "max_split_size_mb:19", err, sizeof err));
    assert_false(vt_alloc_config_parse(&c, "roundup_power2_divisions:3", err, sizeof err));
    assert_false(vt_alloc_config_parse(&c, "garbage_collection_threshold:1.5", err, sizeof err));
    assert_false(vt_alloc_config_parse(&c, "bogus:1", err, sizeof err));
    assert_false(vt_alloc_config_parse(&c, "backend:cudaMallocAsync", err, sizeof err));
    assert_true(vt_alloc_config_parse(&c, "max_split_size_mb:128,expandable_segments:True", err,
                                      sizeof err));
    assert_int_equal(c.max_split_size, 128 * MiB);
    assert_true(c.expandable_segments);
}

/* 5 MiB -> a 20 MiB segment split 5 + 15; 3 MiB reuses the 15 (best
 * fit, split again: rest 12 > 1 MiB); 11.5 MiB takes that 12 MiB rest and
 * keeps it whole (rest 0.5 MiB <= 1 MiB is not split off); 19.5 MiB gets a
 * new 20 MiB segment, unsplit for the same reason. */
static void test_split_rules(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("");
    vt_cache_init(&m, &c, 0);
    struct vt_cache_block *a = vt_cache_malloc(&m, 5 * MiB, 0, NULL);
    assert_non_null(a);
    assert_int_equal(m.st.reserved, 20 * MiB);
    assert_int_equal(a->size, 5 * MiB);
    struct vt_cache_block *b = vt_cache_malloc(&m, 3 * MiB, 0, NULL);
    assert_int_equal(m.st.cuda_mallocs, 1);
    assert_int_equal(b->addr, a->addr + 5 * MiB);
    struct vt_cache_block *d = vt_cache_malloc(&m, 11 * MiB + 512 * KiB, 0, NULL);
    assert_int_equal(m.st.cuda_mallocs, 1);
    assert_int_equal(d->addr, a->addr + 8 * MiB);
    assert_int_equal(d->size, 12 * MiB);
    struct vt_cache_block *e = vt_cache_malloc(&m, 19 * MiB + 512 * KiB, 0, NULL);
    assert_int_equal(m.st.cuda_mallocs, 2);
    assert_int_equal(e->size, 20 * MiB);
    assert_int_equal(m.st.reserved, 40 * MiB);
    /* small pool: 1000 B -> 1024 B of a 2 MiB segment, the rest split off. */
    struct vt_cache_block *s = vt_cache_malloc(&m, 1000, 0, NULL);
    assert_int_equal(s->size, 1024);
    uint64_t free_bytes, largest;
    vt_cache_free_space(&m, &free_bytes, &largest);
    assert_int_equal(free_bytes, 2 * MiB - 1024);
    assert_int_equal(largest, 2 * MiB - 1024);
    /* freeing merges free neighbours: a + b -> one 8 MiB block */
    vt_cache_free(&m, a);
    vt_cache_free(&m, b);
    vt_cache_free_space(&m, &free_bytes, &largest);
    assert_int_equal(largest, 8 * MiB);
    assert_int_equal(m.st.allocated, 11 * MiB + 512 * KiB + 19 * MiB + 512 * KiB + 1000);
    vt_cache_destroy(&m);
}

/* Free whole segments of 12, 14, 16 MiB: 13 MiB takes the 14 (smallest
 * that fits), unsplit (rest 1 MiB). */
static void test_best_fit(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("");
    vt_cache_init(&m, &c, 0);
    struct vt_cache_block *x = vt_cache_malloc(&m, 12 * MiB, 0, NULL);
    struct vt_cache_block *y = vt_cache_malloc(&m, 14 * MiB, 0, NULL);
    struct vt_cache_block *z = vt_cache_malloc(&m, 16 * MiB, 0, NULL);
    uint64_t y_addr = y->addr;
    vt_cache_free(&m, x);
    vt_cache_free(&m, y);
    vt_cache_free(&m, z);
    struct vt_cache_block *w = vt_cache_malloc(&m, 13 * MiB, 0, NULL);
    assert_int_equal(w->addr, y_addr);
    assert_int_equal(w->size, 14 * MiB);
    assert_int_equal(m.st.reserved, 42 * MiB);
    assert_int_equal(m.st.cuda_mallocs, 3);
    /* another stream does not see stream 0's free blocks */
    struct vt_cache_block *v = vt_cache_malloc(&m, 12 * MiB, 7, NULL);
    assert_int_equal(m.st.cuda_mallocs, 4);
    assert_int_equal(v->stream, 7);
    vt_cache_destroy(&m);
}

/* max_split_size 40 MiB: a cached 100 MiB block is refused to a 30 MiB
 * request (oversize for a small request) and to 60 MiB (100 >= 60 + 20),
 * but serves 90 MiB whole (100 < 90 + 20, not split). */
static void test_max_split_size(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("max_split_size_mb:40");
    vt_cache_init(&m, &c, 0);
    struct vt_cache_block *big = vt_cache_malloc(&m, 100 * MiB, 0, NULL);
    uint64_t big_addr = big->addr;
    vt_cache_free(&m, big);
    struct vt_cache_block *a = vt_cache_malloc(&m, 30 * MiB, 0, NULL);
    assert_true(a->addr != big_addr);
    assert_int_equal(m.st.reserved, 130 * MiB);
    struct vt_cache_block *b = vt_cache_malloc(&m, 60 * MiB, 0, NULL);
    assert_true(b->addr != big_addr);
    assert_int_equal(m.st.reserved, 190 * MiB);
    struct vt_cache_block *d = vt_cache_malloc(&m, 90 * MiB, 0, NULL);
    assert_int_equal(d->addr, big_addr);
    assert_int_equal(d->size, 100 * MiB);
    vt_cache_destroy(&m);
}

/* Capacity 100 MiB: a cached free 60 MiB segment blocks a 70 MiB
 * cudaMalloc; the flush releases it and the retry succeeds. */
static void test_flush_and_retry(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("");
    vt_cache_init(&m, &c, 100 * MiB);
    vt_cache_free(&m, vt_cache_malloc(&m, 60 * MiB, 0, NULL));
    struct vt_cache_block *b = vt_cache_malloc(&m, 70 * MiB, 0, NULL);
    assert_non_null(b);
    assert_int_equal(m.st.flushes, 1);
    assert_int_equal(m.st.cuda_frees, 1);
    assert_int_equal(m.st.reserved, 70 * MiB);
    /* 50 + 30 live, then 30 more: 110 > 100 and nothing to flush: OOM. */
    vt_cache_free(&m, b);
    vt_cache_empty_cache(&m);
    assert_int_equal(m.st.reserved, 0);
    assert_non_null(vt_cache_malloc(&m, 50 * MiB, 0, NULL));
    assert_non_null(vt_cache_malloc(&m, 30 * MiB, 0, NULL));
    struct vt_cache_failure why;
    assert_null(vt_cache_malloc(&m, 30 * MiB, 0, &why));
    assert_int_equal(why.reserved, 80 * MiB);
    assert_int_equal(why.device_free, 20 * MiB);
    assert_int_equal(why.segment_bytes, 30 * MiB);
    vt_cache_destroy(&m);
}

/* Four 5 MiB blocks fill one 20 MiB segment; freeing the 1st and 3rd
 * leaves 10 MiB free in two 5 MiB pieces. On a 20 MiB device an 8 MiB
 * request cannot get a segment, the flush finds no whole segment:
 * OOM with 10 MiB free cached, largest free block 5 MiB. */
static void test_fragmentation_oom(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("");
    vt_cache_init(&m, &c, 20 * MiB);
    struct vt_cache_block *b[4];
    for (int i = 0; i < 4; i++)
        b[i] = vt_cache_malloc(&m, 5 * MiB, 0, NULL);
    assert_int_equal(m.st.cuda_mallocs, 1);
    assert_int_equal(b[3]->addr, b[0]->addr + 15 * MiB);
    vt_cache_free(&m, b[0]);
    vt_cache_free(&m, b[2]);
    struct vt_cache_failure why;
    assert_null(vt_cache_malloc(&m, 8 * MiB, 0, &why));
    assert_int_equal(why.free_cached, 10 * MiB);
    assert_int_equal(why.largest_free, 5 * MiB);
    assert_int_equal(why.device_free, 0);
    assert_int_equal(m.st.flushes, 1);
    assert_int_equal(m.st.reserved, 20 * MiB);
    vt_cache_destroy(&m);
}

/* max_split_size 40 MiB on a 200 MiB device: live 60, cached free 100.
 * 50 MiB: the 100 block is refused (100 >= 50 + 20), cudaMalloc would
 * exceed (160 + 50), so the oversize 100 MiB block is released first and
 * the retry succeeds without a full flush. */
static void test_release_oversize(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("max_split_size_mb:40");
    vt_cache_init(&m, &c, 200 * MiB);
    struct vt_cache_block *big = vt_cache_malloc(&m, 100 * MiB, 0, NULL);
    assert_non_null(vt_cache_malloc(&m, 60 * MiB, 0, NULL));
    vt_cache_free(&m, big);
    assert_non_null(vt_cache_malloc(&m, 50 * MiB, 0, NULL));
    assert_int_equal(m.st.flushes, 0);
    assert_int_equal(m.st.cuda_frees, 1);
    assert_int_equal(m.st.reserved, 110 * MiB);
    vt_cache_destroy(&m);
}

/* garbage_collection_threshold 0.5 with fraction 1.0 of 100 MiB: two
 * cached whole segments (30 + 26) put reserved at 56 > 50; a 40 MiB miss
 * collects: both blocks have age 1 (>= the mean), so both go. */
static void test_garbage_collection(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c =
        cfg_of("garbage_collection_threshold:0.5,per_process_memory_fraction:1.0");
    vt_cache_init(&m, &c, 100 * MiB);
    struct vt_cache_block *a = vt_cache_malloc(&m, 30 * MiB, 0, NULL);
    struct vt_cache_block *b = vt_cache_malloc(&m, 26 * MiB, 0, NULL);
    vt_cache_free(&m, a);
    vt_cache_free(&m, b);
    assert_non_null(vt_cache_malloc(&m, 40 * MiB, 0, NULL));
    assert_int_equal(m.st.gc_releases, 2);
    assert_int_equal(m.st.reserved, 40 * MiB);
    vt_cache_destroy(&m);
}

/* expandable segments: 5 MiB maps one 20 MiB page (rest 15 free, split
 * at >= 512 B); 30 MiB grows the same range: the free 15 MiB plus one
 * more page -> the block starts right after the first one. empty_cache
 * after freeing everything unmaps every page. */
static void test_expandable(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("expandable_segments:True");
    vt_cache_init(&m, &c, 0);
    struct vt_cache_block *a = vt_cache_malloc(&m, 5 * MiB, 0, NULL);
    assert_non_null(a);
    assert_int_equal(m.st.reserved, 20 * MiB);
    struct vt_cache_block *b = vt_cache_malloc(&m, 30 * MiB, 0, NULL);
    assert_non_null(b);
    assert_int_equal(b->addr, a->addr + 5 * MiB);
    assert_int_equal(m.st.reserved, 40 * MiB);
    vt_cache_free(&m, b);
    vt_cache_empty_cache(&m);
    assert_int_equal(m.st.reserved, 20 * MiB); /* a's page stays */
    vt_cache_free(&m, a);
    vt_cache_empty_cache(&m);
    assert_int_equal(m.st.reserved, 0);
    assert_null(m.segments);
    vt_cache_destroy(&m);
}

/* Seeding: a 20 MiB segment with a live 4 MiB block at +6 MiB leaves
 * free blocks of 6 and 10 MiB. */
static void test_seed(void **state)
{
    (void)state;
    struct vt_cache_model m;
    struct vt_alloc_config c = cfg_of("");
    vt_cache_init(&m, &c, 0);
    assert_true(vt_cache_seed_segment(&m, 0x1000000000, 20 * MiB, 0, false));
    struct vt_cache_block *b =
        vt_cache_seed_block(&m, 0x1000000000 + 6 * MiB, 4 * MiB, 4 * MiB - 100);
    assert_non_null(b);
    uint64_t free_bytes, largest;
    vt_cache_free_space(&m, &free_bytes, &largest);
    assert_int_equal(free_bytes, 16 * MiB);
    assert_int_equal(largest, 10 * MiB);
    /* 6 MiB fits the 6 MiB hole exactly */
    struct vt_cache_block *d = vt_cache_malloc(&m, 6 * MiB, 0, NULL);
    assert_int_equal(d->addr, 0x1000000000);
    vt_cache_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_size),
        cmocka_unit_test(test_segment_sizes),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_split_rules),
        cmocka_unit_test(test_best_fit),
        cmocka_unit_test(test_max_split_size),
        cmocka_unit_test(test_flush_and_retry),
        cmocka_unit_test(test_fragmentation_oom),
        cmocka_unit_test(test_release_oversize),
        cmocka_unit_test(test_garbage_collection),
        cmocka_unit_test(test_expandable),
        cmocka_unit_test(test_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
