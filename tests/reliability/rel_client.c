/*
 * The traced program of the reliability tests: allocates and frees device
 * memory on the simulated driver in one of several ways, and ends the way
 * the scenario says (killed from outside, a crash, exit from a thread...).
 *
 *   rel_client MODE [ARGS]
 *
 * Times it prints are CLOCK_MONOTONIC nanoseconds, the clock of the
 * simulated driver's ledger, so the harness can compare them.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vramtrace/vramtrace.h"

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "rel_client %s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                          \
            exit(90);                                                                \
        }                                                                            \
    } while (0)
#define CHECK_CU(call) CHECK((call) == CUDA_SUCCESS)

static CUcontext ctx;

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void init_driver(void)
{
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
}

static void one_pair(size_t size)
{
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc(&p, size));
    CHECK_CU(cuMemFree(p));
}

/* ---- endless allocating threads (killed, crashed or exited under) ---- */

static atomic_int spin_ready;

static void *spin_worker(void *arg)
{
    size_t base = (size_t)(uintptr_t)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    atomic_fetch_add(&spin_ready, 1);
    for (uint64_t i = 0;; i++) {
        one_pair((base + 1) * 4096 + (i % 64) * 512);
        if (i % 4 == 3)
            usleep(200); /* a steady stream, not a flood: writer rounds stay short */
    }
    return NULL;
}

static void start_spinners(int n)
{
    pthread_t t;
    for (int i = 0; i < n; i++)
        CHECK(pthread_create(&t, NULL, spin_worker, (void *)(uintptr_t)i) == 0);
    while (atomic_load(&spin_ready) < n)
        usleep(1000);
}

/* Prints "ready" (the harness times the kill from it), runs for ms, then
 * prints the time just before the end and ends the way `how` says. */
static void *ender(void *arg)
{
    const char *how = arg;
    uint64_t t = mono_ns();
    printf("end %llu\n", (unsigned long long)t);
    fflush(stdout);
    if (!strcmp(how, "segv")) {
        static volatile uintptr_t nowhere = 16; /* opaque to the compiler */
        *(volatile int *)nowhere = 1;
    } else if (!strcmp(how, "abort")) {
        abort();
    } else if (!strcmp(how, "exit")) {
        exit(7); /* from a thread, others still allocating */
    } else if (!strcmp(how, "_exit")) {
        _exit(7);
    }
    return NULL;
}

static int mode_spin(int argc, char **argv)
{
    /* spin THREADS [MS HOW]: HOW = segv | abort | exit | _exit (from a
     * thread of its own); without MS runs until killed */
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    init_driver();
    start_spinners(threads);
    printf("ready %llu\n", (unsigned long long)mono_ns());
    fflush(stdout);
    if (argc > 4) {
        usleep((useconds_t)atoi(argv[3]) * 1000);
        pthread_t t;
        CHECK(pthread_create(&t, NULL, ender, argv[4]) == 0);
        pthread_join(t, NULL);
    }
    for (;;)
        pause();
}

/* ---- load: every event once, per-thread order, by sequence numbers ---- */

/* Sizes carry (thread, sequence): 512 * (thread << 17 | i), + 512 so that
 * none is 0. Every thread holds one allocation at a time. */
#define LOAD_SEQ_BITS 17

static int load_pairs;

static void *load_worker(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (int i = 0; i < load_pairs; i++)
        one_pair(512 * ((t << LOAD_SEQ_BITS | (uint64_t)i) + 1));
    return NULL;
}

static int mode_load(int argc, char **argv)
{
    int threads = argc > 2 ? atoi(argv[2]) : 16;
    load_pairs = argc > 3 ? atoi(argv[3]) : 100000;
    CHECK(load_pairs < (1 << LOAD_SEQ_BITS));
    init_driver();
    pthread_t th[64];
    CHECK(threads <= 64);
    for (int i = 0; i < threads; i++)
        CHECK(pthread_create(&th[i], NULL, load_worker, (void *)(uintptr_t)i) == 0);
    for (int i = 0; i < threads; i++)
        CHECK(pthread_join(th[i], NULL) == 0);
    printf("load %d x %d pairs\n", threads, load_pairs);
    return 0;
}

