/* The single lock over the driver's process-local state, the cuInit flag,
 * and fork safety: the lock is held across fork() so the child never inherits
 * it mid-update, and modules get a hook to forget the parent's allocations
 * (a forked child is a new process on the GPU; what the parent allocated
 * stays the parent's). */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int initialized;

#define MAX_FORK_HOOKS 8
static void (*fork_hooks[MAX_FORK_HOOKS])(void);
static int fork_hook_count;

void vtsim_lock(void) { pthread_mutex_lock(&state_lock); }
void vtsim_unlock(void) { pthread_mutex_unlock(&state_lock); }
int vtsim_is_initialized(void) { return atomic_load(&initialized); }
void vtsim_set_initialized(void) { atomic_store(&initialized, 1); }

void vtsim_on_fork_child(void (*fn)(void))
{
    if (fork_hook_count < MAX_FORK_HOOKS)
        fork_hooks[fork_hook_count++] = fn;
}

static void before_fork(void) { vtsim_lock(); }
static void after_fork_parent(void) { vtsim_unlock(); }

static void after_fork_child(void)
{
    for (int i = 0; i < fork_hook_count; i++)
        fork_hooks[i]();
    vtsim_unlock();
    vtsim_ledger("fork", CUDA_SUCCESS, "parent=%d", (int)getppid());
}

__attribute__((constructor)) static void install_fork_handlers(void)
{
    pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
