/*
 * The ways a program names a thread: pthread_setname_np and
 * prctl(PR_SET_NAME). The recorder reads a thread's name (a system call)
 * once, and again only after one of these succeeded (vt_record_thread_renamed)
 * - before, it re-read every thread's name every 256 events, most of the
 * system calls the tracer made (docs/internals/PERFORMANCE.md, "Whole process"). A
 * write to /proc/self/task/N/comm is not seen here; a slow periodic re-read
 * still catches it (record/thread_buffer.h, VT_NAME_CHECK_EVERY).
 *
 * Each wrapper calls the next definition (the C library's) with the same
 * arguments and returns its result with errno as it left it; the tracer
 * only notes the success. prctl is variadic: glibc's own reads four
 * unsigned long arguments after the option and makes the system call, and
 * so does this one, passing all four on; if the next definition cannot be
 * found (a lookup this early failed) it makes that system call itself,
 * which is what glibc's prctl is.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

enum vt_thread_name_hook { VT_TNAME_pthread_setname_np, VT_TNAME_prctl, VT_TNAME_COUNT_ };

static const char *const tname_names[VT_TNAME_COUNT_] = {"pthread_setname_np", "prctl"};
static _Atomic(void *) tname_next[VT_TNAME_COUNT_];

typedef int (*setname_fn)(pthread_t, const char *);
typedef int (*prctl_fn)(int, unsigned long, unsigned long, unsigned long, unsigned long);

/* Resolved when the library is loaded, as the signal hooks are. */
__attribute__((constructor)) static void vt_thread_name_hooks_resolve(void)
{
    for (unsigned i = 0; i < VT_TNAME_COUNT_; i++)
        vt_next_cached(tname_next, tname_names, i);
}

VT_EXPORT int pthread_setname_np(pthread_t thread, const char *name)
{
    setname_fn real = (setname_fn)vt_next_cached(tname_next, tname_names,
                                                 VT_TNAME_pthread_setname_np);
    if (!real)
        return ENOSYS;
    int rc = real(thread, name);
    if (rc == 0)
        vt_record_thread_renamed();
    return rc;
}

VT_EXPORT int prctl(int option, ...)
{
    va_list ap;
    va_start(ap, option);
    unsigned long a2 = va_arg(ap, unsigned long);
    unsigned long a3 = va_arg(ap, unsigned long);
    unsigned long a4 = va_arg(ap, unsigned long);
    unsigned long a5 = va_arg(ap, unsigned long);
    va_end(ap);
    prctl_fn real = (prctl_fn)vt_next_cached(tname_next, tname_names, VT_TNAME_prctl);
    int rc = real ? real(option, a2, a3, a4, a5) : (int)syscall(SYS_prctl, option, a2, a3, a4, a5);
    if (rc == 0 && option == PR_SET_NAME)
        vt_record_thread_renamed();
    return rc;
}