/* ---- slowfree: frees that stay in the driver while others go on ----
 *
 * Two threads "rel-slow" each free a block with a free slow_free.c holds
 * back (REL_SLOW_FREE_MS), the second 10 ms after the first (two at once:
 * the writer must not wait for each in turn); once both are in their free,
 * the main thread makes PAIRS allocation/free pairs and says "pairs done",
 * then waits for them. */

static atomic_int slow_started;

static void *slow_worker(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK(pthread_setname_np(pthread_self(), "rel-slow") == 0);
    CUdeviceptr p = 0;
    CHECK_CU(cuMemAlloc(&p, 7 << 20));
    atomic_fetch_add(&slow_started, 1);
    CHECK_CU(cuMemFree(p));
    return NULL;
}

static int mode_slowfree(int argc, char **argv)
{
    int pairs = argc > 2 ? atoi(argv[2]) : 1000;
    init_driver();
    pthread_t t[2];
    for (int k = 0; k < 2; k++) {
        CHECK(pthread_create(&t[k], NULL, slow_worker, NULL) == 0);
        while (atomic_load(&slow_started) <= k)
            sched_yield();
        usleep(10 * 1000);
    }
    usleep(50 * 1000); /* both in their free by now */
    for (int i = 0; i < pairs; i++)
        one_pair(4096 + 512 * (size_t)(i % 8));
    printf("pairs done %llu\n", (unsigned long long)mono_ns());
    for (int k = 0; k < 2; k++)
        CHECK(pthread_join(t[k], NULL) == 0);
    printf("slow free done %llu\n", (unsigned long long)mono_ns());
    return 0;
}

/* ---- processes ---- */

