/*
 * See fork_guard.h. Why not a reader-writer lock (what this was): every
 * recording call took and released it, two atomic read-modify-writes on ONE
 * cache line shared by all threads - about 40 ns a call on one thread, more
 * when threads record at once. Here a recording call touches only its own
 * thread's slot, with plain stores; the rare fork pays instead.
 *
 * The handshake is Dekker's: a thread stores "inside" into its slot and
 * then reads `forking`; fork's prepare handler stores `forking` and then
 * reads every slot. With a store-load barrier on both sides at least one
 * of them sees the other: the thread steps back and waits, or fork waits
 * for the thread to leave. The barrier is asymmetric (asym_fence.h): free
 * for the threads when the kernel has membarrier, paid by fork.
 */
#define _GNU_SOURCE
#include "fork_guard.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

#include "asym_fence.h"

/* Threads that get a slot of their own; more threads than this share one
 * counter (correct, just slower). A slot is given back at thread exit. */
#define VT_GUARD_SLOTS 1024

struct guard_slot {
    atomic_int inside; /* written by the owner (shared slot: by all) */
    atomic_int owned;
} __attribute__((aligned(64))); /* one cache line each: no false sharing */

static struct guard_slot slots[VT_GUARD_SLOTS];
static atomic_uint slots_used;        /* high-water mark: prepare scans this far */
static struct guard_slot shared_slot; /* threads without a slot of their own */
atomic_int vt_fork_guard_forking; /* a fork waits for the tracer, or runs (`forking` below) */
static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER; /* one fork at a time */

__thread struct vt_fork_guard_self vt_fork_guard_self __attribute__((tls_model("initial-exec")));

static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key;
static bool slot_key_ok;

/* The thread is going away: its slot can serve another thread. */
static void release_slot(void *p)
{
    struct guard_slot *s = p;
    if (s != vt_fork_guard_self.slot)
        return;
    vt_fork_guard_self.slot = NULL;
    vt_fork_guard_self.own_inside = NULL;
    atomic_store_explicit(&s->inside, 0, memory_order_release);
    atomic_store_explicit(&s->owned, 0, memory_order_release);
}

static void guard_init(void)
{
    slot_key_ok = pthread_key_create(&slot_key, release_slot) == 0;
    vt_asym_init();
}

static struct guard_slot *claim_slot(void)
{
    pthread_once(&guard_once, guard_init);
    if (slot_key_ok) {
        for (unsigned i = 0; i < VT_GUARD_SLOTS; i++) {
            int expected = 0;
            if (atomic_load_explicit(&slots[i].owned, memory_order_relaxed) == 0 &&
                atomic_compare_exchange_strong(&slots[i].owned, &expected, 1)) {
                unsigned used = atomic_load(&slots_used);
                while (used < i + 1 && !atomic_compare_exchange_weak(&slots_used, &used, i + 1))
                    ;
                if (pthread_setspecific(slot_key, &slots[i]) != 0) {
                    atomic_store(&slots[i].owned, 0);
                    break; /* could not arrange its release: share instead */
                }
                vt_fork_guard_self.slot = &slots[i];
                vt_fork_guard_self.own_inside = &slots[i].inside;
                return vt_fork_guard_self.slot;
            }
        }
    }
    vt_fork_guard_self.slot = &shared_slot;
    vt_fork_guard_self.own_inside = NULL;
    return vt_fork_guard_self.slot;
}

static void wait_a_little(unsigned *round)
{
    if (++*round < 64) {
        sched_yield();
    } else {
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Called with depth already 1 (fork_guard.h): the thread has no slot
 * yet, or shares one, or has just seen a fork pending after marking its
 * own slot (then it steps back first). */
void vt_fork_guard_enter_slow(struct vt_fork_guard_self *me)
{
    if (me->own_inside != NULL) /* marked, and saw `forking` */
        atomic_store_explicit(me->own_inside, 0, memory_order_release);
    struct guard_slot *s = me->slot;
    if (s == NULL)
        s = claim_slot();
    unsigned round = 0;
    for (;;) {
        int fork_on;
        if (s == &shared_slot) {
            atomic_fetch_add(&s->inside, 1); /* sequentially consistent */
            fork_on = atomic_load(&vt_fork_guard_forking);
        } else {
            /* prepare's vt_asym_heavy pairs with this */
            fork_on = vt_asym_store_load(&s->inside, 1, &vt_fork_guard_forking);
        }
        if (!fork_on)
            return;
        /* A fork is on its way: step back until it is done. */
        if (s == &shared_slot)
            atomic_fetch_sub_explicit(&s->inside, 1, memory_order_release);
        else
            atomic_store_explicit(&s->inside, 0, memory_order_release);
        while (atomic_load_explicit(&vt_fork_guard_forking, memory_order_acquire))
            wait_a_little(&round);
    }
}

/* The outermost leave of a thread without a slot of its own. */
void vt_fork_guard_leave_shared(struct vt_fork_guard_self *me)
{
    if (me->slot == &shared_slot)
        atomic_fetch_sub_explicit(&shared_slot.inside, 1, memory_order_release);
}

void vt_fork_guard_prepare(void)
{
    pthread_once(&guard_once, guard_init);
    pthread_mutex_lock(&fork_lock);
    atomic_store(&vt_fork_guard_forking, 1);
    vt_asym_heavy(); /* every thread's "inside" store is visible from here */
    /* A thread forking from inside the tracer (a signal handler's fork
     * during a hook) would wait for itself: its own slot is skipped. */
    bool self_inside = vt_fork_guard_self.depth > 0;
    unsigned used = atomic_load(&slots_used);
    for (unsigned i = 0; i < used; i++) {
        if (&slots[i] == vt_fork_guard_self.slot && self_inside)
            continue;
        unsigned round = 0;
        while (atomic_load(&slots[i].inside)) /* seq_cst: see vt_asym_store_load */
            wait_a_little(&round);
    }
    int own = self_inside && vt_fork_guard_self.slot == &shared_slot ? 1 : 0;
    unsigned round = 0;
    while (atomic_load(&shared_slot.inside) > own)
        wait_a_little(&round);
}

void vt_fork_guard_parent(void)
{
    atomic_store(&vt_fork_guard_forking, 0);
    pthread_mutex_unlock(&fork_lock);
}

void vt_fork_guard_child(void)
{
    /* Only the forking thread exists here: every other slot is free, and
     * the lock (held by us at fork time) is made anew. The child is a new
     * process for membarrier: register again. */
    for (unsigned i = 0; i < VT_GUARD_SLOTS; i++) {
        if (&slots[i] == vt_fork_guard_self.slot)
            continue;
        atomic_store(&slots[i].inside, 0);
        atomic_store(&slots[i].owned, 0);
    }
    bool shared_inside = vt_fork_guard_self.slot == &shared_slot && vt_fork_guard_self.depth > 0;
    atomic_store(&shared_slot.inside, shared_inside ? 1 : 0);
    pthread_mutex_init(&fork_lock, NULL);
    vt_asym_init_in_child();
    atomic_store(&vt_fork_guard_forking, 0);
}
