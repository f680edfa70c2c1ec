/* Per-thread event buffers and the block pool. See thread_buffer.h. */
#define _GNU_SOURCE
#include "thread_buffer.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "asym_fence.h"
#include "event_clock.h"
#include "fork_guard.h"

atomic_int vt_tb_active;
atomic_ullong vt_tb_lost;
/* Set by vt_tb_close: refused events are lost events from then on. */
static atomic_int closing;
void (*vt_tb_wake_writer)(void);
void (*vt_tb_on_new_thread)(void);

/* How long a hook waits for a free block at max_blocks before it takes
 * more memory: the writer may itself be waiting (for the loader lock, say,
 * held by the very thread that waits here inside dlopen), so the wait
 * must be bounded. */
#define VT_POOL_WAIT_MS 2000
/* ... and below max_blocks, past the blocks the pool lends at once. */
#define VT_POOL_SOFT_WAIT_MS 10

/* Blocks the pool lends before a hook waits (VT_POOL_SOFT_WAIT_MS at most)
 * for the writer: two a thread
 * (the one it fills, the one the writer reads) and a spare 256 KiB (at
 * least two blocks) for a burst, never more than max_blocks. Each block
 * lent for the first time is a first touch of its pages (32 page faults
 * at the default 128 KiB): two 128 KiB blocks and 256 KiB spare touch 128
 * pages where 256 KiB blocks and 512 KiB spare touched 256, at no CPU
 * cost (a block still holds ~1,600 events); bounded by max_blocks alone
 * (32 MiB), the pool grew to 10-50 blocks in a 400k-event burst while the
 * writer waited for a core of a loaded machine
 * (docs/internals/PERFORMANCE.md, "Page faults"). The writer drains a
 * block in well under a millisecond once it runs. */
#define VT_POOL_SPARE_BYTES (1u << 18)
#define VT_POOL_SPARE_MIN_BLOCKS 2

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct vt_block *free;
    size_t total;       /* blocks allocated */
    size_t max;         /* before hooks wait, whatever the threads */
    size_t spare;       /* blocks lent beyond two a thread before hooks wait */
    size_t threads;     /* buffers registered */
    size_t block_bytes; /* data bytes of one block */
} pool;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vt_thread_buf *list_head;

/* Bumped when every buffer is dropped (release, fork child): a TLS pointer
 * from an older generation is stale and must not be followed. */
static atomic_uint generation = 1;

/* Bumped by every rename the hooks see (vt_tb_note_rename): a thread whose
 * name_gen differs re-reads its name (a system call) at its next event. */
static atomic_uint rename_generation;

/* The calling thread's side of its buffer, in one TLS block: a hook finds
 * all of it with one address computation (each initial-exec variable of a
 * shared library costs a load of its offset from the GOT). */
struct tb_self {
    struct vt_thread_buf *tb; /* NULL: not registered (in this generation) */
    unsigned gen;             /* generation tb was registered in */
    /* SOMETIMES events until the one that re-reads the thread's name: the
     * name is read every VT_NAME_CHECK_EVERY events (and at every NOW
     * event, which starts the count again) */
    uint32_t name_check_in;
    unsigned name_gen; /* rename_generation when the name was last read */
    bool announced; /* the thread's record is in the buffer */
    /* The hook in progress holds its buffer's lock (slow path) rather than
     * just being "busy" (fast path); see buf_enter. Reset by buf_leave. */
    bool locked;
};
static __thread struct tb_self self __attribute__((tls_model("initial-exec")));

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static bool exit_key_ok;

static void pool_init_locks(void)
{
    pthread_condattr_t ca;
    pthread_mutex_init(&pool.lock, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&pool.cond, &ca);
    pthread_condattr_destroy(&ca);
}

static void enqueue_ready(struct vt_thread_buf *tb, struct vt_block *b)
{
    b->next = NULL;
    if (tb->ready_tail)
        tb->ready_tail->next = b;
    else
        tb->ready_head = b;
    tb->ready_tail = b;
}

