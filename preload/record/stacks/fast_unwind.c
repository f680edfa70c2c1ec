/*
 * The tracer's stack walker: a per-thread table of unwind rules, filled
 * from .eh_frame (cfi_rule.c), with libunwind's unw_backtrace() for every
 * stack the table cannot describe. See fast_unwind.h.
 *
 * Frame 0: vt_fast_backtrace is a small assembly entry that takes its
 * caller's registers as they are at the call (rip = the return address,
 * rsp = just above it, rbp untouched) and calls the C walker; when the
 * walker gives up, the entry JUMPS to unw_backtrace with the caller's
 * return address still on the stack, so that libunwind's answer is the one
 * it would have given called from the same place. The walker records the
 * return addresses exactly as libunwind's fast trace (Gtrace.c) does: each
 * frame's rule is the one for (return address - 1); the walk ends at the
 * outermost frame, at a return address below 0x4000, or at size entries.
 *
 * Cost: a frame's rule is found from its return address, which was just
 * loaded, and the next return address is loaded through the rule: the
 * walk is a chain of dependent loads. A frame-pointer frame (push rbp;
 * mov rsp, rbp) has its own kind, whose addresses come from rbp alone: its
 * rule only confirms the kind, through a predicted branch, and the chain
 * is rbp's (measured: ~2.5 ns a frame, rsp-based ~5.5, libunwind ~12).
 */
#define _GNU_SOURCE
#include "fast_unwind.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>

#include "cfi_rule.h"

/* Bumped when a module goes away; a thread whose table is older clears it. */
static atomic_uint generation;

void vt_fast_unwind_modules_gone(void)
{
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
}

#if VT_HAVE_FAST_UNWIND

/* The cuts (fast_unwind.h): n_cuts is published last, and the generation
 * bumped after it, so a table cleared for the new generation is refilled
 * with rules made against every range. A rule made meanwhile against half
 * a range is cleared with its table before a walk that asks for cuts can
 * use it (the recorder asks only once the cuts are set). */
static _Atomic uintptr_t cut_lo[VT_FAST_UNWIND_CUTS], cut_hi[VT_FAST_UNWIND_CUTS];
static atomic_int n_cuts;

void vt_fast_unwind_set_cuts(const uintptr_t *lo, const uintptr_t *hi, int n)
{
    if (n > VT_FAST_UNWIND_CUTS)
        n = VT_FAST_UNWIND_CUTS;
    atomic_store_explicit(&n_cuts, 0, memory_order_release);
    for (int i = 0; i < n; i++) {
        atomic_store_explicit(&cut_lo[i], lo[i], memory_order_relaxed);
        atomic_store_explicit(&cut_hi[i], hi[i], memory_order_relaxed);
    }
    atomic_store_explicit(&n_cuts, n < 0 ? 0 : n, memory_order_release);
    vt_fast_unwind_modules_gone();
}

static bool inside_a_cut(uint64_t ra)
{
    int n = atomic_load_explicit(&n_cuts, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        uintptr_t lo = atomic_load_explicit(&cut_lo[i], memory_order_relaxed);
        uintptr_t hi = atomic_load_explicit(&cut_hi[i], memory_order_relaxed);
        if (ra - 1 >= lo && ra - 1 < hi)
            return true;
    }
    return false;
}

/* Table: 4096 return addresses and their rules (64 KiB), open
 * addressing, a probe of at most PROBES slots; a full probe overwrites the
 * home slot (nothing is ever emptied, so no other rule's probe is cut
 * short). Keys and rules are two arrays of 8-byte entries: the slot's
 * address is one AND away from the return address (the walk's critical
 * path is load return address -> load its rule -> load the next return
 * address). */
#define TABLE_BITS 12
#define TABLE_SLOTS (1u << TABLE_BITS)
#define TABLE_BYTES sizeof(struct table)
#define PROBES 8

/* A frame larger than this (CFA - rsp) is left to libunwind: it guards
 * the walk against a stale or wrong rule sending it far off the stack. */
#define MAX_FRAME (16u << 20)

/* libunwind's fast trace stops at a return address below this. */
#define LOWEST_RETURN_ADDRESS 0x4000