static int mode_forkstorm(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 100;
    init_driver();
    one_pair(1 << 20);
    int ok = 0;
    for (int i = 0; i < n; i++) {
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            one_pair((size_t)(i + 1) << 12);
            exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf("forks %d ok %d\n", n, ok);
    return ok == n ? 0 : 1;
}

/* A forks+execs B forks+execs C: each allocates, the parent waits. */
static int mode_chain(int argc, char **argv)
{
    int depth = argc > 2 ? atoi(argv[2]) : 3;
    init_driver();
    one_pair((size_t)depth << 20);
    if (depth > 1) {
        char next[16];
        snprintf(next, sizeof next, "%d", depth - 1);
        fflush(NULL);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            execl("/proc/self/exe", argv[0], "chain", next, (char *)NULL);
            _exit(127);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    printf("chain %d done\n", depth);
    return 0;
}

/* fork while another thread is inside the tracer (holding its locks, or
 * in libunwind / dl_iterate_phdr): the children must not hang. */
static atomic_int hammering = 1;

static void *hammer(void *arg)
{
    (void)arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    atomic_fetch_add(&spin_ready, 1);
    while (atomic_load(&hammering))
        one_pair(8192);
    return NULL;
}

static int mode_forkbusy(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : 30;
    init_driver();
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, hammer, NULL) == 0);
    while (atomic_load(&spin_ready) < 2)
        usleep(100);
    int ok = 0;
    double worst = 0; /* the longest fork() in the parent, seconds */
    for (int i = 0; i < n; i++) {
        usleep(2000); /* the hammers build a backlog: hooks wait for blocks */
        fflush(NULL);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid > 0) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
            worst = s > worst ? s : worst;
        }
        if (pid == 0) {
            alarm(10); /* a hang fails instead of blocking the harness */
            one_pair(4096);
            if (i % 2) { /* half of them fork again, with the lock state they inherited */
                pid_t g = fork();
                if (g == 0) {
                    one_pair(4096);
                    exit(0);
                }
                int st;
                waitpid(g, &st, 0);
                exit(WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
            }
            exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    atomic_store(&hammering, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("forks %d ok %d worst_fork_s %.3f\n", n, ok, worst);
    return ok == n ? 0 : 1;
}

/* ---- signals: a SIGALRM storm, the program's own EINTR handling ---- */

static atomic_ulong alarms;

static void on_alarm(int sig)
{
    (void)sig;
    atomic_fetch_add(&alarms, 1);
}

static int mode_alarms(int argc, char **argv)
{
    int pairs = argc > 2 ? atoi(argv[2]) : 20000;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART: slow calls fail with EINTR */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
    struct itimerval it = {{0, 1000}, {0, 1000}}; /* ~1 kHz */
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
    init_driver();
    unsigned long eintr_reads = 0, eintr_sleeps = 0;
    int fds[2];
    CHECK(pipe(fds) == 0);
    uint64_t sum = 0;
    for (int i = 0; i < pairs; i++) {
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAlloc(&p, (size_t)(i % 1000 + 1) * 512));
        sum += (uint64_t)(i % 1000 + 1);
        CHECK_CU(cuMemFree(p));
        if (i % 1000 == 999) {
            /* a read that blocks until the data arrives: interrupted calls
             * are the program's to retry, and it counts them */
            pid_t w = fork();
            CHECK(w >= 0);
            if (w == 0) {
                struct timespec d = {0, 3 * 1000 * 1000};
                while (nanosleep(&d, &d) != 0 && errno == EINTR)
                    ;
                ssize_t ignored = write(fds[1], "x", 1);
                (void)ignored;
                _exit(0);
            }
            char c;
            ssize_t r;
            while ((r = read(fds[0], &c, 1)) < 0 && errno == EINTR)
                eintr_reads++;
            CHECK(r == 1);
            while (waitpid(w, NULL, 0) < 0 && errno == EINTR)
                ;
            struct timespec d = {0, 2 * 1000 * 1000};
            while (nanosleep(&d, &d) != 0) {
                CHECK(errno == EINTR);
                eintr_sleeps++;
            }
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    /* what must not depend on the tracer goes to stdout; the counts of
     * interruptions vary run to run, so only their presence is printed */
    printf("pairs %d sum %llu interrupted %s\n", pairs, (unsigned long long)sum,
           eintr_reads + eintr_sleeps > 0 ? "yes" : "no");
    fprintf(stderr, "alarms %lu eintr reads %lu sleeps %lu\n", atomic_load(&alarms), eintr_reads,
            eintr_sleeps);
    return 0;
}

/* ---- exec right after recording: the trace must not lose the events ---- */

extern char **environ;

/* Runs the exec function named `how` on path with argv (3 arguments and
 * NULL); returns only if it failed. */
static int exec_by(const char *how, const char *path, char *const argv[])
{
    if (!strcmp(how, "execve"))
        return execve(path, argv, environ);
    if (!strcmp(how, "execv"))
        return execv(path, argv);
    if (!strcmp(how, "execvp"))
        return execvp(path, argv);
    if (!strcmp(how, "execvpe"))
        return execvpe(path, argv, environ);
    if (!strcmp(how, "execl"))
        return execl(path, argv[0], argv[1], argv[2], (char *)NULL);
    if (!strcmp(how, "execlp"))
        return execlp(path, argv[0], argv[1], argv[2], (char *)NULL);
    if (!strcmp(how, "execle"))
        return execle(path, argv[0], argv[1], argv[2], (char *)NULL, environ);
    if (!strcmp(how, "execveat"))
        return execveat(AT_FDCWD, path, argv, environ, 0);
    if (!strcmp(how, "fexecve")) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return -1;
        int rc = fexecve(fd, argv, environ);
        int err = errno;
        close(fd);
        errno = err;
        return rc;
    }
    errno = EINVAL;
    return -1;
}

/* exec HOW PAIRS: PAIRS allocations, a failing exec (its result and errno
 * on stdout: the same with and without the tracer), one more pair, then
 * at once the exec of `execimage PAIRS` (the time just before it on
 * stderr: "exec-at NS"). */
static int mode_exec(int argc, char **argv)
{
    CHECK(argc > 3);
    const char *how = argv[2];
    int pairs = atoi(argv[3]);
    init_driver();
    for (int i = 0; i < pairs; i++)
        one_pair(512 * (size_t)(i + 1));
    char *failing[] = {argv[0], "execimage", "0", NULL};
    /* /dev/null exists but is no program (fexecve needs a file to open) */
    const char *bad = !strcmp(how, "fexecve") ? "/dev/null" : "/nonexistent/vt-no-such-program";
    errno = 0;
    int rc = exec_by(how, bad, failing);
    printf("%s of a non-program: rc %d, %s\n", how, rc, strerror(errno));
    one_pair(512 * (size_t)(pairs + 1)); /* recording goes on after a failed exec */
    char *next[] = {argv[0], "execimage", argv[3], NULL};
    fprintf(stderr, "exec-at %llu\n", (unsigned long long)mono_ns());
    fflush(NULL);
    exec_by(how, "/proc/self/exe", next);
    CHECK(!"the exec of /proc/self/exe failed");
    return 1;
}

/* The image an exec started: allocates again and exits normally. */
static int mode_execimage(int argc, char **argv)
{
    int pairs = argc > 2 ? atoi(argv[2]) : 0;
    init_driver();
    for (int i = 0; i < pairs; i++)
        one_pair(512 * (size_t)(100000 + i));
    printf("image after the exec: %d pairs\n", pairs);
    return 0;
}

/* vfork PAIRS: the child of a vfork (which shares this process's memory,
 * even the thread's TLS) execs a program that records nothing; the parent
 * records before and after: no hang, a complete trace of the parent. */
static int mode_vfork(int argc, char **argv)
{
    int pairs = argc > 2 ? atoi(argv[2]) : 100;
    init_driver();
    for (int i = 0; i < pairs; i++)
        one_pair(512 * (size_t)(i + 1));
    fflush(NULL);
    pid_t pid = vfork();
    if (pid == 0) {
        execl("/proc/self/exe", argv[0], "noop", (char *)NULL);
        _exit(127);
    }
    CHECK(pid > 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < pairs; i++)
        one_pair(512 * (size_t)(pairs + i + 1));
    printf("vfork+exec child exit 0, %d pairs before and after\n", pairs);
    return 0;
}

/* ---- clonevm: a raw clone(CLONE_VM | SIGCHLD) child (a known limit) ----
 *
 * No fork handlers run for a raw clone, and with CLONE_VM the child shares
 * this process's memory - the recorder, its buffers, even this thread's
 * TLS. docs/internals/RELIABILITY.md ("Limits"): its events are filed under the
 * parent's pid (and thread), in the parent's trace. The parent waits while
 * the child allocates 2 MiB, so nothing runs beside it. */
static char clone_stack[256 * 1024] __attribute__((aligned(64)));

static int cloned(void *arg)
{
    (void)arg;
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, 2 << 20) != CUDA_SUCCESS)
        return 1;
    return cuMemFree(p) == CUDA_SUCCESS ? 0 : 1;
}

