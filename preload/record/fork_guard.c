/* See fork_guard.h. */
#define _GNU_SOURCE
#include "fork_guard.h"

#include <pthread.h>

static pthread_rwlock_t guard;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;

static void guard_init(void)
{
    pthread_rwlockattr_t a;
    pthread_rwlockattr_init(&a);
    pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&guard, &a);
    pthread_rwlockattr_destroy(&a);
}

void vt_fork_guard_enter(void)
{
    pthread_once(&guard_once, guard_init);
    pthread_rwlock_rdlock(&guard);
}

void vt_fork_guard_leave(void)
{
    pthread_rwlock_unlock(&guard);
}

void vt_fork_guard_prepare(void)
{
    pthread_once(&guard_once, guard_init);
    pthread_rwlock_wrlock(&guard);
}

void vt_fork_guard_parent(void)
{
    pthread_rwlock_unlock(&guard);
}

void vt_fork_guard_child(void)
{
    guard_init(); /* held by us at fork time; no other thread exists here */
}
