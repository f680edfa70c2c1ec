/*
 * Signal dispositions as the program set them (signal_hooks.def). The
 * tracer keeps its handler on the fatal signals so that it can flush before
 * the process dies; the program must never see it, whichever way it asks
 * (Python's signal.getsignal() must say SIG_DFL, not the tracer's
 * handler). sigaction is the recorder's (vt_record_sigaction, the view);
 * the older interfaces are built on it exactly as glibc builds them on its
 * internal sigaction - same mask, same flags, same answers - since glibc's
 * own versions would ask the kernel and get the tracer's handler back.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include "recorder_control.h" /* vt_sigaction_fn */

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

enum vt_signal_hook_id {
#define VT_SIGNAL_HOOK(name) VT_SIGHOOK_##name,
#include "signal_hooks.def"
#undef VT_SIGNAL_HOOK
    VT_SIGHOOK_COUNT_
};

static const char *const hook_names[VT_SIGHOOK_COUNT_] = {
#define VT_SIGNAL_HOOK(name) #name,
#include "signal_hooks.def"
#undef VT_SIGNAL_HOOK
};

static _Atomic(void *) next_fn[VT_SIGHOOK_COUNT_];
/* Set once the recorder has started (autostart.c): before, there is no
 * view to keep, and a sanitizer runtime calls sigaction while it is not
 * yet initialised - that path (sigaction_via) must not run instrumented
 * code, as for dlsym (VT_NO_SANITIZE, hooks_internal.h). */
static atomic_bool armed;

void vt_signal_hooks_arm(void)
{
    atomic_store(&armed, true);
}

/* next(), without instrumentation and without the recursion guard: the
 * C library's dlsym answers RTLD_NEXT relative to its caller, us. */
VT_NO_SANITIZE static void *next_uninstrumented(enum vt_signal_hook_id id)
{
    void *fn = atomic_load_explicit(&next_fn[id], memory_order_acquire);
    if (fn == NULL) {
        vt_dlsym_fn real_dlsym = vt_real_dlsym_fn();
        fn = real_dlsym ? real_dlsym(RTLD_NEXT, hook_names[id]) : NULL;
        if (fn)
            atomic_store_explicit(&next_fn[id], fn, memory_order_release);
    }
    return fn;
}

/* The next definition after this library (the C library's). */
static void *next(enum vt_signal_hook_id id)
{
    return vt_next_cached(next_fn, hook_names, id);
}

/* Resolved when the library is loaded (a vfork child never needs the
 * loader). */
__attribute__((constructor)) static void vt_signal_hooks_resolve(void)
{
    for (unsigned i = 0; i < VT_SIGHOOK_COUNT_; i++)
        next((enum vt_signal_hook_id)i);
}

typedef sighandler_t (*signal_fn)(int, sighandler_t);
typedef int (*siginterrupt_fn)(int, int);

int vt_libc_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    vt_sigaction_fn real = (vt_sigaction_fn)next(VT_SIGHOOK_sigaction);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return real(sig, act, old);
}

VT_NO_SANITIZE static int sigaction_via(enum vt_signal_hook_id id, int sig,
                                        const struct sigaction *act, struct sigaction *old)
{
    int rc;
    if (atomic_load_explicit(&armed, memory_order_acquire) &&
        vt_record_sigaction(sig, act, old, &rc))
        return rc;
    vt_sigaction_fn real = (vt_sigaction_fn)next_uninstrumented(id);
    if (real == NULL) {
        errno = ENOSYS;
        return -1;
    }
    return real(sig, act, old);
}

VT_NO_SANITIZE VT_EXPORT int sigaction(int sig, const struct sigaction *act,
                                        struct sigaction *old)
{
    return sigaction_via(VT_SIGHOOK_sigaction, sig, act, old);
}

VT_EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);
VT_NO_SANITIZE VT_EXPORT int __sigaction(int sig, const struct sigaction *act,
                                          struct sigaction *old)
{
    return sigaction_via(VT_SIGHOOK___sigaction, sig, act, old);
}

/* Signals siginterrupt() made interrupting, for signal(): glibc keeps this
 * set itself, and its signal() consults it (no SA_RESTART). Held signals
 * only; the others are glibc's business. */