/* The thread is going away: hand its last block to the writer. */
static void on_thread_exit(void *p)
{
    struct vt_thread_buf *tb = p;
    if (self.tb != tb || self.gen != atomic_load(&generation))
        return; /* a buffer of an older generation: already gone */
    pthread_mutex_lock(&tb->lock);
    tb->exited = true;
    if (tb->current) {
        if (tb->current->used)
            enqueue_ready(tb, tb->current);
        else
            vt_tb_block_put(tb->current);
        tb->current = NULL;
    }
    pthread_mutex_unlock(&tb->lock);
    self.tb = NULL;
}

static void make_exit_key(void)
{
    exit_key_ok = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

int vt_tb_init(size_t block_bytes, size_t max_blocks)
{
    pthread_once(&key_once, make_exit_key);
    vt_asym_init(); /* before any hook appends: both sides agree on the fence */
    pool_init_locks();
    pool.free = NULL;
    pool.total = 0;
    pool.max = max_blocks;
    pool.block_bytes = block_bytes & ~(size_t)7;
    pool.spare = VT_POOL_SPARE_BYTES / (pool.block_bytes ? pool.block_bytes : 1);
    if (pool.spare < VT_POOL_SPARE_MIN_BLOCKS)
        pool.spare = VT_POOL_SPARE_MIN_BLOCKS;
    pool.threads = 0;
    atomic_store(&vt_tb_lost, 0);
    return 0;
}

size_t vt_tb_max_event(void)
{
    return pool.block_bytes;
}

void vt_tb_block_put(struct vt_block *b)
{
    pthread_mutex_lock(&pool.lock);
    b->next = pool.free;
    pool.free = b;
    pthread_cond_broadcast(&pool.cond);
    pthread_mutex_unlock(&pool.lock);
}

/* Under pool.lock: how long a hook with no free block waits for one
 * before it takes more memory (0: it need not wait). At the lending bound
 * a short while - the writer, woken, usually gives a block back within
 * it - so that a writer held up for long (a write to a stalled disk) costs
 * memory, up to max_blocks, and not the program's time; at max_blocks
 * the long bounded wait. */
static int pool_wait_ms(void)
{
    if (pool.total >= pool.max)
        return VT_POOL_WAIT_MS;
    return pool.total >= pool.spare + 2 * pool.threads ? VT_POOL_SOFT_WAIT_MS : 0;
}

static struct vt_block *block_get(void)
{
    /* A hook waits outside the fork guard (fork_guard.h): a fork would
     * otherwise wait for this hook, which waits for the writer, which the
     * fork keeps out of the guard - a stall of the whole wait. It holds
     * nothing meanwhile (its buffer was left, the pool's lock is the
     * wait's); only an outermost hook steps out (a nested one's outer
     * call may be mid-event), and it steps back in before it allocates. */
    bool stepped_out = false;
    pthread_mutex_lock(&pool.lock);
    int wait_ms = pool.free ? 0 : pool_wait_ms();
    struct timespec deadline;
    if (wait_ms) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_nsec += (long)wait_ms * 1000000L;
        deadline.tv_sec += deadline.tv_nsec / 1000000000L;
        deadline.tv_nsec %= 1000000000L;
    }
    while (wait_ms && !pool.free && atomic_load(&vt_tb_active)) {
        if (!stepped_out && vt_fork_guard_self.depth == 1) {
            pthread_mutex_unlock(&pool.lock);
            vt_fork_guard_leave();
            stepped_out = true;
            pthread_mutex_lock(&pool.lock);
            continue;
        }
        if (vt_tb_wake_writer)
            vt_tb_wake_writer();
        if (pthread_cond_timedwait(&pool.cond, &pool.lock, &deadline) == ETIMEDOUT)
            break; /* take more memory rather than stall (pool_wait_ms) */
    }
    if (stepped_out) {
        /* back in (waiting for a fork under way, if one is), and only then
         * the pool's lock again: a fork waits for the writer, which may
         * want that lock to give a block back */
        pthread_mutex_unlock(&pool.lock);
        vt_fork_guard_enter();
        pthread_mutex_lock(&pool.lock);
    }
    struct vt_block *b = pool.free;
    if (b) {
        pool.free = b->next;
        pthread_mutex_unlock(&pool.lock);
    } else {
        pool.total++;
        pthread_mutex_unlock(&pool.lock);
        b = malloc(sizeof *b + pool.block_bytes);
        if (!b) {
            pthread_mutex_lock(&pool.lock);
            pool.total--;
            pthread_mutex_unlock(&pool.lock);
            return NULL;
        }
        b->cap = (uint32_t)pool.block_bytes;
    }
    b->next = NULL;
    b->used = 0;
    b->read = 0;
    return b;
}

