/*
 * The tracer's own stack walker (preload/record/stacks/fast_unwind.h) against
 * libunwind. For stacks of many shapes (frames.h), vt_fast_backtrace must
 * return exactly what unw_backtrace returns called from the same place,
 * and must have answered from its own rules (its counters say so: a
 * walker that always handed the walk to libunwind would fail here),
 * except where it has to hand over: a signal frame on the stack, a walk
 * begun by a signal handler inside another walk.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "cfi_rule.h"
#include "fast_unwind.h"
#include "frames.h"
#include "reference_walk.h"

#define MAX_FRAMES 1024

typedef int (*walker_fn)(void **buf, int size);

/* ---- walking both ways from one call site ---- */

/* Every walk is made from this one call instruction, so buf[0] (the
 * return address into here) and all below are the same for both walkers. */
static __attribute__((noinline)) int walk_with(walker_fn fn, void **buf, int size)
{
    int n = fn(buf, size);
    fu_sink = n;
    return n;
}

struct walk_result {
    int n_ref, n_fast;
    bool equal;
    bool fast;      /* answered from the rules */
    bool fell_back; /* handed to libunwind */
    bool declined;  /* no stack: a handler's walk inside a walk holding the loader's lock */
};

struct walk_bufs {
    void *ref[MAX_FRAMES], *fast[MAX_FRAMES];
};

/* The loop bound is opaque so that the loop (and its one call) stays. */
static volatile int two_walks = 2;

static __attribute__((noinline)) void walk_both(walker_fn ref, struct walk_bufs *b, int size,
                                                 struct walk_result *out)
{
    /* one call instruction, no branch on the walk's index around it: a
     * compiler that duplicated the call would fail every comparison */
    walker_fn fn[2] = {vt_fast_backtrace, ref};
    void **buf[2] = {b->fast, b->ref};
    struct vt_fast_unwind_counts c[3];
    int n[2] = {0, 0};
    vt_fast_unwind_counts(&c[0]);
    c[2] = c[1] = c[0];
    for (int i = 0; i < two_walks; i++) {
        n[i] = walk_with(fn[i], buf[i], size);
        vt_fast_unwind_counts(&c[i + 1]);
        /* libunwind would deadlock where the walker declined */
        if (c[1].declined != c[0].declined)
            break;
    }
    out->declined = c[1].declined == c[0].declined + 1;
    if (out->declined)
        n[1] = 0; /* the walker's answer: nothing */
    out->n_fast = n[0];
    out->n_ref = n[1];
    out->equal = n[0] == n[1] && memcmp(b->fast, b->ref, (size_t)n[0] * sizeof(void *)) == 0;
    out->fast = c[1].fast == c[0].fast + 1 && c[1].fallback == c[0].fallback;
    out->fell_back = c[1].fallback == c[0].fallback + 1 && c[1].fast == c[0].fast;
}

static void print_mismatch(const struct walk_bufs *b, const struct walk_result *r)
{
    int n = r->n_ref > r->n_fast ? r->n_ref : r->n_fast;
    fprintf(stderr, "libunwind %d frames, fast %d frames:\n", r->n_ref, r->n_fast);
    for (int i = 0; i < n; i++) {
        Dl_info info;
        const void *ip = i < r->n_ref ? b->ref[i] : b->fast[i];
        const char *name = dladdr(ip, &info) && info.dli_sname ? info.dli_sname : "?";
        fprintf(stderr, "  %3d %18p %18p %s%s\n", i, i < r->n_ref ? b->ref[i] : NULL,
                i < r->n_fast ? b->fast[i] : NULL, name,
                i < r->n_ref && i < r->n_fast && b->ref[i] == b->fast[i] ? "" : "   <--");
    }
}

/* ---- a stack per plan, compared at its end ---- */

struct compare_case {
    walker_fn ref;
    int size;
    bool expect_fast;
    struct walk_bufs *bufs;
    struct walk_result result;
};

static int act_compare(void *arg)
{
    struct compare_case *c = arg;
    walk_both(c->ref, c->bufs, c->size, &c->result);
    return 1;
}

static struct walk_bufs main_bufs;

static void check_plan(const char *plan, int size, bool expect_fast)
{
    struct compare_case c = {unw_backtrace, size, expect_fast, &main_bufs, {0}};
    fu_next(plan, act_compare, &c);
    if (!c.result.equal) {
        fprintf(stderr, "plan \"%s\", size %d:\n", plan, size);
        print_mismatch(&main_bufs, &c.result);
    }
    assert_true(c.result.equal);
    assert_true(expect_fast ? c.result.fast : c.result.fell_back);
}