static atomic_uint_fast64_t interrupting;

static bool is_interrupting(int sig)
{
    return sig > 0 && sig <= 64 && (atomic_load(&interrupting) >> (sig - 1)) & 1u;
}

/* A handler set the way one of glibc's functions sets it: its result, or
 * the next definition's when sig is not held. */
static sighandler_t set_handler(enum vt_signal_hook_id id, int sig, sighandler_t handler,
                                int flags, bool mask_itself)
{
    struct sigaction act, old;
    int rc;
    memset(&act, 0, sizeof act);
    memset(&old, 0, sizeof old);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (mask_itself)
        sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    if (handler != SIG_ERR && vt_record_sigaction(sig, &act, &old, &rc))
        return rc < 0 ? SIG_ERR : old.sa_handler;
    signal_fn real = (signal_fn)next(id);
    if (real == NULL) {
        errno = ENOSYS;
        return SIG_ERR;
    }
    return real(sig, handler);
}

/* glibc's signal (BSD semantics): the signal masked in its handler,
 * restarting unless siginterrupt said otherwise. bsd_signal and ssignal
 * are the same function. */
static sighandler_t bsd_signal_via(enum vt_signal_hook_id id, int sig, sighandler_t handler)
{
    return set_handler(id, sig, handler, is_interrupting(sig) ? 0 : SA_RESTART, true);
}

VT_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    return bsd_signal_via(VT_SIGHOOK_signal, sig, handler);
}

VT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler);
VT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler)
{
    return bsd_signal_via(VT_SIGHOOK_bsd_signal, sig, handler);
}

VT_EXPORT sighandler_t ssignal(int sig, sighandler_t handler)
{
    return bsd_signal_via(VT_SIGHOOK_ssignal, sig, handler);
}

/* System V semantics: reset on delivery, not masked in its handler. What
 * a strict C program's signal() is (glibc maps it to __sysv_signal). */
VT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler)
{
    return set_handler(VT_SIGHOOK_sysv_signal, sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

VT_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler)
{
    return set_handler(VT_SIGHOOK___sysv_signal, sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

VT_EXPORT int siginterrupt(int sig, int flag)
{
    struct sigaction act;
    int rc;
    memset(&act, 0, sizeof act);
    if (!vt_record_sigaction(sig, NULL, &act, &rc)) {
        siginterrupt_fn real = (siginterrupt_fn)next(VT_SIGHOOK_siginterrupt);
        if (real == NULL) {
            errno = ENOSYS;
            return -1;
        }
        return real(sig, flag);
    }
    if (rc < 0)
        return -1;
    uint_fast64_t bit = (uint_fast64_t)1 << (sig - 1);
    if (flag) {
        atomic_fetch_or(&interrupting, bit);
        act.sa_flags &= ~SA_RESTART;
    } else {
        atomic_fetch_and(&interrupting, ~bit);
        act.sa_flags |= SA_RESTART;
    }
    vt_record_sigaction(sig, &act, NULL, &rc);
    return rc < 0 ? -1 : 0;
}

/* System V's sigset, with SIG_HOLD, as glibc writes it. */
VT_EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
    struct sigaction act, old;
    int rc;
    memset(&old, 0, sizeof old);
    if (disp == SIG_ERR || !vt_record_sigaction(sig, NULL, &old, &rc)) {
        signal_fn real = (signal_fn)next(VT_SIGHOOK_sigset);
        if (real == NULL) {
            errno = ENOSYS;
            return SIG_ERR;
        }
        return real(sig, disp);
    }
    sigset_t set, oset;
    sigemptyset(&set);
    sigaddset(&set, sig);
    if (disp == SIG_HOLD) {
        if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
            return SIG_ERR;
        if (sigismember(&oset, sig))
            return SIG_HOLD;
        return rc < 0 ? SIG_ERR : old.sa_handler;
    }
    memset(&act, 0, sizeof act);
    act.sa_handler = disp;
    sigemptyset(&act.sa_mask);
    if (!vt_record_sigaction(sig, &act, &old, &rc) || rc < 0)
        return SIG_ERR;
    if (sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
        return SIG_ERR;
    return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
}