static void read_thread_name(char name[VT_THREAD_NAME_LEN], uint32_t *len)
{
    char buf[VT_THREAD_NAME_LEN + 1] = {0};
    /* The system call itself: prctl by name is the hooks' wrapper
     * (hooks/thread_name_hooks.c), there for the program's renames. */
    if (syscall(SYS_prctl, PR_GET_NAME, buf, 0, 0, 0) != 0)
        buf[0] = '\0';
    buf[VT_THREAD_NAME_LEN] = '\0';
    *len = (uint32_t)strnlen(buf, VT_THREAD_NAME_LEN);
    memcpy(name, buf, VT_THREAD_NAME_LEN);
}

static struct vt_thread_buf *register_thread(void)
{
    struct vt_thread_buf *tb = calloc(1, sizeof *tb);
    if (!tb)
        return NULL;
    pthread_mutex_init(&tb->lock, NULL);
    tb->os_tid = (uint32_t)syscall(SYS_gettid);
    self.name_gen = atomic_load_explicit(&rename_generation, memory_order_relaxed);
    read_thread_name(tb->name, &tb->name_len);
    pthread_mutex_lock(&list_lock);
    tb->next = list_head;
    list_head = tb;
    pthread_mutex_unlock(&list_lock);
    pthread_mutex_lock(&pool.lock);
    pool.threads++;
    pthread_mutex_unlock(&pool.lock);
    self.tb = tb;
    self.gen = atomic_load(&generation);
    self.announced = false;
    self.name_check_in = VT_NAME_CHECK_EVERY;
    if (exit_key_ok)
        pthread_setspecific(exit_key, tb);
    return tb;
}

/*
 * Who may touch a buffer's blocks. The owner appends without taking the
 * lock: it marks the buffer busy, and only if the writer is collecting it
 * right now does it step back and take the lock (which the writer holds
 * while collecting). The writer takes the lock, says it is collecting and
 * waits until the owner is not busy. Dekker's handshake, with the fence
 * asymmetric (asym_fence.h): a hook pays two plain stores instead of a
 * mutex's two atomic read-modify-writes; the writer pays a membarrier per
 * buffer per round.
 *
 * The writer's ordering argument (writer.c) holds as with the lock: a hook
 * stamps its event while busy; if the writer, after its barrier, sees the
 * buffer not busy, any hook of that buffer not yet visible as busy stamps
 * after the barrier, hence after the writer's cutoff.
 */
static __attribute__((noinline)) void buf_enter_locked(struct vt_thread_buf *tb)
{
    atomic_store_explicit(&tb->busy, 0, memory_order_release);
    pthread_mutex_lock(&tb->lock);
    self.locked = true;
}

static inline void buf_enter(struct vt_thread_buf *tb)
{
    if (__builtin_expect(vt_asym_store_load(&tb->busy, 1, &tb->collecting), 0))
        buf_enter_locked(tb);
}

static inline void buf_leave(struct vt_thread_buf *tb)
{
    if (__builtin_expect(self.locked, 0)) {
        self.locked = false;
        pthread_mutex_unlock(&tb->lock);
    } else {
        atomic_store_explicit(&tb->busy, 0, memory_order_release);
    }
}

static void timespec_after_ms(struct timespec *ts, clockid_t clock, int ms)
{
    clock_gettime(clock, ts);
    ts->tv_nsec += (long)ms * 1000000L;
    ts->tv_sec += ts->tv_nsec / 1000000000L;
    ts->tv_nsec %= 1000000000L;
}

