/*
 * The exec family, and _exit: an exec replaces the process image, and
 * _exit and _Exit end it, without running a destructor, so without these
 * the events of the last flush interval would be lost. _exit and _Exit
 * (a crash handler's usual end, a forked worker's) have the trace finished
 * as at exit first (vt_record_before_exit: the last events, the trailer;
 * bounded, signal-safe), then end the process; the C library's own exit()
 * reaches its _exit internally, after our destructor, not through here. Each wrapper has the trace written first (vt_record_before_exec:
 * one writer round, waited for a bounded time, no lock taken), then calls
 * the real function: same arguments, its result and errno unchanged. If the
 * exec fails, tracing simply goes on. The new image starts its own trace
 * (same pid: the numbered alternative name, docs/internals/RELIABILITY.md).
 *
 * The variadic execl, execlp and execle cannot forward their arguments:
 * they build the argv array (on the stack, as glibc does) and call the next
 * execv, execvp and execve - exactly what the C library defines them as.
 *
 * A vfork child calling exec shares the parent's memory and even its
 * thread's TLS: the recorder sees that (getpid differs from the session's
 * pid) and does nothing; the wrapper itself then only reads the cached real
 * pointer (resolved at load time, so no dlsym in such a child) and saves
 * and restores errno, both no-ops for the parent. posix_spawn, system and
 * popen do not replace the caller (and glibc's own calls of execve inside
 * them do not come through here): not wrapped.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define VT_EXEC_FUNCTIONS(X) \
    X(execve) X(execv) X(execvp) X(execvpe) X(fexecve) X(execveat) X(_exit) X(_Exit)

enum vt_exec_id {
#define VT_EXEC_ENUM(name) VT_EXEC_##name,
    VT_EXEC_FUNCTIONS(VT_EXEC_ENUM)
#undef VT_EXEC_ENUM
    VT_EXEC_COUNT_
};

static const char *const exec_names[VT_EXEC_COUNT_] = {
#define VT_EXEC_NAME(name) #name,
    VT_EXEC_FUNCTIONS(VT_EXEC_NAME)
#undef VT_EXEC_NAME
};

static _Atomic(void *) exec_real[VT_EXEC_COUNT_];

static void *real_exec(enum vt_exec_id id)
{
    return vt_next_cached(exec_real, exec_names, id);
}

/* Resolved when the library is loaded, so that a vfork child never needs
 * the loader. */
__attribute__((constructor)) static void vt_exec_hooks_resolve(void)
{
    for (unsigned i = 0; i < VT_EXEC_COUNT_; i++)
        real_exec((enum vt_exec_id)i);
}

static void before_exec(void)
{
    int saved = errno;
    vt_record_before_exec();
    errno = saved;
}

/* No next definition (cannot happen with a C library loaded after us):
 * fail the way a missing function would be reported by the system. */
static int no_exec(void)
{
    errno = ENOSYS;
    return -1;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

/* Called directly (not through our exports) by the execl family too. */
static int exec_ve(const char *path, char *const argv[], char *const envp[])
{
    before_exec();
    execve_fn real = (execve_fn)real_exec(VT_EXEC_execve);
    return real ? real(path, argv, envp) : no_exec();
}

static int exec_v(const char *path, char *const argv[])
{
    before_exec();
    execv_fn real = (execv_fn)real_exec(VT_EXEC_execv);
    return real ? real(path, argv) : no_exec();
}

static int exec_vp(const char *file, char *const argv[])
{
    before_exec();
    execv_fn real = (execv_fn)real_exec(VT_EXEC_execvp);
    return real ? real(file, argv) : no_exec();
}

VT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    return exec_ve(path, argv, envp);
}

VT_EXPORT int execv(const char *path, char *const argv[])
{
    return exec_v(path, argv);
}

VT_EXPORT int execvp(const char *file, char *const argv[])
{
    return exec_vp(file, argv);
}

VT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    before_exec();
    execve_fn real = (execve_fn)real_exec(VT_EXEC_execvpe);
    return real ? real(file, argv, envp) : no_exec();
}

VT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    before_exec();
    fexecve_fn real = (fexecve_fn)real_exec(VT_EXEC_fexecve);
    return real ? real(fd, argv, envp) : no_exec();
}

VT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                       int flags)
{
    before_exec();
    execveat_fn real = (execveat_fn)real_exec(VT_EXEC_execveat);
    return real ? real(dirfd, path, argv, envp, flags) : no_exec();
}

/* The execl family exactly as glibc builds it: argc counts arg and every
 * argument after it up to the NULL (so arg itself is never tested, as in
 * glibc), E2BIG past INT_MAX; then argv[0..argc] with the NULL. */
#define VT_COUNT_ARGS(argc, arg)                                                 \
    do {                                                                        \
        va_list ap_;                                                            \
        va_start(ap_, arg);                                                     \
        for (argc = 1; va_arg(ap_, const char *) != NULL; argc++) {             \
            if (argc == INT_MAX) {                                              \
                va_end(ap_);                                                    \
                errno = E2BIG;                                                  \
                return -1;                                                      \
            }                                                                   \
        }                                                                       \
        va_end(ap_);                                                            \
    } while (0)

/* ap by address: execle reads envp from it afterwards. */
static void fill_args(char **argv, ptrdiff_t argc, const char *arg, va_list *ap)
{
    argv[0] = (char *)arg;
    for (ptrdiff_t i = 1; i <= argc; i++)
        argv[i] = va_arg(*ap, char *);
}

VT_EXPORT int execl(const char *path, const char *arg, ...)
{
    ptrdiff_t argc;
    VT_COUNT_ARGS(argc, arg);
    char *argv[argc + 1];
    va_list ap;
    va_start(ap, arg);
    fill_args(argv, argc, arg, &ap);
    va_end(ap);
    return exec_v(path, argv);
}

VT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    ptrdiff_t argc;
    VT_COUNT_ARGS(argc, arg);
    char *argv[argc + 1];
    va_list ap;
    va_start(ap, arg);
    fill_args(argv, argc, arg, &ap);
    va_end(ap);
    return exec_vp(file, argv);
}

VT_EXPORT int execle(const char *path, const char *arg, ... /*, NULL, envp */)
{
    ptrdiff_t argc;
    VT_COUNT_ARGS(argc, arg);
    char *argv[argc + 1];
    va_list ap;
    va_start(ap, arg);
    fill_args(argv, argc, arg, &ap); /* argv[argc] is the NULL */
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return exec_ve(path, argv, envp);
}

typedef void (*exit_fn)(int);

static _Noreturn void end_process(enum vt_exec_id id, int status)
{
    int saved = errno;
    vt_record_before_exit();
    errno = saved;
    exit_fn real = (exit_fn)real_exec(id);
    if (real)
        real(status);
    syscall(SYS_exit_group, status); /* no C library after us: the system's */
    __builtin_unreachable();
}

VT_EXPORT void _exit(int status)
{
    end_process(VT_EXEC__exit, status);
}

VT_EXPORT void _Exit(int status)
{
    end_process(VT_EXEC__Exit, status);
}
