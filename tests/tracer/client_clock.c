/* Allocations spread over many writer rounds, from several threads and a
 * forked child, for clock_check.py: every recorded time must fall inside
 * the ledger's window for its call. Each allocation is freed at once, so
 * the window of an allocation (from its ledger line to its free's) is a
 * few microseconds wide: a time converted too early or too late falls out.
 * With argument "abort" the process ends in abort() after a last batch of
 * calls, which only the fatal-signal flush writes. With "slowfree" the
 * first worker is named "rel-slow", whose frees tests/simdriver/slow_free.c
 * keeps in the driver: the writer's rounds meet its frees still pending
 * and hold the other threads' events back behind them. */
#include <cuda.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client_util.h"

#define THREADS 3
#define PAIRS 60
#define PAUSE_US 2000 /* between pairs: the events span many writer rounds */

static CUcontext ctx;

static void pause_a_little(void)
{
    struct timespec ts = {0, PAUSE_US * 1000L};
    nanosleep(&ts, NULL);
}

static void pairs(size_t base, int n, int pause)
{
    for (int i = 0; i < n; i++) {
        CUdeviceptr p = 0;
        CHECK_CU(cuMemAlloc(&p, base + (size_t)i * 512));
        CHECK_CU(cuMemFree(p));
        if (pause)
            pause_a_little();
    }
}

static int slow_first_worker;

static void *worker(void *arg)
{
    if (slow_first_worker && (uintptr_t)arg == 1 << 20)
        CHECK(pthread_setname_np(pthread_self(), "rel-slow") == 0);
    CHECK_CU(cuCtxSetCurrent(ctx));
    pairs((size_t)(uintptr_t)arg, PAIRS, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    int end_in_abort = 0;
    for (int i = 1; i < argc; i++) {
        end_in_abort |= strcmp(argv[i], "abort") == 0;
        slow_first_worker |= strcmp(argv[i], "slowfree") == 0;
    }
    pthread_t t[THREADS];
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK(pthread_create(&t[i], NULL, worker, (void *)((i + 1) << 20)) == 0);
    pairs(64 << 20, PAIRS / 2, 1);
    /* A child forked while the threads record: its writer starts anew,
     * with its own calibration. */
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        CHECK_CU(cuInit(0));
        CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
        CHECK_CU(cuCtxSetCurrent(ctx));
        pairs(96 << 20, PAIRS / 2, 1);
        exit(0); /* exit, not _exit: the child's trace is closed by atexit */
    }
    pairs(128 << 20, PAIRS / 2, 1);
    for (int i = 0; i < THREADS; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (end_in_abort) {
        /* no pause: within one flush interval, most likely unwritten yet */
        pairs(160 << 20, 50, 0);
        struct rlimit no_core = {0, 0};
        setrlimit(RLIMIT_CORE, &no_core);
        abort();
    }
    CHECK_CU(cuDevicePrimaryCtxRelease(0));
    return 0;
}