/* The writer's side. timeout_ms < 0: wait as long as it takes. */
static bool writer_lock(struct vt_thread_buf *tb, int timeout_ms)
{
    struct timespec deadline;
    if (timeout_ms < 0) {
        pthread_mutex_lock(&tb->lock);
    } else {
        timespec_after_ms(&deadline, CLOCK_REALTIME, timeout_ms); /* timedlock's clock */
        if (pthread_mutex_timedlock(&tb->lock, &deadline) != 0)
            return false;
        timespec_after_ms(&deadline, CLOCK_MONOTONIC, timeout_ms);
    }
    if (tb->exited)
        return true; /* its owner is gone: nobody appends without the lock */
    atomic_store(&tb->collecting, 1);
    vt_asym_heavy(); /* pairs with buf_enter's vt_asym_store_load */
    for (unsigned round = 0; atomic_load(&tb->busy); round++) {
        if (timeout_ms >= 0) {
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            if (now.tv_sec > deadline.tv_sec ||
                (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec)) {
                atomic_store_explicit(&tb->collecting, 0, memory_order_release);
                pthread_mutex_unlock(&tb->lock);
                return false; /* its owner may be the crashed thread */
            }
        }
        if (round < 64) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return true;
}

static void writer_unlock(struct vt_thread_buf *tb)
{
    atomic_store_explicit(&tb->collecting, 0, memory_order_release);
    pthread_mutex_unlock(&tb->lock);
}

/* Room for size bytes in the current block; called and returns inside
 * buf_enter (left while waiting for a block). NULL: nothing recorded. */
static __attribute__((noinline)) void *reserve_slow(struct vt_thread_buf *tb, uint32_t size)
{
    for (;;) {
        struct vt_block *b = tb->current;
        if (b && b->cap - b->used >= size) {
            void *p = (uint8_t *)b->data + b->used;
            b->used += size;
            return p;
        }
        bool wake = false;
        if (b) {
            tb->current = NULL;
            if (b->used) {
                enqueue_ready(tb, b);
                /* The writer is woken once the thread has two blocks
                 * ready, not at every one: a round (a futex wait and wake,
                 * a membarrier) per 256 KiB of events at the default
                 * block size, as with the 256 KiB blocks before. The pool
                 * lends the thread a block more than that, and a hook that
                 * has to wait for one wakes the writer itself (block_get). */
                wake = tb->ready_head != tb->ready_tail;
            } else {
                vt_tb_block_put(b);
            }
        }
        buf_leave(tb); /* the writer may take the ready blocks meanwhile */
        if (wake && vt_tb_wake_writer)
            vt_tb_wake_writer();
        struct vt_block *nb = block_get();
        buf_enter(tb);
        if (!nb)
            return NULL;
        if (!atomic_load(&vt_tb_active)) {
            vt_tb_block_put(nb);
            return NULL;
        }
        tb->current = nb;
    }
}

/* The common case inline: room in the current block. */
static inline void *reserve_locked(struct vt_thread_buf *tb, uint32_t size)
{
    struct vt_block *b = tb->current;
    if (b && b->cap - b->used >= size) {
        void *p = (uint8_t *)b->data + b->used;
        b->used += size;
        return p;
    }
    return reserve_slow(tb, size);
}

/*
 * The event's time, taken inside buf_enter: writer.c's ordering argument
 * needs every event stamped before a round's cutoff to be in hand when the
 * round has walked every buffer. A plain TSC read may execute before the
 * instructions that precede it have (rdtsc is not ordered). On buf_enter's
 * fast path with membarrier that cannot move the event across a cutoff:
 * the writer's barrier splits the hook at an instruction boundary - if the
 * read came before it, so did the store of `busy`, and the writer sees the
 * buffer busy and waits for the event. Everywhere else the handshake makes
 * the hook wait for the writer instead - the lock taken because it was
 * collecting, a buffer registered after the writer walked the list
 * (fresh_tb), the fenced fallback - and the stamp must be read after that
 * wait to be later than the cutoff: an ordered read (lfence; rdtsc, what
 * the vDSO's clock_gettime does).
 */
static inline uint64_t event_stamp(bool fresh_tb)
{
    if (self.locked || fresh_tb ||
        !atomic_load_explicit(&vt_asym_cheap, memory_order_relaxed))
        return vt_clock_ticks_ordered();
    return vt_clock_ticks();
}

void vt_tb_open(void)
{
    atomic_store(&closing, 0);
}

void vt_tb_close(void)
{
    atomic_store(&closing, 1);
    atomic_store(&vt_tb_active, 0);
}

void vt_tb_note_refused(void)
{
    if (atomic_load_explicit(&closing, memory_order_relaxed))
        atomic_fetch_add(&vt_tb_lost, 1);
}

static inline void fill_header(struct vt_raw_header *h, uint64_t ticks, uint8_t type,
                               uint32_t size, uint16_t nips)
{
    h->ticks = ticks;
    h->size = size;
    h->type = type;
    h->flags = 0;
    h->nips = nips;
}

/* The part of an event inside buf_enter (entered: busy, or locked), for
 * every case but the fast one: the recorder stopping, the thread's
 * announcement, a full block. */
static __attribute__((noinline)) struct vt_raw_header *
begin_entered(struct vt_thread_buf *tb, uint8_t type, uint32_t size, uint16_t nips,
              bool fresh_tb, bool announce)
{
    if (!atomic_load(&vt_tb_active))
        goto stopped;
    if (announce) {
        struct vt_raw_thread *t = reserve_locked(tb, vt_raw_round(sizeof *t));
        if (!t)
            goto fail;
        fill_header(&t->h, event_stamp(fresh_tb), VT_REC_THREAD, vt_raw_round(sizeof *t), 0);
        t->os_tid = tb->os_tid;
        t->name_len = tb->name_len;
        memcpy(t->name, tb->name, VT_THREAD_NAME_LEN);
        self.announced = true;
    }
    struct vt_raw_header *h = reserve_locked(tb, size);
    if (!h)
        goto fail;
    /* After the reservation, which may have left buf_enter to wait for a
     * block: see event_stamp. */
    fill_header(h, event_stamp(fresh_tb), type, size, nips);
    return h;
fail:
    if (atomic_load(&vt_tb_active)) {
        atomic_fetch_add(&vt_tb_lost, 1); /* no memory for a block */
        buf_leave(tb);
        return NULL;
    }
stopped:
    vt_tb_note_refused();
    buf_leave(tb);
    return NULL;
}

/* The fast path found the writer collecting the buffer: it waits for the
 * lock, as buf_enter would have. */
static __attribute__((noinline)) struct vt_raw_header *
begin_contended(struct vt_thread_buf *tb, uint8_t type, uint32_t size, uint16_t nips)
{
    buf_enter_locked(tb);
    return begin_entered(tb, type, size, nips, false, false);
}

/* Every event the fast path does not take from the start: a thread's
 * first event (or first of a generation), its announcement, a name check,
 * the recorder stopped, an event larger than a block. */
static __attribute__((noinline)) struct vt_raw_header *
begin_slow(uint8_t type, uint32_t size, uint16_t nips, enum vt_name_check check)
{
    if (!atomic_load_explicit(&vt_tb_active, memory_order_acquire)) {
        vt_tb_note_refused();
        return NULL;
    }
    if (size > pool.block_bytes) {
        atomic_fetch_add(&vt_tb_lost, 1);
        return NULL;
    }
    struct vt_thread_buf *tb = self.tb;
    bool fresh_tb = !tb || self.gen != atomic_load(&generation);
    if (fresh_tb) {
        if (vt_tb_on_new_thread)
            vt_tb_on_new_thread(); /* may stop recording: begin_entered looks again */
        tb = register_thread();
    }
    if (!tb) {
        atomic_fetch_add(&vt_tb_lost, 1);
        return NULL;
    }
    /* The name is read outside the lock: prctl is a system call. */
    bool announce = !self.announced;
    unsigned renames = atomic_load_explicit(&rename_generation, memory_order_relaxed);
    bool renamed = renames != self.name_gen;
    if (check == VT_NAME_CHECK_NOW || --self.name_check_in == 0 || renamed) {
        char name[VT_THREAD_NAME_LEN];
        uint32_t len;
        self.name_check_in = VT_NAME_CHECK_EVERY;
        self.name_gen = renames;
        read_thread_name(name, &len);
        if (len != tb->name_len || memcmp(name, tb->name, len)) {
            memcpy(tb->name, name, sizeof name);
            tb->name_len = len;
            announce = true;
        }
    }
    buf_enter(tb);
    return begin_entered(tb, type, size, nips, fresh_tb, announce);
}

/*
 * The common case, straight through: a registered, announced thread whose
 * name is not due for a check appends to room left in its current block
 * while the writer is not collecting it. It is begin_slow with every test
 * of a rare case folded into one branch up front, or handed to
 * begin_entered once inside: the same steps in the same order (busy, the
 * second look at vt_tb_active, the room, then the stamp: buf_enter and
 * event_stamp say why that order).
 */
struct vt_raw_header *vt_tb_begin(uint8_t type, uint32_t size, uint16_t nips,
                                  enum vt_name_check check)
{
    struct tb_self *me = &self;
    struct vt_thread_buf *tb = me->tb;
    if (__builtin_expect(check != VT_NAME_CHECK_SOMETIMES || tb == NULL || !me->announced ||
                             me->name_check_in <= 1 || me->gen != atomic_load(&generation) ||
                             me->name_gen != atomic_load_explicit(&rename_generation,
                                                                  memory_order_relaxed) ||
                             !atomic_load_explicit(&vt_tb_active, memory_order_acquire) ||
                             size > pool.block_bytes,
                         0))
        return begin_slow(type, size, nips, check);
    me->name_check_in--; /* not due: begin_slow's decrement, done */
    if (__builtin_expect(vt_asym_store_load(&tb->busy, 1, &tb->collecting), 0))
        return begin_contended(tb, type, size, nips); /* buf_enter's other half */
    struct vt_block *b = tb->current; /* the owner's while it is busy */
    if (__builtin_expect(!atomic_load(&vt_tb_active) || b == NULL || b->cap - b->used < size, 0))
        return begin_entered(tb, type, size, nips, false, false);
    struct vt_raw_header *h = (struct vt_raw_header *)((uint8_t *)b->data + b->used);
    b->used += size;
    h->size = size;
    h->type = type;
    h->flags = 0;
    h->nips = nips;
    /* event_stamp(false), the buffer not being locked; last, so that
     * only h lives across a clock call (no registers to save here) */
    h->ticks = atomic_load_explicit(&vt_asym_cheap, memory_order_relaxed)
                   ? vt_clock_ticks()
                   : vt_clock_ticks_ordered();
    return h;
}

struct vt_raw_header *vt_tb_begin_with_stack(uint8_t type, uint32_t body, const uint64_t *ips,
                                             size_t n, bool python, enum vt_name_check check)
{
    uint32_t stack_bytes = (uint32_t)(n * sizeof *ips);
    /* Room for the frames is reserved first and given back when they
     * repeat: only inside the buffer is self.tb surely the buffer the
     * event goes to (begin may register a fresh one). */
    struct vt_raw_header *h = vt_tb_begin(type, body + stack_bytes, (uint16_t)n, check);
    if (!h)
        return NULL; /* not in the buffer: the last stack sent stays the last */
    struct vt_thread_buf *tb = self.tb;
    uint8_t flags = python ? VT_RAW_PY_FRAMES : 0;
    if (vt_tb_remembers_stack(flags, n)) {
        if (n == tb->last_n && !memcmp(tb->last_ips, ips, stack_bytes)) {
            /* the event is the last one reserved in the current block */
            tb->current->used -= stack_bytes;
            h->size = body;
            h->nips = 0;
            h->flags = VT_RAW_SAME_STACK;
            return h;
        }
        memcpy(tb->last_ips, ips, stack_bytes);
        tb->last_n = (uint32_t)n;
    }
    if (n)
        memcpy((uint8_t *)h + body, ips, stack_bytes);
    h->flags = flags;
    return h;
}

void vt_tb_note_rename(void)
{
    atomic_fetch_add_explicit(&rename_generation, 1, memory_order_relaxed);
}

void vt_tb_commit(void)
{
    buf_leave(self.tb);
}

/* ---- writer side ---- */

void vt_tb_for_each(void (*fn)(struct vt_thread_buf *tb, void *ctx), void *ctx)
{
    pthread_mutex_lock(&list_lock);
    for (struct vt_thread_buf *tb = list_head; tb; tb = tb->next)
        fn(tb, ctx);
    pthread_mutex_unlock(&list_lock);
}

static void wq_append(struct vt_thread_buf *tb, struct vt_block *b)
{
    b->next = NULL;
    if (tb->wq_tail)
        tb->wq_tail->next = b;
    else
        tb->wq_head = b;
    tb->wq_tail = b;
}

bool vt_tb_collect(struct vt_thread_buf *tb, int timeout_ms)
{
    if (!writer_lock(tb, timeout_ms))
        return false;
    struct vt_block *ready = tb->ready_head;
    tb->ready_head = tb->ready_tail = NULL;
    struct vt_block *cur = tb->current;
    if (cur && cur->used)
        tb->current = NULL;
    else
        cur = NULL;
    writer_unlock(tb);
    while (ready) {
        struct vt_block *next = ready->next;
        wq_append(tb, ready);
        ready = next;
    }
    if (cur)
        wq_append(tb, cur);
    return true;
}

static void free_blocks(struct vt_block *b)
{
    while (b) {
        struct vt_block *next = b->next;
        free(b);
        b = next;
    }
}

void vt_tb_reap_exited(void)
{
    pthread_mutex_lock(&list_lock);
    struct vt_thread_buf **link = &list_head;
    while (*link) {
        struct vt_thread_buf *tb = *link;
        /* exited is written by the exiting thread under the lock (found
         * by ThreadSanitizer: reading it unlocked was a data race) */
        pthread_mutex_lock(&tb->lock);
        bool done = tb->exited && !tb->current && !tb->ready_head && !tb->wq_head;
        pthread_mutex_unlock(&tb->lock); /* exited: its owner appends no more */
        if (done) {
            pthread_mutex_lock(&pool.lock);
            pool.threads--;
            pthread_mutex_unlock(&pool.lock);
            *link = tb->next;
            pthread_mutex_destroy(&tb->lock);
            free(tb);
        } else {
            link = &tb->next;
        }
    }
    pthread_mutex_unlock(&list_lock);
}

void vt_tb_trim_pool(void)
{
    pthread_mutex_lock(&pool.lock);
    struct vt_block *b = pool.free;
    pool.free = NULL;
    for (struct vt_block *k = b; k; k = k->next)
        pool.total--;
    pthread_mutex_unlock(&pool.lock);
    free_blocks(b);
}

void vt_tb_release_all(void)
{
    atomic_fetch_add(&generation, 1);
    pthread_mutex_lock(&list_lock);
    struct vt_thread_buf *tb = list_head;
    list_head = NULL;
    pthread_mutex_unlock(&list_lock);
    while (tb) {
        struct vt_thread_buf *next = tb->next;
        free(tb->current);
        free_blocks(tb->ready_head);
        free_blocks(tb->wq_head);
        pthread_mutex_destroy(&tb->lock);
        free(tb);
        tb = next;
    }
    pthread_mutex_lock(&pool.lock);
    struct vt_block *b = pool.free;
    pool.free = NULL;
    pool.total = 0;
    pool.threads = 0;
    pthread_mutex_unlock(&pool.lock);
    free_blocks(b);
    self.tb = NULL;
}

void vt_tb_after_fork_child(void)
{
    /* Another thread may have held any of these locks at fork time; it does
     * not exist here, so the locks are made anew. The parent's buffers are
     * left alone (not freed: they may be mid-update) - their events belong
     * to the parent's trace. */
    atomic_fetch_add(&generation, 1);
    atomic_store(&closing, 0);
    pthread_mutex_init(&list_lock, NULL);
    list_head = NULL;
    pool_init_locks();
    pool.free = NULL;
    pool.total = 0;
    pool.threads = 0;
    self.tb = NULL;
}