/* Mixed plans from a seeded generator. */
static void mixed_plan(char *plan, int len, unsigned *seed, const char *letters)
{
    size_t k = strlen(letters);
    for (int i = 0; i < len; i++) {
        *seed = *seed * 1103515245u + 12345u;
        plan[i] = letters[(*seed >> 16) % k];
    }
    plan[len] = '\0';
}

static void test_depths_with_frame_pointers(void **state)
{
    (void)state;
    char plan[201];
    for (int d = 1; d <= 200; d++) {
        memset(plan, 'f', (size_t)d);
        plan[d] = '\0';
        check_plan(plan, MAX_FRAMES, true);
    }
}

static void test_depths_without_frame_pointers(void **state)
{
    (void)state;
    char plan[201];
    for (int d = 1; d <= 200; d++) {
        memset(plan, 'n', (size_t)d);
        plan[d] = '\0';
        check_plan(plan, MAX_FRAMES, true);
    }
}

static void test_depths_mixed_shapes(void **state)
{
    (void)state;
    char plan[201];
    unsigned seed = 12345;
    for (int d = 1; d <= 200; d++) {
        mixed_plan(plan, d, &seed, "fnAaVvRrBbo");
        check_plan(plan, MAX_FRAMES, true);
    }
}

/* A frame no rule can describe: the whole walk is libunwind's, anywhere
 * in the stack. */
static void test_unsupported_frame_falls_back(void **state)
{
    (void)state;
    static const char *const plans[] = {"x", "fx", "xn", "fnxanR", "ooxoo", "sxs"};
    for (int round = 0; round < 2; round++) /* the second time from the cached answer */
        for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
            check_plan(plans[i], MAX_FRAMES, false);
    check_plan("fnaoRs", MAX_FRAMES, true);
}

static void test_shared_library_and_plt(void **state)
{
    (void)state;
    static const char *const plans[] = {"s", "ss", "fs", "sn", "snsfs", "asAsvsVsrsRsbsBs",
                                        "sssssssssssssssssssssssssssssss"};
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++)
        check_plan(plans[i], MAX_FRAMES, true);
    char plan[121];
    unsigned seed = 777;
    for (int d = 1; d <= 120; d++) {
        mixed_plan(plan, d, &seed, "fnasvR");
        check_plan(plan, MAX_FRAMES, true);
    }
}

/* Asked for fewer frames than the stack has: both stop at the same one. */
static void test_every_size(void **state)
{
    (void)state;
    char plan[41];
    unsigned seed = 99;
    mixed_plan(plan, 40, &seed, "fnAaVvRrBbs");
    struct compare_case c = {unw_backtrace, MAX_FRAMES, true, &main_bufs, {0}};
    fu_next(plan, act_compare, &c);
    int total = c.result.n_ref;
    assert_true(total > 40);
    for (int size = 1; size <= total + 2; size++)
        check_plan(plan, size, true);
}

/* ---- which rules the frames got ---- */

static struct vt_cfi_rule rule_for_return_address(const void *ra)
{
    unsigned long long subs;
    bool have_subs;
    return vt_cfi_rule_for((uint64_t)(uintptr_t)ra - 1, &subs, &have_subs);
}

static const char *function_of(const void *ip)
{
    Dl_info info;
    return dladdr(ip, &info) && info.dli_sname ? info.dli_sname : "";
}

