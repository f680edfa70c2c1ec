/* Wake-ups without descriptors. See wake_word.h. */
#define _GNU_SOURCE
#include "wake_word.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/*
 * No lost wake-up (all sequentially consistent): a waiter counts itself in
 * before it looks at the counter, a poster moves the counter before it
 * looks at the waiters. If the poster saw no waiter, the waiter's count
 * came later in the one total order, so its look at the counter comes
 * after the post and it does not sleep; otherwise the poster wakes it (and
 * the kernel compares the counter again itself before sleeping).
 */
void vt_wake_post(struct vt_wake *w)
{
    atomic_fetch_add(&w->word, 1);
    if (atomic_load(&w->waiters) != 0)
        syscall(SYS_futex, (unsigned *)&w->word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void vt_wake_wait(struct vt_wake *w, unsigned seen, int timeout_ms)
{
    atomic_fetch_add(&w->waiters, 1);
    if (atomic_load(&w->word) == seen) {
        if (timeout_ms < 0)
            timeout_ms = 0;
        struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
        syscall(SYS_futex, (unsigned *)&w->word, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    }
    atomic_fetch_sub(&w->waiters, 1);
}