/* The walker's kinds of frame: cfi_rule.h's, with the frame-pointer frame
 * (push rbp; mov rsp, rbp: CFA = rbp + 16, rbp saved at CFA - 16) apart,
 * and a return address inside a cut (its own kind kept beside it): tested
 * after all the others, so that a walk without cuts pays nothing for
 * them. */
enum frame_kind { K_FP, K_RSP, K_RBP, K_LAST, K_CUT, K_UNSUPPORTED };

struct rule {
    int32_t cfa_off;
    int16_t rbp_off;
    uint8_t kind;       /* enum frame_kind */
    uint8_t uncut_kind; /* K_CUT's: the kind a walk that does not stop there takes */
};

struct table {
    uint64_t ra[TABLE_SLOTS]; /* return address the rule is for; 0: empty */
    struct rule rule[TABLE_SLOTS];
};
_Static_assert(sizeof(struct table) == 16 * TABLE_SLOTS, "8 + 8 bytes a slot");

struct walker {
    struct table *table;      /* NULL until the first walk */
    unsigned gen;             /* generation the table was cleared at */
    unsigned long long subs;  /* the loader's unload count then */
    bool subs_known;
    bool no_table;            /* exiting (table unmapped) or out of memory */
    volatile sig_atomic_t busy; /* inside a walk: a signal handler's walk falls back */
    volatile sig_atomic_t locked; /* ... holding the loader's (or a once) lock: it gets nothing */
    struct vt_fast_unwind_counts counts;
};

static __thread struct walker thread_walker __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t table_key;
static bool table_key_ok;

/* The thread is going away: its table with it. A walk later in its exit
 * (another key's destructor) uses libunwind. */
static void release_table(void *p)
{
    if (thread_walker.table == p) {
        thread_walker.table = NULL;
        thread_walker.no_table = true;
    }
    munmap(p, TABLE_BYTES);
}

static void make_key(void)
{
    table_key_ok = pthread_key_create(&table_key, release_table) == 0;
}

static void set_locked(struct walker *w, int on)
{
    atomic_signal_fence(memory_order_seq_cst);
    w->locked = on;
    atomic_signal_fence(memory_order_seq_cst);
}

/* A usable, current table, or false (then this walk falls back). */
static bool table_ready(struct walker *w)
{
    unsigned gen = atomic_load_explicit(&generation, memory_order_acquire);
    if (w->table == NULL) {
        if (w->no_table)
            return false;
        set_locked(w, 1); /* pthread_once, and setspecific may allocate */
        pthread_once(&key_once, make_key);
        void *m = MAP_FAILED;
        if (table_key_ok)
            m = mmap(NULL, TABLE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m != MAP_FAILED && pthread_setspecific(table_key, m) != 0) {
            munmap(m, TABLE_BYTES); /* could not arrange its release */
            m = MAP_FAILED;
        }
        set_locked(w, 0);
        if (m == MAP_FAILED) {
            w->no_table = true;
            return false;
        }
        w->table = m; /* fresh mappings are zero: all slots empty */
    } else {
        memset(w->table, 0, TABLE_BYTES);
    }
    w->gen = gen;
    w->subs_known = false;
    return true;
}

/* The low bits of the return address: call sites lie at least a call
 * instruction apart, so those within 4 KiB of code never share a slot,
 * and the walk's critical path (load the return address, find its rule,
 * load the next one) gets no multiply. */
static inline unsigned home_slot(uint64_t ra)
{
    return (unsigned)ra & (TABLE_SLOTS - 1);
}

/* The rule for ra when its home slot holds another: probe on, or derive
 * it from .eh_frame. NULL: give this walk to libunwind (the loader
 * unloaded something since the table was filled: it is cleared). */