static void test_rule_kinds(void **state)
{
    (void)state;
    struct compare_case c = {unw_backtrace, MAX_FRAMES, true, &main_bufs, {0}};
    fu_next("nafbro", act_compare, &c);
    assert_true(c.result.equal && c.result.fast);
    int seen = 0;
    for (int i = 0; i < c.result.n_ref; i++) {
        const char *fn = function_of(main_bufs.ref[i]);
        struct vt_cfi_rule r = rule_for_return_address(main_bufs.ref[i]);
        if (!strcmp(fn, "fu_frame_nofp")) {
            assert_int_equal(r.kind, VT_CFI_RSP);
            seen |= 1;
        } else if (!strcmp(fn, "fu_frame_alloca_nofp")) {
            assert_int_equal(r.kind, VT_CFI_RBP); /* variable size: rbp-based */
            seen |= 2;
        } else if (!strcmp(fn, "fu_frame_fp")) {
            assert_int_equal(r.kind, VT_CFI_RBP);
            assert_int_equal(r.rbp_off, -16);
            seen |= 4;
        } else if (!strcmp(fn, "fu_frame_big_nofp")) {
            assert_int_equal(r.kind, VT_CFI_RSP);
            assert_true(r.cfa_off > 6000);
            seen |= 8;
        } else if (!strcmp(fn, "fu_frame_regs_nofp")) {
            assert_int_equal(r.kind, VT_CFI_RSP);
            assert_true(r.rbp_off < 0); /* rbp used as a register, saved */
            seen |= 16;
        } else if (!strcmp(fn, "fu_frame_rbp_late")) {
            assert_int_equal(r.kind, VT_CFI_RBP);
            assert_int_equal(r.cfa_off, 24);
            assert_int_equal(r.rbp_off, -24);
            seen |= 32;
        }
    }
    assert_int_equal(seen, 63);
    /* a CFA expression: no rule */
    c.expect_fast = false;
    fu_next("x", act_compare, &c);
    assert_true(c.result.equal && c.result.fell_back);
    bool expr_seen = false;
    for (int i = 0; i < c.result.n_ref; i++)
        if (!strcmp(function_of(main_bufs.ref[i]), "fu_frame_cfa_expr")) {
            assert_int_equal(rule_for_return_address(main_bufs.ref[i]).kind, VT_CFI_UNSUPPORTED);
            expr_seen = true;
        }
    assert_true(expr_seen);
    /* the main thread's stack ends in _start, whose return address is undefined */
    struct vt_cfi_rule outer = rule_for_return_address(main_bufs.ref[c.result.n_ref - 1]);
    assert_int_equal(outer.kind, VT_CFI_LAST);
}

/* ---- signal handlers ---- */

static struct walk_bufs sig_bufs;
static struct walk_result sig_result;
static volatile sig_atomic_t sig_ran;

static void on_usr1(int sig)
{
    (void)sig;
    walk_both(unw_backtrace, &sig_bufs, MAX_FRAMES, &sig_result);
    sig_ran = 1;
}

static int act_raise(void *arg)
{
    (void)arg;
    raise(SIGUSR1);
    return 1;
}

static void raise_through(const char *plan, bool on_alt_stack)
{
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = on_alt_stack ? SA_ONSTACK : 0;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
    sig_ran = 0;
    fu_next(plan, act_raise, NULL);
    assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
    assert_true(sig_ran);
    if (!sig_result.equal)
        print_mismatch(&sig_bufs, &sig_result);
    assert_true(sig_result.equal);
    /* the signal frame has no rule (glibc's __restore_rt: 'S' augmentation
     * and expressions): the whole walk is libunwind's */
    assert_true(sig_result.fell_back);
    assert_true(sig_result.n_ref > (int)strlen(plan));
}

static void test_signal_handler_falls_back(void **state)
{
    (void)state;
    raise_through("fnaRs", false);
    raise_through("nnnnnnnnnnnnnnnnnnnnnnnnnnnnnn", false);
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0}, old;
    assert_int_equal(sigaltstack(&ss, &old), 0);
    raise_through("fnaRs", true);
    assert_int_equal(sigaltstack(&old, NULL), 0);
    /* and the walker is back on its own rules afterwards */
    check_plan("fnaRs", MAX_FRAMES, true);
}

/* A signal handler's walk begun INSIDE another walk: the trap flag stops
 * the walk after every instruction and the SIGTRAP handler walks then. */
static struct {
    unsigned every;
    unsigned steps, checked, mismatches, declined;
    struct walk_bufs bufs;
} trap;

static void on_trap(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    if (trap.every == 0 || ++trap.steps % trap.every != 0)
        return;
    struct walk_result r;
    walk_both(unw_backtrace, &trap.bufs, MAX_FRAMES, &r);
    if (r.declined) {
        trap.declined++;
        return;
    }
    trap.checked++;
    if (!r.equal || !r.fell_back)
        trap.mismatches++;
}

static __attribute__((noinline)) int stepped_walk(void **buf, int size)
{
    __asm__ volatile("pushfq\n orq $0x100, (%%rsp)\n popfq" ::: "memory", "cc");
    int n = vt_fast_backtrace(buf, size);
    __asm__ volatile("pushfq\n andq $~0x100, (%%rsp)\n popfq" ::: "memory", "cc");
    fu_sink = n;
    return n;
}

