/*
 * Fatal-signal flush. See fatal_signals.h.
 *
 * Which signals: the ones that kill a process because something went wrong
 * inside it (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT). Their handler asks
 * the writer for a final flush (async-signal-safe: a byte into a pipe, then
 * a bounded poll for the answer), puts the previous disposition back and
 * chains to it: a previous handler is called, a default action happens by
 * re-raising (the signal is blocked while we run, so it is delivered, with
 * the default action, the moment we return), an ignored signal stays
 * ignored.
 *
 * Not SIGINT or SIGTERM: a handler there is visible to the program (Python
 * installs its KeyboardInterrupt handler only if SIGINT is still SIG_DFL,
 * and signal.getsignal() would report an unknown C handler), and the rule is
 * never to change what the program does on a signal. A program stopped by
 * them loses at most the last flush interval (chunks are written every
 * VRAMTRACE_FLUSH_MS), and Ctrl-C in Python exits through the normal path
 * with a complete trace.
 *
 * Installed when tracing starts (once per process in libvramtrace.so); if
 * the program installs its own handler later, ours is simply replaced and
 * never put back.
 */
#define _GNU_SOURCE
#include "fatal_signals.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>

#include "writer.h"

#define VT_FATAL_SIGNALS(X) X(SIGSEGV) X(SIGBUS) X(SIGFPE) X(SIGILL) X(SIGABRT)
#define VT_SIGNAL_FLUSH_TIMEOUT_MS 2000

static const int fatal_signals[] = {
#define VT_SIG(s) s,
    VT_FATAL_SIGNALS(VT_SIG)
#undef VT_SIG
};
#define VT_NSIG_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static struct sigaction previous[VT_NSIG_FATAL];

static int slot_of(int sig)
{
    for (unsigned i = 0; i < VT_NSIG_FATAL; i++)
        if (fatal_signals[i] == sig)
            return (int)i;
    return -1;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    int slot = slot_of(sig);
    vt_writer_emergency_flush(VT_SIGNAL_FLUSH_TIMEOUT_MS);
    if (slot < 0) {
        errno = saved_errno;
        return;
    }
    struct sigaction prev = previous[slot];
    sigaction(sig, &prev, NULL);
    if (prev.sa_flags & SA_SIGINFO) {
        if (prev.sa_sigaction)
            prev.sa_sigaction(sig, info, uctx);
    } else if (prev.sa_handler == SIG_DFL) {
        raise(sig); /* pending until we return: then the default action */
    } else if (prev.sa_handler != SIG_IGN) {
        prev.sa_handler(sig);
    }
    errno = saved_errno;
}

void vt_fatal_signals_install(void)
{
    for (unsigned i = 0; i < VT_NSIG_FATAL; i++) {
        struct sigaction cur;
        if (sigaction(fatal_signals[i], NULL, &cur) != 0)
            continue;
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
            continue; /* ignored stays ignored, untouched */
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fatal_signal)
            continue; /* already ours (a second start in one process) */
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        previous[i] = cur;
        sigaction(fatal_signals[i], &sa, NULL);
    }
}
