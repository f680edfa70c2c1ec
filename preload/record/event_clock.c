/* The event clock. See event_clock.h. */
#define _GNU_SOURCE
#include "event_clock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"

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

uint64_t vt_clock_interpolate(struct vt_clock_point lo, struct vt_clock_point hi,
                              uint64_t ticks)
{
    /* Outside the bracket (and a degenerate one, lo.ticks == hi.ticks):
     * the nearer end. A 64-bit TSC does not wrap in a machine's life. */
    if (ticks <= lo.ticks || hi.ns <= lo.ns)
        return lo.ns;
    if (ticks >= hi.ticks)
        return hi.ns;
    uint64_t span_ticks = hi.ticks - lo.ticks; /* > 0: lo.ticks < ticks < hi.ticks */
    uint64_t span_ns = hi.ns - lo.ns;
    uint64_t dt = ticks - lo.ticks;
#if defined(__SIZEOF_INT128__)
    /* floor(dt * span_ns / span_ticks): exact, monotone in dt, and the
     * product of a minute's ticks and ns does not fit 64 bits */
    return lo.ns + (uint64_t)((unsigned __int128)dt * span_ns / span_ticks);
#else
    long double f = (long double)dt * (long double)span_ns / (long double)span_ticks;
    uint64_t add = f >= (long double)span_ns ? span_ns : (uint64_t)f;
    return lo.ns + add;
#endif
}

uint64_t vt_clock_span_ns(struct vt_clock_point lo, struct vt_clock_point hi, uint64_t from,
                          uint64_t to)
{
    if (to <= from)
        return 0;
    if (!atomic_load_explicit(&vt_clock_tsc, memory_order_relaxed))
        return to - from;
    if (hi.ticks <= lo.ticks || hi.ns <= lo.ns)
        return 0;
#if defined(__SIZEOF_INT128__)
    unsigned __int128 ns = (unsigned __int128)(to - from) * (hi.ns - lo.ns) / (hi.ticks - lo.ticks);
    return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
#else
    long double f = (long double)(to - from) * (long double)(hi.ns - lo.ns) /
                    (long double)(hi.ticks - lo.ticks);
    return f >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)f;
#endif
}