static int mode_clonevm(void)
{
    init_driver();
    one_pair(1 << 20);
    pid_t pid = clone(cloned, clone_stack + sizeof clone_stack, CLONE_VM | SIGCHLD, NULL);
    CHECK(pid > 0);
    int st;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    one_pair(3 << 20);
    printf("parent %ld, clone child %ld exit 0\n", (long)getpid(), (long)pid);
    return 0;
}

/* ---- hostile names: thread and phase names with format directives ---- */

static void *named(void *arg)
{
    pthread_setname_np(pthread_self(), (const char *)arg);
    CHECK_CU(cuCtxSetCurrent(ctx));
    vramtrace_phase_push("%n%s%n%s phase");
    one_pair(1 << 16);
    vramtrace_mark("%x%p%n mark");
    vramtrace_phase_pop();
    return NULL;
}

static int mode_names(void)
{
    init_driver();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, named, "%n%s%n%s") == 0);
    CHECK(pthread_join(t, NULL) == 0);
    printf("names done\n");
    return 0;
}

/* ---- the program's own file on every descriptor number ---- */

/* dup2own FILE ROUNDS: one thread allocates (the writer, at
 * VRAMTRACE_FLUSH_MS=1, writes a chunk every millisecond) while the main
 * thread, from before the first allocation on, puts its own file on every
 * descriptor number 3 to min(RLIMIT_NOFILE, 1024) - 1 but its own and the
 * simulated driver's ledger - the tracer's included -, writes one line
 * through it, and closes those numbers again, at least ROUNDS times. Then
 * it checks that none of its descriptors is the trace file (the tracer's
 * is not in the program's table), and reads its file back: only its own
 * lines, in order, may be there (a trace chunk written into it would
 * show). Prints "dup2own LINES lines, PAIRS pairs". */