static __attribute__((noinline)) const struct rule *rule_miss(struct walker *w, uint64_t ra)
{
    struct table *t = w->table;
    unsigned home = home_slot(ra), at = home;
    for (unsigned i = 0; i < PROBES; i++) {
        unsigned s = (home + i) & (TABLE_SLOTS - 1);
        if (t->ra[s] == ra)
            return &t->rule[s];
        if (t->ra[s] == 0) {
            at = s;
            break;
        }
    }
    unsigned long long subs;
    bool have_subs;
    set_locked(w, 1);
    struct vt_cfi_rule rule = vt_cfi_rule_for(ra - 1, &subs, &have_subs);
    set_locked(w, 0);
    w->counts.rules_built++;
    if (have_subs) {
        if (w->subs_known && subs != w->subs) {
            memset(w->table, 0, TABLE_BYTES);
            w->subs = subs;
            return NULL;
        }
        w->subs = subs;
        w->subs_known = true;
    }
    struct rule *r = &t->rule[at];
    r->cfa_off = rule.cfa_off;
    r->rbp_off = rule.rbp_off;
    switch (rule.kind) {
    case VT_CFI_RSP: /* a frame over MAX_FRAME is libunwind's */
        r->kind = rule.cfa_off - 8 <= (int32_t)MAX_FRAME ? K_RSP : K_UNSUPPORTED;
        break;
    case VT_CFI_RBP:
        r->kind = rule.cfa_off == 16 && rule.rbp_off == -16 ? K_FP : K_RBP;
        break;
    case VT_CFI_LAST: r->kind = K_LAST; break;
    default: r->kind = K_UNSUPPORTED; break;
    }
    if (r->kind == K_UNSUPPORTED)
        w->counts.unsupported++;
    r->uncut_kind = r->kind;
    if (inside_a_cut(ra))
        r->kind = K_CUT;
    t->ra[at] = ra;
    return r;
}

/* A word of the stack (a macro: an inlined function could be sanitized). */
#define LOAD_WORD(dst, at) __builtin_memcpy(&(dst), (const void *)(uintptr_t)(at), sizeof(dst))

/* Called by vt_fast_backtrace with its caller's registers; returns the
 * number of entries, or -1: walk with unw_backtrace instead. to_cut: end
 * at a return address inside a cut. Reads saved registers of other
 * frames: not for the address sanitizer. */
int vt_fast_walk(void **buf, int size, uint64_t rip, uint64_t rsp, uint64_t rbp, int to_cut)
    __attribute__((used, no_sanitize("address")));
int vt_fast_walk(void **buf, int size, uint64_t rip, uint64_t rsp, uint64_t rbp, int to_cut)
{
    struct walker *w = &thread_walker;
    if (w->busy) {
        /* a signal handler's walk inside this thread's walk: the table may
         * be half-written, libunwind is safe, unless the interrupted walk
         * holds a lock libunwind may take too (fast_unwind.h) */
        w->counts.reentered++;
        if (w->locked) {
            w->counts.declined++;
            return 0;
        }
        w->counts.fallback++;
        return -1;
    }
    if (size <= 0)
        return -1; /* libunwind's answer (0), without counting a walk */
    w->busy = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(w->table == NULL ||
                             w->gen != atomic_load_explicit(&generation, memory_order_relaxed),
                         0) &&
        !table_ready(w))
        goto fallback;
    const struct table *table = w->table;
    void **out = buf, **end = buf + size;
    *out++ = (void *)(uintptr_t)rip;
    while (out < end) {
        unsigned at = home_slot(rip);
        const struct rule *s = &table->rule[at];
        if (__builtin_expect(table->ra[at] != rip, 0)) {
            s = rule_miss(w, rip);
            if (s == NULL)
                goto fallback;
        }
        unsigned kind = s->kind;
        uint64_t cfa, ra;
    this_kind:
        if (kind == K_FP) {
            /* Addresses from rbp alone: the rule's lookup only confirms
             * the kind (a predicted branch), the next frame's loads need
             * not wait for it. rbp could be anything if a rule were wrong:
             * the CFA must move up the stack, past the return address, by
             * a sane amount. */
            cfa = rbp + 16;
            if (cfa - 8 - rsp > MAX_FRAME)
                goto fallback;
            LOAD_WORD(ra, rbp + 8);
            LOAD_WORD(rbp, rbp);
        } else if (kind == K_RSP) {
            /* 8 <= k <= MAX_FRAME + 8: checked when made */
            cfa = rsp + (uint64_t)(int64_t)s->cfa_off;
            LOAD_WORD(ra, cfa - 8);
            /* the saved rbp lies at or above rsp (cfi_rule.c) */
            if (s->rbp_off)
                LOAD_WORD(rbp, cfa + (uint64_t)(int64_t)s->rbp_off);
        } else if (kind == K_RBP) {
            cfa = rbp + (uint64_t)(int64_t)s->cfa_off;
            if (cfa - 8 - rsp > MAX_FRAME)
                goto fallback;
            LOAD_WORD(ra, cfa - 8);
            /* the saved rbp lies at or above rsp - 120 (cfi_rule.c), within
             * the red zone at worst */
            if (s->rbp_off)
                LOAD_WORD(rbp, cfa + (uint64_t)(int64_t)s->rbp_off);
        } else if (kind == K_LAST) {
            break;
        } else if (kind == K_CUT) {
            if (to_cut) {
                w->counts.cut++;
                break;
            }
            kind = s->uncut_kind;
            goto this_kind;
        } else {
            goto fallback;
        }
        rsp = cfa;
        if (ra < LOWEST_RETURN_ADDRESS)
            break;
        *out++ = (void *)(uintptr_t)ra;
        rip = ra;
    }
    w->counts.fast++;
    atomic_signal_fence(memory_order_seq_cst);
    w->busy = 0;
    return (int)(out - buf);
