/* Device capacity accounting.  Usage is kept per process in a small table:
 * privately in this process, or - with VTSIM_SHARED=<name> - in a POSIX
 * shared-memory segment so that several processes on one simulated GPU
 * compete for the same bytes and see each other in cuMemGetInfo.  Entries of
 * processes that died (even by SIGKILL) count as released: a slot whose pid
 * no longer exists, or is a zombie, is swept before every decision. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEG_MAGIC 0x5654534du   /* "VTSM" */
#define SEG_LAYOUT 2u
#define MAX_PROCS 256

/* A slot belongs to one process image: pid plus a token drawn when the image
 * starts (and again in a forked child), so a pid that exec()ed - whose old
 * image's slot can never be released by its destructor - is told apart. */
struct proc_slot {
    int32_t pid;
    int32_t pad;
    uint64_t token;
    uint64_t used[VTSIM_MAX_DEVICES];
};

struct usage_table {
    _Atomic uint32_t magic;
    uint32_t layout;
    pthread_mutex_t lock;
    int32_t devices;
    uint64_t capacity[VTSIM_MAX_DEVICES];
    struct proc_slot procs[MAX_PROCS];
};

static struct usage_table private_table;
static struct usage_table *table;
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static int shared;
static uint64_t my_token;

static uint64_t new_token(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return (t ^ ((uint64_t)getpid() << 40) ^ (uint64_t)(uintptr_t)&ts) | 1;
}

static void fill_table(struct usage_table *t)
{
    const struct vtsim_config *c = vtsim_config();
    t->layout = SEG_LAYOUT;
    t->devices = c->devices;
    memcpy(t->capacity, c->capacity, sizeof t->capacity);
}

static struct usage_table *create_segment(int fd)
{
    if (ftruncate(fd, sizeof(struct usage_table)) != 0)
        return NULL;
    struct usage_table *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED)
        return NULL;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&t->lock, &a);
    pthread_mutexattr_destroy(&a);
    fill_table(t);
    atomic_store(&t->magic, SEG_MAGIC);  /* published last: openers wait for it */
    return t;
}