static __attribute__((noinline)) int plain_walk(void **buf, int size)
{
    int n = unw_backtrace(buf, size);
    fu_sink = n;
    return n;
}

struct stepped_case {
    unsigned every;
    struct walk_bufs bufs;
    int n_stepped, n_ref;
    struct vt_fast_unwind_counts before, after;
};

static int act_stepped(void *arg)
{
    struct stepped_case *s = arg;
    walker_fn fn[2] = {stepped_walk, plain_walk};
    void **buf[2] = {s->bufs.fast, s->bufs.ref};
    struct vt_fast_unwind_counts c[3];
    int n[2] = {0, 0};
    trap.every = s->every; /* only stepped_walk sets the trap flag */
    vt_fast_unwind_counts(&c[0]);
    for (int i = 0; i < two_walks; i++) {
        n[i] = walk_with(fn[i], buf[i], MAX_FRAMES);
        vt_fast_unwind_counts(&c[i + 1]);
    }
    trap.every = 0;
    s->before = c[0];
    s->after = c[1];
    s->n_stepped = n[0];
    s->n_ref = n[1];
    return 1;
}

static void stepped(const char *plan, unsigned every, bool builds_rules)
{
    static struct stepped_case s;
    /* for a cached walk, a first pass unchecked puts every rule of this
     * very path in the table (one call site for both passes) */
    for (int pass = builds_rules ? 1 : 0; pass < two_walks; pass++) {
        memset(&s, 0, sizeof s);
        s.every = pass == 1 ? every : 0;
        memset(&trap, 0, sizeof trap);
        fu_next(plan, act_stepped, &s);
    }
    fprintf(stderr, "stepped walk of \"%s\": %u instructions, %u handler walks compared, %u declined\n",
            plan, trap.steps, trap.checked, trap.declined);
    /* stepped_walk and plain_walk differ in the innermost entry only */
    assert_int_equal(s.n_stepped, s.n_ref);
    assert_true(s.n_ref > (int)strlen(plan));
    assert_memory_equal(s.bufs.fast + 1, s.bufs.ref + 1, (size_t)(s.n_ref - 1) * sizeof(void *));
    assert_true(trap.steps > 50);
    assert_true(trap.checked > 0);
    assert_int_equal(trap.mismatches, 0);
    /* the stepped walk itself ran on the rules; the handlers' walks inside
     * it found it busy and went to libunwind */
    assert_int_equal(s.after.fast, s.before.fast + 1);
    assert_true(s.after.reentered > s.before.reentered);
    /* only a walk that reads the module list declines the handler's */
    if (builds_rules)
        assert_true(trap.declined > 0);
    else
        assert_int_equal(trap.declined, 0);
    assert_int_equal(s.after.declined - s.before.declined, trap.declined);
}

static void test_walk_interrupted_by_a_handler_walk(void **state)
{
    (void)state;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGTRAP, &sa, &old), 0);
    stepped("fnaRsbv", 1, false);            /* every instruction of a cached walk */
    vt_fast_unwind_modules_gone();
    stepped("fnaRsbv", 97, true); /* a walk that builds its rules (dl_iterate_phdr, CFI) */
    assert_int_equal(sigaction(SIGTRAP, &old, NULL), 0);
}

/* ---- threads ---- */

struct thread_run {
    unsigned seed;
    int runs, unequal, not_fast;
    struct walk_bufs bufs;
    struct vt_fast_unwind_counts counts;
};

static void *thread_main(void *arg)
{
    struct thread_run *t = arg;
    char plan[61];
    for (int i = 0; i < 150; i++) {
        mixed_plan(plan, 1 + (int)(t->seed >> 8) % 60, &t->seed, "fnAaVvRrBbso");
        struct compare_case c = {unw_backtrace, MAX_FRAMES, true, &t->bufs, {0}};
        fu_next(plan, act_compare, &c);
        t->runs++;
        t->unequal += !c.result.equal;
        t->not_fast += !c.result.fast;
    }
    vt_fast_unwind_counts(&t->counts);
    return NULL;
}