fallback:
    w->counts.fallback++;
    atomic_signal_fence(memory_order_seq_cst);
    w->busy = 0;
    return -1;
}

static inline __attribute__((always_inline, no_sanitize("address"))) int
walk_from(void **buf, int size, const void *frame, int to_cut)
{
    uint64_t rbp, ra;
    LOAD_WORD(rbp, (uintptr_t)frame);
    LOAD_WORD(ra, (uintptr_t)frame + 8);
    return vt_fast_walk(buf, size, ra, (uint64_t)(uintptr_t)frame + 16, rbp, to_cut);
}

int vt_fast_backtrace_from(void **buf, int size, const void *frame)
    __attribute__((no_sanitize("address")));
int vt_fast_backtrace_from(void **buf, int size, const void *frame)
{
    return walk_from(buf, size, frame, 0);
}

int vt_fast_backtrace_from_to_cut(void **buf, int size, const void *frame)
    __attribute__((no_sanitize("address")));
int vt_fast_backtrace_from_to_cut(void **buf, int size, const void *frame)
{
    return walk_from(buf, size, frame, 1);
}

void vt_fast_unwind_counts(struct vt_fast_unwind_counts *out)
{
    *out = thread_walker.counts;
}

#if defined(__CET__)
#define VT_ENDBR "endbr64\n"
#else
#define VT_ENDBR ""
#endif

/* int vt_fast_backtrace(void **buf, int size)
 * At entry: rdi = buf, esi = size, (rsp) = the caller's return address,
 * rbp = the caller's. Two pushes and 8 bytes keep the call to the walker
 * 16-byte aligned; buf and size are restored for the jump to libunwind. */
__asm__(
    ".text\n"
    ".p2align 4\n"
    ".globl vt_fast_backtrace\n"
    ".hidden vt_fast_backtrace\n"
    ".type vt_fast_backtrace, @function\n"
    "vt_fast_backtrace:\n"
    ".cfi_startproc\n"
    VT_ENDBR
    "    pushq %rdi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    pushq %rsi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    subq $8, %rsp\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    movq 24(%rsp), %rdx\n"   /* rip: the return address */
    "    leaq 32(%rsp), %rcx\n"   /* rsp: the caller's, after the return */
    "    movq %rbp, %r8\n"        /* rbp: the caller's */
    "    xorl %r9d, %r9d\n"       /* to_cut: no */
    "    call vt_fast_walk\n"
    "    addq $8, %rsp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rsi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rdi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    testl %eax, %eax\n"
    "    js 1f\n"
    "    ret\n"
    "1:  jmp unw_backtrace@PLT\n"
    ".cfi_endproc\n"
    ".size vt_fast_backtrace, .-vt_fast_backtrace\n");

#else /* !VT_HAVE_FAST_UNWIND */

void vt_fast_unwind_set_cuts(const uintptr_t *lo, const uintptr_t *hi, int n)
{
    (void)lo, (void)hi, (void)n;
}

void vt_fast_unwind_counts(struct vt_fast_unwind_counts *out)
{
    memset(out, 0, sizeof *out);
}

#endif
