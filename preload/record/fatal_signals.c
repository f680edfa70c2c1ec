/*
 * Fatal-signal flush, invisible to the program. See fatal_signals.h.
 *
 * Which signals: the ones that kill a process because something went wrong
 * inside it (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT), and SIGTERM: how
 * launchers and schedulers stop a job's processes (torchrun's agent stops
 * every rank with it when one fails, SLURM's scancel and Kubernetes before
 * SIGKILL), so the ranks that did not fail keep their last interval too - a
 * rank stopped in its first interval would otherwise leave an empty file.
 * Not SIGINT: Ctrl-C in Python exits through the normal path with a
 * complete trace, and a notebook's interrupt must not wait for a flush.
 *
 * The tracer's handler stays in the kernel for them from the start on, and
 * the program never sees it (else Python's signal.getsignal() says None
 * instead of SIG_DFL, and the save/handle/restore pattern raises):
 *
 * - The program's view of each disposition is kept here. Its sigaction
 *   (and signal, sysv_signal, siginterrupt, sigset: preload/hooks/
 *   signal_hooks.c) reads and sets the view; what it sets is installed for
 *   real first and read back, so the view holds exactly what the kernel
 *   would (flags with SA_RESTORER, the mask without SIGKILL and SIGSTOP),
 *   then the tracer's handler goes back in under the program's mask and
 *   flags: the program's handler later runs with the signal mask, stack
 *   and SA_NODEFER it asked for. SA_RESETHAND is done here (the view is
 *   reset when the signal arrives), so the handler stays ours.
 * - Whenever the kernel does not hold the tracer's handler (the program
 *   ignores the signal, or something changed it without the C library's
 *   sigaction: glibc's own abort(), a raw system call), the kernel's answer
 *   is the program's view, passed through as it is.
 * - The handler flushes first (a writer round, waited for), then does what
 *   the view says: calls the program's handler with the kernel's arguments,
 *   or the default action (set for real, re-raised: the process dies of the
 *   same signal, core dump included). Flushing BEFORE the program's handler
 *   covers every way it can end - returning, chaining to the default,
 *   _exit, longjmp, a sanitizer's report that ends with a raw exit.
 *
 * Writers of the view (the program's threads) take a spin lock with every
 * signal blocked; the handler takes it too, with a bounded spin (a holder
 * on another thread is never blocked inside).
 */
#define _GNU_SOURCE
#include "fatal_signals.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "writer.h"

#define VT_FATAL_SIGNALS(X) X(SIGSEGV) X(SIGBUS) X(SIGFPE) X(SIGILL) X(SIGABRT) X(SIGTERM)
#define VT_SIGNAL_FLUSH_TIMEOUT_MS 2000
/* The kernel's sigset: what glibc's sigaction copies back into the
 * caller's (the rest of a sigset_t is left as the caller had it). */
#define VT_KERNEL_SIGSET_BYTES (64 / 8)
#define VT_LOCK_SPINS 1000000

static const int fatal_signals[] = {
#define VT_SIG(s) s,
    VT_FATAL_SIGNALS(VT_SIG)
#undef VT_SIG
};
#define VT_NSIG_FATAL (sizeof fatal_signals / sizeof fatal_signals[0])

static struct {
    atomic_bool held[VT_NSIG_FATAL]; /* the view is kept here */
    struct sigaction view[VT_NSIG_FATAL];
    atomic_flag lock;
    vt_sigaction_fn real;
    pid_t pid; /* a vfork child (another pid, no atfork) must not touch it */
} signals = {.lock = ATOMIC_FLAG_INIT};

static int slot_of(int sig)
{
    for (unsigned i = 0; i < VT_NSIG_FATAL; i++)
        if (fatal_signals[i] == sig)
            return (int)i;
    return -1;
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx);

static bool is_ours(const struct sigaction *k)
{
    return (k->sa_flags & SA_SIGINFO) && k->sa_sigaction == on_fatal_signal;
}

static bool is_default(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_DFL;
}

static bool is_ignored(const struct sigaction *a)
{
    return !(a->sa_flags & SA_SIGINFO) && a->sa_handler == SIG_IGN;
}

/* The tracer's handler for a signal whose view is v: under the program's
 * mask and flags when it has a handler (its handler runs as it asked),
 * else on the alternate stack if there is one (a stack overflow). */