static void test_threads_at_once(void **state)
{
    (void)state;
    enum { N = 4 };
    static struct thread_run runs[N];
    pthread_t th[N];
    for (int i = 0; i < N; i++) {
        memset(&runs[i], 0, sizeof runs[i]);
        runs[i].seed = 1000u + (unsigned)i;
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &runs[i]), 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(runs[i].runs, 150);
        assert_int_equal(runs[i].unequal, 0);
        assert_int_equal(runs[i].not_fast, 0);
        /* each thread built its own table */
        assert_int_equal(runs[i].counts.fast, 150);
        assert_true(runs[i].counts.rules_built > 0);
    }
}

/* ---- modules that go away ---- */

typedef void (*swap_entry_fn)(int (*cb)(void *), void *arg);

static int act_swap(void *arg)
{
    return act_compare(arg);
}

static struct walk_result through_swap_library(swap_entry_fn entry)
{
    struct compare_case c = {fu_fresh_libunwind, MAX_FRAMES, true, &main_bufs, {0}};
    entry(act_swap, &c);
    return c.result;
}

static void *open_swap(const char *env, swap_entry_fn *entry)
{
    const char *path = getenv(env);
    assert_non_null(path);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(h);
    *entry = (swap_entry_fn)(uintptr_t)dlsym(h, "fu_swap_entry");
    assert_non_null(*entry);
    return h;
}

static void test_library_replaced_at_the_same_address(void **state)
{
    (void)state;
    swap_entry_fn a, b;
    void *ha = open_swap("FU_SWAP_A", &a);
    struct walk_result r = through_swap_library(a);
    assert_true(r.equal && r.fast);

    /* A goes, B comes where A was: same return address, another frame */
    assert_int_equal(dlclose(ha), 0);
    void *hb = open_swap("FU_SWAP_B", &b);
    assert_ptr_equal((void *)(uintptr_t)a, (void *)(uintptr_t)b);

    /* Unnoticed, the rule kept for A is wrong for B: the walk stops at
     * B's 0x1000 (this is what the scenario must catch) */
    r = through_swap_library(b);
    assert_true(r.fast);
    assert_false(r.equal);
    assert_true(r.n_fast < r.n_ref);

    /* what the dlclose hook does: the next walk starts from a clear table */
    vt_fast_unwind_modules_gone();
    r = through_swap_library(b);
    assert_true(r.equal && r.fast);

    /* and back: B goes, A comes, noticed this time */
    assert_int_equal(dlclose(hb), 0);
    vt_fast_unwind_modules_gone();
    ha = open_swap("FU_SWAP_A", &a);
    assert_ptr_equal((void *)(uintptr_t)a, (void *)(uintptr_t)b);
    r = through_swap_library(a);
    assert_true(r.equal && r.fast);
    assert_int_equal(dlclose(ha), 0);
    vt_fast_unwind_modules_gone();
    hb = open_swap("FU_SWAP_B", &b);
    r = through_swap_library(b);
    assert_true(r.equal && r.fast);
    assert_int_equal(dlclose(hb), 0);
    vt_fast_unwind_modules_gone();
}

/* Unloads the dlclose hook does not see (glibc's own) are found at the
 * next rule miss: the loader's unload counter moved, the table is cleared
 * and that walk is libunwind's. Each act_* below is a call site that no
 * walk has seen before, hence a miss. */
static int act_fresh_site_1(void *arg)
{
    walk_both(unw_backtrace, ((struct compare_case *)arg)->bufs, MAX_FRAMES,
              &((struct compare_case *)arg)->result);
    return 1;
}

static int act_fresh_site_2(void *arg)
{
    walk_both(unw_backtrace, ((struct compare_case *)arg)->bufs, MAX_FRAMES,
              &((struct compare_case *)arg)->result);
    return 2;
}

static void test_unload_seen_at_a_miss(void **state)
{
    (void)state;
    vt_fast_unwind_modules_gone();
    check_plan("fn", MAX_FRAMES, true); /* a table, and the loader's count noted */
    swap_entry_fn a;
    void *h = open_swap("FU_SWAP_A", &a);
    assert_int_equal(dlclose(h), 0); /* not announced */

    struct compare_case c = {unw_backtrace, MAX_FRAMES, false, &main_bufs, {0}};
    fu_next("fn", act_fresh_site_1, &c);
    assert_true(c.result.equal);
    assert_true(c.result.fell_back);

    struct vt_fast_unwind_counts before, after;
    vt_fast_unwind_counts(&before);
    fu_next("fn", act_fresh_site_2, &c);
    vt_fast_unwind_counts(&after);
    assert_true(c.result.equal && c.result.fast);
    /* every frame's rule was built again */
    assert_true(after.rules_built - before.rules_built >= (uint64_t)c.result.n_ref - 1);
}

