/*
 * Where each memory pool the program uses puts its memory. Pools named by
 * cuMemPoolCreate / cuDeviceGet[Default]MemPool / cuMemGet[Default]MemPool
 * are remembered so an allocation from a pool gets its device, and one from
 * a HOST pool (CUDA 13) is not counted as VRAM.
 *
 * A small fixed table under a mutex that is held for a scan only and never
 * around a call out of this file: programs use a handful of pools.
 */
#include "hooks_internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define VT_MAX_POOLS 256

struct pool_entry {
    CUmemoryPool pool;
    int device;
    int is_host;
};

static struct pool_entry pools[VT_MAX_POOLS];
static pthread_mutex_t pools_lock = PTHREAD_MUTEX_INITIALIZER;
/* Host pools in the table (under the lock; read without it by
 * vt_pool_any_host, which a free asks before any driver query). */
static atomic_int host_pools;

static void count_host(const struct pool_entry *e, int delta)
{
    if (e->pool != NULL && e->is_host)
        atomic_fetch_add(&host_pools, delta);
}

void vt_pool_remember(CUmemoryPool pool, int device, int is_host)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pools_lock);
    struct pool_entry *slot = NULL;
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        if (pools[i].pool == pool) {
            slot = &pools[i];
            break;
        }
        if (!slot && pools[i].pool == NULL)
            slot = &pools[i];
    }
    if (slot) { /* full table: the pool stays unknown, devices come from pointers */
        count_host(slot, -1);
        *slot = (struct pool_entry){ pool, device, is_host };
        count_host(slot, 1);
    }
    pthread_mutex_unlock(&pools_lock);
}

void vt_pool_forget(CUmemoryPool pool)
{
    if (pool == NULL)
        return;
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < VT_MAX_POOLS; i++) {
        if (pools[i].pool == pool) {
            count_host(&pools[i], -1);
            pools[i].pool = NULL;
        }
    }
    pthread_mutex_unlock(&pools_lock);
}

int vt_pool_lookup(CUmemoryPool pool, int *device, int *is_host)
{
    int found = 0;
    if (pool == NULL)
        return 0;
    pthread_mutex_lock(&pools_lock);
    for (int i = 0; i < VT_MAX_POOLS && !found; i++) {
        if (pools[i].pool == pool) {
            *device = pools[i].device;
            *is_host = pools[i].is_host;
            found = 1;
        }
    }
    pthread_mutex_unlock(&pools_lock);
    return found;
}

int vt_pool_any_host(void)
{
    return atomic_load_explicit(&host_pools, memory_order_relaxed) > 0;
}

/* A fork while another thread held the lock would leave it held forever in
 * the child. */
static void reset_lock_in_child(void)
{
    pthread_mutex_init(&pools_lock, NULL);
}

__attribute__((constructor)) static void register_pool_fork_handler(void)
{
    pthread_atfork(NULL, NULL, reset_lock_in_child);
}
