/* The peak tracker: hand-checked peaks, and the lazy state against a
 * brute-force copy at every new maximum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pair_map.h"
#include "peak_tracker.h"

static void test_three_stacks(void **state)
{
    (void)state;
    struct vt_ledger_sites l;
    struct vt_peak_state s;
    vt_sites_init(&l);
    vt_peak_state_init(&s);
    /* A 100, B 200, free A, C 300 (peak 500 = B + C), free B, A 50. */
    vt_sites_change(&l, 1, 1, 100, 1);
    vt_peak_state_offer(&s, &l, 10);
    vt_sites_change(&l, 2, 1, 200, 1);
    vt_peak_state_offer(&s, &l, 20);
    vt_sites_change(&l, 1, 1, -100, -1);
    vt_sites_change(&l, 3, 2, 300, 1);
    assert_true(vt_peak_state_offer(&s, &l, 40));
    vt_sites_change(&l, 2, 1, -200, -1);
    vt_sites_change(&l, 1, 1, 50, 1);
    assert_false(vt_peak_state_offer(&s, &l, 60));
    assert_int_equal(s.peak_bytes, 500);
    assert_int_equal(s.peak_time_ns, 40);
    assert_int_equal(s.peak_count, 2);
    struct vt_site_bytes top[5];
    size_t n = vt_sites_top(&l, &s, top, 5);
    assert_int_equal(n, 2); /* A held nothing at the peak */
    assert_int_equal(top[0].stack, 3);
    assert_int_equal(top[0].thread, 2);
    assert_int_equal(top[0].bytes, 300);
    assert_int_equal(top[1].stack, 2);
    assert_int_equal(top[1].bytes, 200);
    /* The live state now: A 50, C 300. */
    n = vt_sites_top(&l, NULL, top, 1);
    assert_int_equal(n, 1);
    assert_int_equal(top[0].bytes, 300);
    assert_int_equal(l.total_bytes, 350);
    vt_peak_state_free(&s);
    vt_sites_free(&l);
}

/* The state at the peak, site by site, against the copy taken then. */
static void check_peak_state(const struct vt_ledger_sites *l, const struct vt_peak_state *s,
                             const int64_t *at_peak, size_t nsites, uint64_t peak)
{
    assert_int_equal(s->peak_bytes, peak);
    struct vt_site_bytes top[64];
    assert_true(nsites <= 64);
    size_t n = vt_sites_top(l, s, top, nsites);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(top[i].bytes, (uint64_t)at_peak[top[i].stack - 1]);
        if (i)
            assert_true(top[i].bytes <= top[i - 1].bytes);
        sum += top[i].bytes;
    }
    assert_int_equal(sum, peak); /* the breakdown adds up to the peak */
}

/* Random traffic over many sites; at every new maximum the state must
 * equal a full copy taken then; settled after the replay, the same, its
 * arrays no longer than the sites. */
static void test_against_brute_force(void **state)
{
    (void)state;
    enum { SITES = 40, STEPS = 20000 };
    struct vt_ledger_sites l;
    struct vt_peak_state s;
    vt_sites_init(&l);
    vt_peak_state_init(&s);
    int64_t live[SITES] = {0};
    int64_t at_peak[SITES] = {0};
    uint64_t total = 0, peak = 0;
    unsigned seed = 12345;
    for (int step = 0; step < STEPS; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned site = (seed >> 8) % SITES;
        int64_t delta;
        if (live[site] > 0 && (seed >> 20) % 3 == 0)
            delta = -(int64_t)((seed >> 4) % (uint64_t)live[site] + 1);
        else
            delta = (int64_t)((seed >> 12) % 1000 + 1);
        live[site] += delta;
        total += (uint64_t)delta;
        vt_sites_change(&l, site + 1, site % 3, delta, delta > 0 ? 1 : 0);
        if (delta > 0)
            vt_peak_state_offer(&s, &l, (uint64_t)step);
        if (total > peak) {
            peak = total;
            memcpy(at_peak, live, sizeof live);
        }
    }
    check_peak_state(&l, &s, at_peak, SITES, peak);
    assert_true(s.cap > l.nsites); /* grown by doubling: room to give back */
    vt_sites_settle(&l);
    vt_peak_state_settle(&s, l.nsites);
    assert_int_equal(s.cap, l.nsites);
    check_peak_state(&l, &s, at_peak, SITES, peak);
    vt_peak_state_free(&s);
    vt_sites_free(&l);
}

/* The sites' index (and the replay's live set): the open-addressing map
 * against a plain array, under random puts, put_news, removes by key and by
 * value pointer, on few keys with equal halves so that probe runs collide,
 * wrap around the table and are shifted back by removals. */
static void test_pair_map_against_reference(void **state)
{
    (void)state;
    enum { KEYS = 300, STEPS = 60000 };
    static uint64_t ref[KEYS]; /* value + 1, 0: absent */
    memset(ref, 0, sizeof ref);
    struct vt_pair_map m;
    vt_pair_map_init(&m);
    unsigned seed = 777;
    size_t count = 0;
    for (int step = 0; step < STEPS; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned k = (seed >> 8) % KEYS;
        uint64_t a = k % 7, b = (uint64_t)k * 0x100000000ull; /* few distinct a's */
        uint64_t *v = vt_pair_map_get(&m, a, b);
        assert_int_equal(v != NULL, ref[k] != 0);
        if (v)
            assert_int_equal(*v + 1, ref[k]);
        switch ((seed >> 20) % 4) {
        case 0: /* put (insert or overwrite) */
            assert_true(vt_pair_map_put(&m, a, b, (uint64_t)step));
            count += ref[k] == 0;
            ref[k] = (uint64_t)step + 1;
            break;
        case 1: /* put_new when absent, else remove_at */
            if (!v) {
                assert_true(vt_pair_map_put_new(&m, a, b, (uint64_t)step));
                ref[k] = (uint64_t)step + 1;
                count++;
            } else {
                vt_pair_map_remove_at(&m, v);
                ref[k] = 0;
                count--;
            }
            break;
        default: { /* remove by key */
            uint64_t old = 0;
            bool had = vt_pair_map_remove(&m, a, b, &old);
            assert_int_equal(had, ref[k] != 0);
            if (had) {
                assert_int_equal(old + 1, ref[k]);
                count--;
            }
            ref[k] = 0;
            break;
        }
        }
        assert_int_equal(m.count, count);
    }
    for (unsigned k = 0; k < KEYS; k++) {
        uint64_t *v = vt_pair_map_get(&m, k % 7, (uint64_t)k * 0x100000000ull);
        assert_int_equal(v != NULL, ref[k] != 0);
        if (v)
            assert_int_equal(*v + 1, ref[k]);
    }
    vt_pair_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_stacks),
        cmocka_unit_test(test_against_brute_force),
        cmocka_unit_test(test_pair_map_against_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
