/* See asym_fence.h. */
#define _GNU_SOURCE
#include "asym_fence.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

atomic_int vt_asym_cheap;

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static int membarrier(int cmd)
{
    return (int)syscall(SYS_membarrier, cmd, 0, 0);
}

static void register_membarrier(void)
{
    int cmds = membarrier(MEMBARRIER_CMD_QUERY);
    bool ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
              membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
    atomic_store(&vt_asym_cheap, ok);
}

void vt_asym_init(void)
{
    pthread_once(&init_once, register_membarrier);
}

void vt_asym_init_in_child(void)
{
    if (atomic_load(&vt_asym_cheap))
        register_membarrier();
}

void vt_asym_heavy(void)
{
    if (!atomic_load(&vt_asym_cheap) || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
        return;
    /* Registered, yet refused: threads that relied on it may have stores
     * in flight. Real fences from now on; the slow global barrier (or,
     * failing that, time) covers the ones already made. */
    atomic_store(&vt_asym_cheap, 0);
    if (membarrier(MEMBARRIER_CMD_GLOBAL) != 0) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}