static struct usage_table *open_segment(int fd)
{
    struct timespec pause = { 0, 1000000 };
    for (int tries = 0; tries < 3000; tries++) {  /* the creator is mid-setup */
        struct stat st;
        if (fstat(fd, &st) == 0 && (size_t)st.st_size >= sizeof(struct usage_table)) {
            struct usage_table *t = mmap(NULL, sizeof *t, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (t == MAP_FAILED)
                return NULL;
            while (atomic_load(&t->magic) != SEG_MAGIC && tries++ < 3000)
                nanosleep(&pause, NULL);
            if (atomic_load(&t->magic) == SEG_MAGIC && t->layout == SEG_LAYOUT)
                return t;
            munmap(t, sizeof *t);
            return NULL;
        }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void setup_table(void)
{
    const struct vtsim_config *c = vtsim_config();
    my_token = new_token();
    if (c->shared[0]) {
        char name[128];
        snprintf(name, sizeof name, "/vtsim-%s", c->shared);
        struct usage_table *t = NULL;
        int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0) {
            t = create_segment(fd);
        } else if (errno == EEXIST) {
            fd = shm_open(name, O_RDWR, 0600);
            if (fd >= 0)
                t = open_segment(fd);
        }
        if (fd >= 0)
            close(fd);
        if (t) {
            table = t;
            shared = 1;
            return;
        }
        fprintf(stderr, "vtsim: cannot use shared ledger %s (%s); device is private\n",
                name, strerror(errno));
    }
    fill_table(&private_table);
    pthread_mutex_init(&private_table.lock, NULL);
    table = &private_table;
}

static struct usage_table *get_table(void)
{
    pthread_once(&table_once, setup_table);
    return table;
}

static void lock_table(struct usage_table *t)
{
    if (pthread_mutex_lock(&t->lock) == EOWNERDEAD)
        pthread_mutex_consistent(&t->lock);  /* a holder died; counters are word-sized */
}

static int pid_is_gone(pid_t pid)
{
    if (kill(pid, 0) == -1 && errno == ESRCH)
        return 1;
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

/* With the table locked: release the slots of dead processes. */
static void sweep_dead(struct usage_table *t)
{
    if (!shared)
        return;
    pid_t me = getpid();
    for (int i = 0; i < MAX_PROCS; i++) {
        pid_t p = t->procs[i].pid;
        if (p == 0)
            continue;
        int stale = p == me ? t->procs[i].token != my_token : pid_is_gone(p);
        if (stale)
            memset(&t->procs[i], 0, sizeof t->procs[i]);
    }
}

/* With the table locked: this process's slot, claimed on first use. */
static struct proc_slot *my_slot(struct usage_table *t)
{
    pid_t me = shared ? getpid() : 1;
    struct proc_slot *free_slot = NULL;
    for (int i = 0; i < MAX_PROCS; i++) {
        if (t->procs[i].pid == me && t->procs[i].token == my_token)
            return &t->procs[i];
        if (!free_slot && t->procs[i].pid == 0)
            free_slot = &t->procs[i];
    }
    if (free_slot) {
        memset(free_slot, 0, sizeof *free_slot);
        free_slot->pid = me;
        free_slot->token = my_token;
    }
    return free_slot;
}

static uint64_t sum_used(const struct usage_table *t, int dev)
{
    uint64_t sum = 0;
    for (int i = 0; i < MAX_PROCS; i++)
        if (t->procs[i].pid != 0)
            sum += t->procs[i].used[dev];
    return sum;
}

/* CUDA_VISIBLE_DEVICES: ordinal i is physical device visible[i]; the
 * table (shared by every process on the node) is indexed physically, so two
 * processes seeing one GPU under different ordinals compete for it. */
int vtsim_device_count(void)
{
    const struct vtsim_config *c = vtsim_config();
    int physical = get_table()->devices;
    if (!c->has_visible)
        return physical;
    int n = 0;
    while (n < c->nvisible && c->visible[n] < physical)
        n++;
    return n;
}

int vtsim_physical_device(int dev)
{
    const struct vtsim_config *c = vtsim_config();
    return c->has_visible && dev >= 0 && dev < c->nvisible ? c->visible[dev] : dev;
}

uint64_t vtsim_capacity(int dev) { return get_table()->capacity[vtsim_physical_device(dev)]; }

uint64_t vtsim_charge_size(uint64_t size)
{
    uint64_t g = vtsim_config()->granule;
    if (size > UINT64_MAX - g)
        return UINT64_MAX;
    return (size + g - 1) & ~(g - 1);
}

CUresult vtsim_charge(int dev, uint64_t bytes)
{
    dev = vtsim_physical_device(dev);
    struct usage_table *t = get_table();
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    lock_table(t);
    sweep_dead(t);
    struct proc_slot *s = my_slot(t);
    uint64_t used = sum_used(t, dev);
    if (s && bytes <= t->capacity[dev] && used <= t->capacity[dev] - bytes) {
        s->used[dev] += bytes;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

void vtsim_uncharge(int dev, uint64_t bytes)
{
    dev = vtsim_physical_device(dev);
    struct usage_table *t = get_table();
    lock_table(t);
    struct proc_slot *s = my_slot(t);
    if (s)
        s->used[dev] = s->used[dev] >= bytes ? s->used[dev] - bytes : 0;
    pthread_mutex_unlock(&t->lock);
}

uint64_t vtsim_used_all(int dev)
{
    dev = vtsim_physical_device(dev);
    struct usage_table *t = get_table();
    lock_table(t);
    sweep_dead(t);
    uint64_t used = sum_used(t, dev);
    pthread_mutex_unlock(&t->lock);
    return used;
}

uint64_t vtsim_used_mine(int dev)
{
    dev = vtsim_physical_device(dev);
    struct usage_table *t = get_table();
    lock_table(t);
    struct proc_slot *s = my_slot(t);
    uint64_t used = s ? s->used[dev] : 0;
    pthread_mutex_unlock(&t->lock);
    return used;
}

VTSIM_EXPORT int vtsim_nvml_device_count(void) { return get_table()->devices; }

VTSIM_EXPORT void vtsim_nvml_uuid(int physical, unsigned char out[16])
{
    vtsim_physical_uuid(physical, out);
}

VTSIM_EXPORT int vtsim_nvml_processes(int physical, int *pids, uint64_t *bytes, int max)
{
    struct usage_table *t = get_table();
    if (physical < 0 || physical >= t->devices)
        return 0;
    int n = 0;
    lock_table(t);
    sweep_dead(t);
    for (int i = 0; i < MAX_PROCS && n < max; i++) {
        if (t->procs[i].pid == 0 || t->procs[i].used[physical] == 0)
            continue;
        pids[n] = shared ? t->procs[i].pid : (int)getpid(); /* private slots say 1 */
        bytes[n++] = t->procs[i].used[physical];
    }
    pthread_mutex_unlock(&t->lock);
    return n;
}

void vtsim_capacity_forget_mine(void)
{
    struct usage_table *t = get_table();
    my_token = new_token();
    if (!shared) {  /* the private table was copied: our own slot restarts at zero */
        pthread_mutex_init(&t->lock, NULL);
        memset(t->procs, 0, sizeof t->procs);
    }
    /* shared: the parent's slot stays the parent's; my_slot() claims a new one
     * under the child's pid on first use. */
}

/* Process exit gives back everything this process held on a shared device. */
__attribute__((destructor)) static void release_at_exit(void)
{
    if (!table || !shared)
        return;
    lock_table(table);
    pid_t me = getpid();
    for (int i = 0; i < MAX_PROCS; i++)
        if (table->procs[i].pid == me && table->procs[i].token == my_token)
            memset(&table->procs[i], 0, sizeof table->procs[i]);
    pthread_mutex_unlock(&table->lock);
}