/* ---- the CFI reader on damaged tables ---- */

struct module_find {
    const void *addr;
    struct vt_cfi_module m;
    uint64_t text_lo, text_hi;
};

static int find_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct module_find *f = arg;
    uint64_t a = (uint64_t)(uintptr_t)f->addr;
    struct vt_cfi_module m;
    memset(&m, 0, sizeof m);
    bool holds = false;
    uint64_t tlo = 0, thi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && m.nseg < VT_CFI_MAX_SEGMENTS) {
            m.seg[m.nseg].lo = lo;
            m.seg[m.nseg].hi = lo + ph->p_memsz;
            m.nseg++;
            if (a >= lo && a < lo + ph->p_memsz) {
                holds = true;
                tlo = lo;
                thi = lo + ph->p_memsz;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.hdr = lo;
            m.hdr_len = ph->p_memsz;
        }
    }
    if (!holds)
        return 0;
    f->m = m;
    f->text_lo = tlo;
    f->text_hi = thi;
    return 1;
}

/* The segment holds .rodata too, with the address sanitizer's redzones
 * between its constants: copied without looking. */
static __attribute__((noinline, no_sanitize("address"))) void copy_segment(uint8_t *to,
                                                                          uint64_t from,
                                                                          uint64_t len)
{
    const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)from;
    for (uint64_t i = 0; i < len; i++)
        to[i] = p[i];
}

static bool same_rule(struct vt_cfi_rule x, struct vt_cfi_rule y)
{
    return x.kind == y.kind && x.cfa_off == y.cfa_off && x.rbp_off == y.rbp_off;
}

static void test_rules_from_copied_and_damaged_tables(void **state)
{
    (void)state;
    struct module_find f = {.addr = (const void *)(uintptr_t)fu_frame_nofp};
    assert_int_equal(dl_iterate_phdr(find_module, &f), 1);
    assert_true(f.m.hdr != 0);
    /* the loaded segment holding .eh_frame_hdr (and, as ld lays it out, .eh_frame) */
    unsigned s = 0;
    while (s < f.m.nseg && !(f.m.hdr >= f.m.seg[s].lo && f.m.hdr < f.m.seg[s].hi))
        s++;
    assert_true(s < f.m.nseg);
    uint64_t lo = f.m.seg[s].lo, len = f.m.seg[s].hi - lo;
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    copy_segment(copy, lo, len);
    uint64_t delta = (uint64_t)(uintptr_t)copy - lo;
    struct vt_cfi_module cm = {.hdr = f.m.hdr + delta, .hdr_len = f.m.hdr_len, .nseg = 1};
    cm.seg[0].lo = (uint64_t)(uintptr_t)copy;
    cm.seg[0].hi = (uint64_t)(uintptr_t)copy + len;

    /* the copy describes the code exactly as the original does */
    unsigned described = 0;
    for (uint64_t ip = f.text_lo; ip < f.text_hi; ip += 3) {
        struct vt_cfi_rule o = vt_cfi_rule_in(&f.m, ip), c = vt_cfi_rule_in(&cm, ip + delta);
        assert_true(same_rule(o, c));
        described += o.kind != VT_CFI_UNSUPPORTED;
    }
    assert_true(described > 100);

    /* damaged copies (bytes changed, or cut short in an exactly sized
     * buffer): any answer, but no read outside (ASan says) and no crash */
    unsigned seed = 4242;
    uint64_t hdr_off = f.m.hdr - lo;
    for (int round = 0; round < 1500; round++) {
        seed = seed * 1103515245u + 12345u;
        uint64_t cut = round % 3 == 0 ? hdr_off + 4 + (seed >> 4) % (len - hdr_off - 4) : len;
        uint8_t *d = malloc(cut);
        assert_non_null(d);
        memcpy(d, copy, cut);
        for (int k = 0; k < 4; k++) {
            seed = seed * 1103515245u + 12345u;
            uint64_t at = hdr_off + (seed >> 3) % (cut - hdr_off);
            d[at] = (uint8_t)(seed >> 24);
        }
        uint64_t dd = (uint64_t)(uintptr_t)d - lo;
        struct vt_cfi_module dm = {.hdr = f.m.hdr + dd, .nseg = 1};
        dm.hdr_len = f.m.hdr_len < cut - hdr_off ? f.m.hdr_len : cut - hdr_off;
        dm.seg[0].lo = (uint64_t)(uintptr_t)d;
        dm.seg[0].hi = (uint64_t)(uintptr_t)d + cut;
        for (int q = 0; q < 40; q++) {
            seed = seed * 1103515245u + 12345u;
            uint64_t ip = f.text_lo + (seed >> 2) % (f.text_hi - f.text_lo);
            struct vt_cfi_rule r = vt_cfi_rule_in(&dm, ip + dd);
            assert_true(r.kind <= VT_CFI_UNSUPPORTED);
        }
        free(d);
    }
    free(copy);
}