static atomic_int dup_stop;
#define DUP_MIN_PAIRS 1000

static void *dup_allocator(void *arg)
{
    atomic_ulong *pairs = arg;
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (uint64_t i = 0; !atomic_load(&dup_stop); i++) {
        one_pair(4096 + (i % 64) * 512);
        atomic_fetch_add(pairs, 1);
        if (i % 4 == 3)
            usleep(100);
    }
    return NULL;
}

static const char *own_line(int round, char buf[32])
{
    snprintf(buf, 32, "own line %06d\n", round);
    return buf;
}

/* EBUSY: another thread is opening a file at that number (dup2(2)) */
static void put_own(int own, int fd)
{
    int rc;
    while ((rc = dup2(own, fd)) < 0 && errno == EBUSY)
        sched_yield();
    if (rc != fd) {
        fprintf(stderr, "dup2own: dup2 onto %d: %s\n", fd, strerror(errno));
        exit(90);
    }
}

static int mode_dup2own(int argc, char **argv)
{
    CHECK(argc > 3);
    int rounds = atoi(argv[3]);
    int own = open(argv[2], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    CHECK(own >= 0);
    struct rlimit rl;
    int top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)top)
        top = (int)rl.rlim_cur;
    init_driver();
    /* the driver's ledger is the program's too (the test's truth): spared */
    static bool spare[1024];
    struct stat ledger;
    const char *ledger_path = getenv("VTSIM_LEDGER");
    if (ledger_path && stat(ledger_path, &ledger) == 0)
        for (int fd = 3; fd < top; fd++) {
            struct stat st;
            spare[fd] = fstat(fd, &st) == 0 && st.st_dev == ledger.st_dev &&
                        st.st_ino == ledger.st_ino;
        }
    spare[own] = true;
    atomic_ulong pairs = 0;
    pthread_t t;
    char buf[32];
    /* at least ROUNDS rounds, and on until the writer has had
     * DUP_MIN_PAIRS pairs to write meanwhile (a loaded machine may keep
     * the allocating thread off the CPU) */
    int r;
    for (r = 0; r < rounds || (atomic_load(&pairs) < DUP_MIN_PAIRS && r < 100 * rounds); r++) {
        for (int fd = 3; fd < top; fd++)
            if (!spare[fd])
                put_own(own, fd);
        if (r == 0)
            CHECK(pthread_create(&t, NULL, dup_allocator, &pairs) == 0);
        const char *line = own_line(r, buf);
        CHECK(write(own, line, strlen(line)) == (ssize_t)strlen(line));
        for (int fd = 3; fd < top; fd++)
            if (!spare[fd])
                close(fd);
    }
    atomic_store(&dup_stop, 1);
    CHECK(pthread_join(t, NULL) == 0);
    rounds = r;
    /* none of the program's descriptors is the trace (the tracer's lives
     * in a table of its own); said at the end, the rest is worth knowing */
    char trace[4096];
    struct stat tst;
    int trace_fd = -1;
    if (vramtrace_trace_path(trace, sizeof trace) > 0 && stat(trace, &tst) == 0)
        for (int fd = 0; fd < top; fd++) {
            struct stat st;
            if (fstat(fd, &st) == 0 && st.st_dev == tst.st_dev && st.st_ino == tst.st_ino)
                trace_fd = fd;
        }
    /* read back: exactly the lines written, nothing else */
    off_t size = lseek(own, 0, SEEK_END);
    size_t want = (size_t)rounds * strlen(own_line(0, buf));
    char *text = malloc((size_t)size + 1);
    CHECK(text && pread(own, text, (size_t)size, 0) == (ssize_t)size);
    size_t at = 0;
    for (int r = 0; r < rounds && at < (size_t)size; r++) {
        const char *line = own_line(r, buf);
        size_t n = strlen(line);
        if ((size_t)size - at < n || memcmp(text + at, line, n) != 0) {
            fprintf(stderr, "dup2own: the file differs at byte %zu (line %d): %zu bytes, "
                            "expected %zu\n", at, r, (size_t)size, want);
            return 91;
        }
        at += n;
    }
    if ((size_t)size != want) {
        fprintf(stderr, "dup2own: the file has %zu bytes, expected %zu\n", (size_t)size, want);
        return 91;
    }
    free(text);
    close(own);
    if (trace_fd >= 0) {
        fprintf(stderr, "dup2own: descriptor %d of the program's was the trace\n", trace_fd);
        return 92;
    }
    printf("dup2own %d lines, %lu pairs\n", rounds, (unsigned long)atomic_load(&pairs));
    return 0;
}

