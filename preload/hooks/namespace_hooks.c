/*
 * unshare and setns: the namespace changes the kernel refuses (EINVAL) to
 * a process of several threads - a new user namespace (what rootless
 * containers, bwrap, podman and apptainer begin with), joining a user,
 * mount or time namespace, and unsharing the thread group's own state
 * (CLONE_THREAD, CLONE_SIGHAND, CLONE_VM).
 *
 * A process has no thread of the tracer's before its first event (the
 * writer starts there: record/writer/writer.h), so a launcher or sandbox
 * that never uses CUDA is of one thread, as untraced, and these wrappers
 * only pass its calls on. A process that traces has the writer and its
 * keeper: for such a call they end for the call's length and start again
 * after it, whatever its result (vt_record_before_unthreaded); the trace
 * goes on in the same file. The wrapper returns the real call's result
 * with errno as it left it. A program with threads of its own gets the
 * kernel's EINVAL, as untraced.
 *
 * clone and clone3 with CLONE_NEWUSER need no such thing (the new
 * namespace is the child's, and the kernel does not ask the parent to be
 * of one thread): not wrapped. Neither is a raw syscall(SYS_unshare),
 * which no wrapper can see.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef NS_GET_NSTYPE
#define NS_GET_NSTYPE _IO(0xb7, 0x3) /* linux/nsfs.h, Linux 4.11 */
#endif

enum vt_ns_hook { VT_NS_unshare, VT_NS_setns, VT_NS_COUNT_ };

static const char *const ns_names[VT_NS_COUNT_] = {"unshare", "setns"};
static _Atomic(void *) ns_next[VT_NS_COUNT_];

typedef int (*unshare_fn)(int);
typedef int (*setns_fn)(int, int);

/* Resolved when the library is loaded, as the signal hooks are. */
__attribute__((constructor)) static void vt_namespace_hooks_resolve(void)
{
    for (unsigned i = 0; i < VT_NS_COUNT_; i++)
        vt_next_cached(ns_next, ns_names, i);
}

/* unshare's flags that ask for a process of one thread (the kernel's
 * check_unshare_flags: CLONE_NEWUSER implies CLONE_THREAD, CLONE_VM
 * implies CLONE_SIGHAND, which implies CLONE_THREAD). */
#define VT_UNSHARE_ALONE (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)
/* setns's namespace types that do: a user namespace (the thread group must
 * be empty), a mount namespace (the fs state shared by no other thread),
 * a time namespace (no other thread). */
#define VT_SETNS_ALONE (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWTIME)

static bool setns_needs_one_thread(int fd, int nstype)
{
    if (nstype != 0)
        return (nstype & VT_SETNS_ALONE) != 0; /* one type, or a pidfd's set */
    /* "any type": the descriptor's own (a pidfd answers ENOTTY, and the
     * kernel refuses it a type 0 anyway) */
    int err = errno;
    int type = ioctl(fd, NS_GET_NSTYPE);
    errno = err;
    return type > 0 && (type & VT_SETNS_ALONE) != 0;
}

/* The real call, with the tracer's threads away if it needs a process of
 * one thread; its result and its errno. */
static int call_alone(bool alone, int (*call)(int, int), int a, int b)
{
    bool paused = alone && vt_record_before_unthreaded();
    int rc = call(a, b);
    int err = errno;
    vt_record_after_unthreaded(paused);
    errno = err;
    return rc;
}

static int real_unshare(int flags, int unused)
{
    (void)unused;
    unshare_fn real = (unshare_fn)vt_next_cached(ns_next, ns_names, VT_NS_unshare);
    return real ? real(flags) : (int)syscall(SYS_unshare, flags);
}

static int real_setns(int fd, int nstype)
{
    setns_fn real = (setns_fn)vt_next_cached(ns_next, ns_names, VT_NS_setns);
    return real ? real(fd, nstype) : (int)syscall(SYS_setns, fd, nstype);
}

VT_EXPORT int unshare(int flags)
{
    return call_alone((flags & VT_UNSHARE_ALONE) != 0, real_unshare, flags, 0);
}

VT_EXPORT int setns(int fd, int nstype)
{
    return call_alone(setns_needs_one_thread(fd, nstype), real_setns, fd, nstype);
}
