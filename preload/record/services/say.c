/*
 * The tracer's only output: one line on stderr (vt_say, tracer_services.h), now or
 * held until the process traces.
 *
 * What the recorder finds at start - a bad option value, a path too long,
 * the options in effect (VRAMTRACE_VERBOSE) - is held (VT_SAY_LATER) and
 * said once the process records its first event, or makes its first driver
 * call when tracing could not start (vt_say_held): every
 * process of a job loads the library, and a shell, `timeout` or a launcher
 * that never uses CUDA must stay silent. Held lines are said
 * once per process: the first to say them empties the buffer, and a forked
 * child inherits only what its parent has not said yet.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tracer_services.h"

#define VT_SAY_HELD_MAX 4096

/* Appended to only at start and in a forked child's restart (one thread);
 * said by whichever thread records first. */
static char held[VT_SAY_HELD_MAX];
static atomic_size_t held_len;

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        len -= (size_t)w;
    }
}

void vt_say(int fd, const char *fmt, ...)
{
    if (fd < 0 && fd != VT_SAY_LATER)
        return;
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (fd != VT_SAY_LATER) {
        write_all(fd, line, len);
        return;
    }
    size_t at = atomic_load(&held_len);
    if (len > sizeof held - at)
        return; /* more than a screenful held: the rest is not worth it */
    memcpy(held + at, line, len);
    atomic_store(&held_len, at + len);
}

void vt_say_held(void)
{
    if (atomic_load_explicit(&held_len, memory_order_relaxed) == 0)
        return;
    size_t len = atomic_exchange(&held_len, 0);
    write_all(2, held, len);
}

void vt_say_forget_held(void)
{
    atomic_store(&held_len, 0);
}
