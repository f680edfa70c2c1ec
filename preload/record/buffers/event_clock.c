/* The event clock. See event_clock.h. */
#define _GNU_SOURCE
#include "event_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tracer_services.h"

atomic_int vt_clock_tsc;

#define VT_CLOCKSOURCE_PATH "/sys/devices/system/clocksource/clocksource0/current_clocksource"
/* Tries per calibration point: one of three is rarely interrupted. */
#define VT_CALIBRATION_TRIES 3

/* The kernel's clocksource ("tsc", "kvm-clock", ...) into buf; "" if it
 * cannot be read (no /sys in a container, say). open/read: no stdio in
 * the recorder's start. */
static void read_clocksource(char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = open(VT_CLOCKSOURCE_PATH, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n;
    do
        n = read(fd, buf, len - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* rdtsc faults in a process that asked for it to (prctl PR_SET_TSC). */
static bool tsc_readable(void)
{
#if defined(__x86_64__)
    int mode = 0;
    /* (the system call, not the hooks' prctl wrapper: thread_name_hooks.c) */
    if (syscall(SYS_prctl, PR_GET_TSC, &mode, 0, 0, 0) != 0)
        return true; /* kernel without the control: nothing can forbid it */
    return mode == PR_TSC_ENABLE;
#else
    return false;
#endif
}

void vt_clock_setup(const char *choice, bool verbose)
{
    if (!choice)
        choice = "auto";
    bool force = !strcmp(choice, "tsc");
    if (!force && strcmp(choice, "auto") && strcmp(choice, "monotonic")) {
        vt_say(VT_SAY_LATER, "vramtrace: VRAMTRACE_CLOCK=%s is not auto, tsc or monotonic; using auto\n",
               choice);
        choice = "auto";
    }
    char source[64];
    read_clocksource(source, sizeof source);
    bool on = strcmp(choice, "monotonic") && tsc_readable() &&
              (force || !strcmp(source, "tsc"));
    atomic_store(&vt_clock_tsc, on);
    if (verbose)
        vt_say(VT_SAY_LATER, "vramtrace: clock %s (VRAMTRACE_CLOCK=%s, kernel clocksource %s)\n",
               vt_clock_name(), choice, source[0] ? source : "unknown");
}

const char *vt_clock_name(void)
{
    return atomic_load(&vt_clock_tsc) ? "tsc" : "monotonic";
}

struct vt_clock_point vt_clock_calibrate(void)
{
    struct vt_clock_point best = {0, 0};
    if (!atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed)) {
        best.ns = vt_clock_monotonic_ns();
        best.ticks = best.ns;
        return best;
    }
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < VT_CALIBRATION_TRIES; i++) {
        uint64_t before = vt_clock_ticks_ordered();
        uint64_t ns = vt_clock_monotonic_ns();
        uint64_t after = vt_clock_ticks_ordered();
        uint64_t gap = after - before;
        if (gap < best_gap) {
            best_gap = gap;
            /* ns was read somewhere in [before, after]: the middle is the
             * best guess, off by at most half the gap */
            best.ticks = before + gap / 2;
            best.ns = ns;
        }
    }
#if defined(__x86_64__)
    /* The last read completes before anything after the call starts (the
     * writer's handshake): a cutoff read late would be too late. */
    __asm__ __volatile__("lfence" : : : "memory");
#endif
    return best;
}

void vt_clock_line_init(struct vt_clock_line *l, struct vt_clock_point lo,
                        struct vt_clock_point hi)
{
    l->lo = lo;
    l->hi = hi;
    l->span_ticks = l->span_ns = l->whole = l->frac = 0;
    if (hi.ticks <= lo.ticks || hi.ns <= lo.ns)
        return; /* degenerate: vt_clock_line_ns answers an end */
    l->span_ticks = hi.ticks - lo.ticks;
    l->span_ns = hi.ns - lo.ns;
#if defined(__SIZEOF_INT128__)
    l->whole = l->span_ns / l->span_ticks;
    l->frac = (uint64_t)(((unsigned __int128)(l->span_ns % l->span_ticks) << 64) / l->span_ticks);
#endif
}

/* floor(dt * span_ns / span_ticks), exact and monotone in dt, for any dt
 * (the product of a minute's ticks and ns does not fit 64 bits): frac is
 * short of the true fraction by less than 2^-64, so the estimate is the
 * floor or one below it; two products tell which. A degenerate line: 0. */
static uint64_t line_scale(const struct vt_clock_line *l, uint64_t dt)
{
    if (!l->span_ticks)
        return 0;
#if defined(__SIZEOF_INT128__)
    uint64_t q = dt * l->whole + (uint64_t)(((unsigned __int128)dt * l->frac) >> 64);
    if ((unsigned __int128)(q + 1) * l->span_ticks <= (unsigned __int128)dt * l->span_ns)
        q++;
    return q;
#else
    long double f = (long double)dt * (long double)l->span_ns / (long double)l->span_ticks;
    return f >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)f;
#endif
}

uint64_t vt_clock_line_ns(const struct vt_clock_line *l, uint64_t ticks)
{
    /* Outside the bracket (and a degenerate one, lo.ticks == hi.ticks):
     * the nearer end. A 64-bit TSC does not wrap in a machine's life. */
    if (ticks <= l->lo.ticks || l->hi.ns <= l->lo.ns)
        return l->lo.ns;
    if (ticks >= l->hi.ticks)
        return l->hi.ns;
    return l->lo.ns + line_scale(l, ticks - l->lo.ticks); /* 0 < dt < span_ticks */
}

uint64_t vt_clock_line_span_ns(const struct vt_clock_line *l, uint64_t from, uint64_t to)
{
    if (to <= from)
        return 0;
    if (!atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed))
        return to - from;
    return line_scale(l, to - from);
}

uint64_t vt_clock_interpolate(struct vt_clock_point lo, struct vt_clock_point hi,
                              uint64_t ticks)
{
    struct vt_clock_line l;
    vt_clock_line_init(&l, lo, hi);
    return vt_clock_line_ns(&l, ticks);
}