/* closeout MS: once its trace file exists, closes its stdout (a pipe to
 * the harness) and allocates on for MS milliseconds: the harness must see
 * the end of the pipe MS before the process ends - no copy of the
 * program's descriptor may be held by the tracer (file_keeper.h). */
static int mode_closeout(int argc, char **argv)
{
    CHECK(argc > 2);
    int ms = atoi(argv[2]);
    init_driver();
    one_pair(4096);
    char trace[4096];
    for (int i = 0; i < 2000 && vramtrace_trace_path(trace, sizeof trace) <= 0; i++)
        usleep(1000);
    CHECK(vramtrace_trace_path(trace, sizeof trace) > 0);
    printf("closing\n");
    fflush(stdout);
    close(1);
    uint64_t end = mono_ns() + (uint64_t)ms * 1000000ull;
    while (mono_ns() < end) {
        one_pair(8192);
        usleep(1000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "spin"))
        return mode_spin(argc, argv);
    if (!strcmp(mode, "load"))
        return mode_load(argc, argv);
    if (!strcmp(mode, "forkstorm"))
        return mode_forkstorm(argc, argv);
    if (!strcmp(mode, "chain"))
        return mode_chain(argc, argv);
    if (!strcmp(mode, "forkbusy"))
        return mode_forkbusy(argc, argv);
    if (!strcmp(mode, "alarms"))
        return mode_alarms(argc, argv);
    if (!strcmp(mode, "names"))
        return mode_names();
    if (!strcmp(mode, "exec"))
        return mode_exec(argc, argv);
    if (!strcmp(mode, "execimage"))
        return mode_execimage(argc, argv);
    if (!strcmp(mode, "vfork"))
        return mode_vfork(argc, argv);
    if (!strcmp(mode, "clonevm"))
        return mode_clonevm();
    if (!strcmp(mode, "dup2own"))
        return mode_dup2own(argc, argv);
    if (!strcmp(mode, "closeout"))
        return mode_closeout(argc, argv);
    if (!strcmp(mode, "slowfree"))
        return mode_slowfree(argc, argv);
    if (!strcmp(mode, "noop"))
        return 0;
    fprintf(stderr, "usage: rel_client spin|load|forkstorm|chain|forkbusy|alarms|names|"
                    "exec|execimage|vfork|clonevm|dup2own|closeout|slowfree|noop ...\n");
    return 2;
}