static struct sigaction ours_for(const struct sigaction *v)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal_signal;
    if (is_default(v)) {
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    } else {
        sa.sa_mask = v->sa_mask;
        sa.sa_flags = (v->sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    }
    return sa;
}

static bool lock_view(bool bounded)
{
    for (long i = 0; atomic_flag_test_and_set_explicit(&signals.lock, memory_order_acquire); i++) {
        if (bounded && i >= VT_LOCK_SPINS)
            return false;
        sched_yield();
    }
    return true;
}

static void unlock_view(void)
{
    atomic_flag_clear_explicit(&signals.lock, memory_order_release);
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;
    int slot = slot_of(sig);
    if (getpid() == signals.pid)
        vt_writer_emergency_flush(VT_SIGNAL_FLUSH_TIMEOUT_MS);
    if (slot < 0) {
        errno = saved_errno;
        return;
    }
    bool locked = lock_view(true);
    struct sigaction v = signals.view[slot];
    if (!is_default(&v) && !is_ignored(&v) && (v.sa_flags & SA_RESETHAND))
        signals.view[slot].sa_handler = SIG_DFL; /* what the kernel does on delivery */
    if (locked)
        unlock_view();
    if (is_default(&v)) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        signals.real(sig, &dfl, NULL);
        raise(sig); /* blocked while we run: delivered, by default, on return */
        errno = saved_errno;
        return;
    }
    errno = saved_errno; /* the program's handler sees the interrupted errno */
    if (v.sa_flags & SA_SIGINFO)
        v.sa_sigaction(sig, info, uctx);
    else if (v.sa_handler != SIG_IGN)
        v.sa_handler(sig);
}

void vt_fatal_signals_install(vt_sigaction_fn real)
{
    signals.real = real ? real : sigaction;
    signals.pid = getpid();
    for (unsigned i = 0; i < VT_NSIG_FATAL; i++) {
        struct sigaction cur;
        memset(&cur, 0, sizeof cur);
        if (signals.real(fatal_signals[i], NULL, &cur) != 0)
            continue;
        /* Ours already (a second start in one process): the view stands.
         * Ignored stays ignored, untouched. */
        if (!is_ours(&cur)) {
            signals.view[i] = cur;
            if (!is_ignored(&cur)) {
                struct sigaction mine = ours_for(&cur);
                signals.real(fatal_signals[i], &mine, NULL);
            }
        }
        atomic_store(&signals.held[i], true);
    }
}

void vt_fatal_signals_after_fork(void)
{
    signals.pid = getpid();
    atomic_flag_clear(&signals.lock); /* a forking thread may have held it */
}

/* As glibc copies the kernel's answer into the caller's struct. */
static void answer(struct sigaction *old, const struct sigaction *a)
{
    old->sa_sigaction = a->sa_sigaction;
    old->sa_flags = a->sa_flags;
    old->sa_restorer = a->sa_restorer;
    memcpy(&old->sa_mask, &a->sa_mask, VT_KERNEL_SIGSET_BYTES);
}

bool vt_fatal_signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                                 int *rc)
{
    int slot = slot_of(sig);
    if (slot < 0 || !atomic_load(&signals.held[slot]) || getpid() != signals.pid)
        return false;
    sigset_t all, mask;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &mask);
    lock_view(false);
    struct sigaction want, kernel, prev;
    memset(&kernel, 0, sizeof kernel);
    if (act)
        want = *act; /* act and old may be the same struct */
    /* The program's disposition goes in for real first: the kernel checks
     * it and keeps it as it would untraced. */
    *rc = signals.real(sig, act ? &want : NULL, &kernel);
    int err = errno;
    prev = is_ours(&kernel) ? signals.view[slot] : kernel;
    if (*rc == 0 && act && !is_ignored(&want)) {
        struct sigaction mine = ours_for(&want), stored;
        memset(&stored, 0, sizeof stored);
        if (signals.real(sig, &mine, &stored) == 0)
            signals.view[slot] = stored;
    }
    unlock_view();
    pthread_sigmask(SIG_SETMASK, &mask, NULL);
    if (*rc == 0 && old)
        answer(old, &prev);
    errno = err;
    return true;
}
