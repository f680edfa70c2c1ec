/* Wake-ups without descriptors. See wake_word.h. */
#define _GNU_SOURCE
#include "wake_word.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

void vt_wake_post(atomic_uint *word)
{
    atomic_fetch_add(word, 1);
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void vt_wake_wait(atomic_uint *word, unsigned seen, int timeout_ms)
{
    if (atomic_load(word) != seen)
        return;
    if (timeout_ms < 0)
        timeout_ms = 0;
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    /* The kernel compares *word with seen itself before sleeping: a post
     * between our load and the call is never missed. */
    syscall(SYS_futex, (unsigned *)word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
}
