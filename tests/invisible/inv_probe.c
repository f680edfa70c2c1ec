/*
 * What a program can see of its own process, then an ending: the C side of
 * the invisibility suite (invisible.py runs it with and without the tracer
 * and compares everything byte for byte).
 *
 *   inv_probe REPORT ENDING [CUDA]
 *
 * REPORT (a path, or "-" for stdout; stdout may be closed) gets: which
 * descriptors 0-255 are open and how (type, access mode, close-on-exec),
 * the number the next open() returns, and every signal's disposition as
 * sigaction reads it (handler kind, flags, mask), then what signal(),
 * sysv_signal(), siginterrupt() and sigset() answer for the fatal signals.
 * CUDA (default 1): allocates and frees on the simulated GPU before the
 * ending, so the traced run has events to lose. ENDING: exit, _exit,
 * _Exit, return, abort, segv, exec, and with a handler of the program's on
 * SIGSEGV or SIGABRT: segv-return (resets to the default and returns: the
 * fault again kills), segv-chain (restores the saved disposition and
 * re-raises), segv-exit (_exit(3) in the handler), segv-longjmp (jumps
 * out, allocates more, exits 0), abort-return (abort goes on and kills);
 * sigterm (a launcher stopping the rank: the default action kills) and
 * sigterm-exit (the program's own SIGTERM handler exits 4, as training
 * scripts that checkpoint on SIGTERM do).
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* sigset and siginterrupt are obsolete, and exactly what is probed. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static FILE *out;

static void probe_fds(void)
{
    for (int fd = 0; fd < 256; fd++) {
        int fdflags = fcntl(fd, F_GETFD);
        if (fdflags < 0)
            continue;
        int fl = fcntl(fd, F_GETFL);
        struct stat st;
        const char *type = "?";
        if (fstat(fd, &st) == 0)
            type = S_ISREG(st.st_mode) ? "file" : S_ISFIFO(st.st_mode) ? "fifo"
                 : S_ISCHR(st.st_mode) ? "chr" : S_ISSOCK(st.st_mode) ? "sock" : "other";
        fprintf(out, "fd %d %s acc %d cloexec %d\n", fd, type, fl & O_ACCMODE,
                (fdflags & FD_CLOEXEC) != 0);
    }
    int fd = open("/dev/null", O_RDONLY);
    fprintf(out, "next open fd %d\n", fd);
    if (fd >= 0)
        close(fd);
}

static void print_action(int sig, const struct sigaction *sa)
{
    const char *kind = "handler";
    if (!(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL)
        kind = "default";
    else if (!(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN)
        kind = "ignore";
    unsigned long mask = 0;
    for (int s = 1; s <= 64; s++)
        if (sigismember(&sa->sa_mask, s) == 1)
            mask |= 1ul << (s - 1);
    fprintf(out, "sig %d %s flags %#x mask %#lx\n", sig, kind, (unsigned)sa->sa_flags, mask);
}

static void on_signal(int sig)
{
    (void)sig;
}

static const char *name_of(sighandler_t h)
{
    return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignore" : h == SIG_ERR ? "error"
         : h == SIG_HOLD ? "hold" : h == on_signal ? "on_signal" : "other";
}

static void probe_signals(void)
{
    for (int sig = 1; sig < 32; sig++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        if (sigaction(sig, NULL, &sa) == 0)
            print_action(sig, &sa);
    }
    static const int fatal[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        int sig = fatal[i];
        struct sigaction sa;
        sighandler_t was = signal(sig, on_signal);
        fprintf(out, "signal(%d) was %s\n", sig, name_of(was));
        sigaction(sig, NULL, &sa);
        print_action(sig, &sa);
        fprintf(out, "sysv_signal(%d) was %s\n", sig, name_of(sysv_signal(sig, SIG_DFL)));
        sigaction(sig, NULL, &sa);
        print_action(sig, &sa);
        fprintf(out, "siginterrupt(%d) %d\n", sig, siginterrupt(sig, 1));
        sigaction(sig, NULL, &sa);
        print_action(sig, &sa);
        fprintf(out, "sigset(%d) was %s\n", sig, name_of(sigset(sig, SIG_DFL)));
        sigaction(sig, NULL, &sa);
        print_action(sig, &sa);
        /* back to what it was when the process started */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = SIG_DFL;
        sigaction(sig, &sa, NULL);
    }
}

static CUdeviceptr ptrs[64];

static void allocate(int n)
{
    static int ready;
    if (!ready) {
        CUcontext ctx;
        if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) {
            fprintf(stderr, "inv_probe: no simulated GPU\n");
            exit(9);
        }
        ready = 1;
    }
    for (int i = 0; i < n && i < 64; i++)
        if (cuMemAlloc(&ptrs[i], (size_t)(i + 1) << 20) != CUDA_SUCCESS)
            exit(9);
    for (int i = 0; i < n && i < 64; i += 2)
        cuMemFree(ptrs[i]);
}

static sigjmp_buf jump_back;
static struct sigaction saved;

static void segv_return(int sig)
{
    signal(sig, SIG_DFL); /* the fault happens again, and kills */
}

static void segv_chain(int sig)
{
    sigaction(sig, &saved, NULL);
    raise(sig);
}

static void segv_exit(int sig)
{
    (void)sig;
    _exit(3);
}

static void segv_longjmp(int sig)
{
    (void)sig;
    siglongjmp(jump_back, 1);
}

static void sigterm_exit(int sig)
{
    (void)sig;
    _exit(4);
}

static void abort_return(int sig)
{
    (void)sig;
}

static void install(int sig, void (*h)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &saved);
}

static void fault(void)
{
    static volatile uintptr_t nowhere = 8; /* opaque to the compiler */
    *(volatile int *)nowhere = 1;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *how = argv[2];
    int cuda = argc > 3 ? atoi(argv[3]) : 1;
    out = strcmp(argv[1], "-") ? fopen(argv[1], "w") : stdout;
    if (!out)
        return 2;
    probe_fds();
    probe_signals();
    fflush(out);
    if (out != stdout)
        fclose(out);
    if (cuda)
        allocate(40);
    if (printf("probe ending %s\n", how) < 0 || fflush(stdout) != 0)
        fprintf(stderr, "inv_probe: stdout: %s\n", strerror(errno));
    if (!strcmp(how, "exit"))
        exit(5);
    if (!strcmp(how, "_exit"))
        _exit(6);
    if (!strcmp(how, "_Exit"))
        _Exit(7);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "segv"))
        fault();
    if (!strcmp(how, "sigterm-exit"))
        install(SIGTERM, sigterm_exit);
    if (!strncmp(how, "sigterm", 7)) {
        kill(getpid(), SIGTERM);
        pause(); /* the signal may reach another thread first */
    }
    if (!strcmp(how, "exec")) {
        execl("/bin/true", "true", (char *)NULL);
        return 8;
    }
    if (!strcmp(how, "segv-return"))
        install(SIGSEGV, segv_return);
    else if (!strcmp(how, "segv-chain"))
        install(SIGSEGV, segv_chain);
    else if (!strcmp(how, "segv-exit"))
        install(SIGSEGV, segv_exit);
    else if (!strcmp(how, "segv-longjmp"))
        install(SIGSEGV, segv_longjmp);
    else if (!strcmp(how, "abort-return")) {
        install(SIGABRT, abort_return);
        abort();
    }
    if (!strncmp(how, "segv-", 5)) {
        if (sigsetjmp(jump_back, 1) == 0)
            fault();
        if (cuda)
            allocate(10);
        printf("came back\n");
        return 0;
    }
    return 0; /* "return" */
}