/* ---- cuts: a walk that asks for them ends inside one ---- */

static void *cut_whole[MAX_FRAMES], *cut_try[MAX_FRAMES];

/* Every walk from one frame (the act's: from its caller on, as the
 * recorder walks from the hook's), so all give the same frames but for
 * where they end. */
static __attribute__((noinline)) int cut_walk(const void *frame, bool to_cut, void **buf)
{
    return to_cut ? vt_fast_backtrace_from_to_cut(buf, MAX_FRAMES, frame)
                  : vt_fast_backtrace_from(buf, MAX_FRAMES, frame);
}

static int act_cut_checks(void *arg)
{
    (void)arg;
    void *frame = __builtin_frame_address(0);
    assert_ptr_equal((char *)frame + 16, (char *)__builtin_dwarf_cfa()); /* a frame-pointer frame */
    vt_fast_unwind_set_cuts(NULL, NULL, 0);
    int whole = cut_walk(frame, false, cut_whole);
    assert_true(whole > 14);
    /* no cut set: the whole walk */
    assert_int_equal(cut_walk(frame, true, cut_try), whole);
    assert_memory_equal(cut_try, cut_whole, (size_t)whole * sizeof(void *));
    for (int k = 0; k < whole - 1; k++) {
        /* one call site as the cut, in either slot, beside a range that
         * holds no return address */
        uintptr_t ra = (uintptr_t)cut_whole[k];
        uintptr_t lo[2] = {1, 2}, hi[2] = {2, 3};
        lo[k & 1] = ra - 1;
        hi[k & 1] = ra;
        vt_fast_unwind_set_cuts(lo, hi, 2);
        int first = 0; /* the walk passes this call site first here */
        while (cut_whole[first] != cut_whole[k])
            first++;
        struct vt_fast_unwind_counts before, after;
        vt_fast_unwind_counts(&before);
        int n = cut_walk(frame, true, cut_try);
        vt_fast_unwind_counts(&after);
        if (n != first + 1)
            fprintf(stderr, "cut at frame %d of %d: %d frames\n", first, whole, n);
        assert_int_equal(n, first + 1);
        assert_memory_equal(cut_try, cut_whole, (size_t)n * sizeof(void *));
        assert_true(after.fast == before.fast + 1 && after.cut == before.cut + 1 &&
                    after.fallback == before.fallback);
        /* a walk that does not ask goes on through the cut's frame */
        assert_int_equal(cut_walk(frame, false, cut_try), whole);
        assert_memory_equal(cut_try, cut_whole, (size_t)whole * sizeof(void *));
    }
    vt_fast_unwind_set_cuts(NULL, NULL, 0);
    assert_int_equal(cut_walk(frame, true, cut_try), whole);
    return 1;
}

static void test_walk_ends_at_a_cut(void **state)
{
    (void)state;
    fu_next("fnAaRrBbsfnVv", act_cut_checks, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_depths_with_frame_pointers),
        cmocka_unit_test(test_depths_without_frame_pointers),
        cmocka_unit_test(test_depths_mixed_shapes),
        cmocka_unit_test(test_unsupported_frame_falls_back),
        cmocka_unit_test(test_shared_library_and_plt),
        cmocka_unit_test(test_every_size),
        cmocka_unit_test(test_rule_kinds),
        cmocka_unit_test(test_signal_handler_falls_back),
        cmocka_unit_test(test_walk_interrupted_by_a_handler_walk),
        cmocka_unit_test(test_threads_at_once),
        cmocka_unit_test(test_library_replaced_at_the_same_address),
        cmocka_unit_test(test_unload_seen_at_a_miss),
        cmocka_unit_test(test_rules_from_copied_and_damaged_tables),
        cmocka_unit_test(test_walk_ends_at_a_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
