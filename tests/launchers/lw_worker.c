/*
 * A rank of the launcher stand-ins (tests/launchers/): allocates through the
 * simulated runtime as a training rank would, with a peak that depends on
 * its rank, and says who it was in LW_LOG (one line, O_APPEND), the truth
 * the checks compare the report with. lw_worker.py does the same from
 * Python through ctypes.
 *
 *   rank        RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
 *   local rank  LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID
 *   device      0 under CUDA_VISIBLE_DEVICES (one GPU per rank), else
 *               local rank % device count
 *   sizes       256 MiB x (rank + 1), then 64 MiB freed again, then
 *               32 MiB x (rank + 1)
 *   LW_FAIL_RANK=R       rank R exits 1 after allocating, on its first attempt
 *                        (TORCHELASTIC_RESTART_COUNT unset or 0)
 *   LW_OOM_RANKS=R,S     these ranks ask for 1 TiB (fails), in that order in
 *                        time: the n-th waits until the one before has failed
 *                        (a file LW_LOG.oomA.N-1, A the attempt, made after
 *                        its failed call), however the ranks were scheduled
 *   LW_HOLD_MS=N         hold the memory N ms before exiting (after saying
 *                        "ready" on stdout)
 *   phases      "forward" around the first two allocations (peak 256 MiB x
 *               (rank + 1) + 64 MiB), "optimizer" around the third (peak
 *               288 MiB x (rank + 1)), by the tracer's phase API when loaded
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VRAMTRACE_DYNAMIC
#include <vramtrace/vramtrace.h>

#define MIB ((size_t)1 << 20)

static long first_env(const char *const *names)
{
    for (; *names; names++) {
        const char *v = getenv(*names);
        if (v && *v)
            return strtol(v, NULL, 10);
    }
    return -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The file that says the failure at position pos of this attempt is over. */
static void failure_file(const char *log, int attempt, int pos, char *buf, size_t n)
{
    snprintf(buf, n, "%s.oom%d.%d", log, attempt, pos);
}

/* Waits (up to a minute: a lost predecessor must not hang the test) until
 * the failure before position pos has happened. */
static void wait_for_failure(const char *log, int attempt, int pos)
{
    char path[4096];
    failure_file(log, attempt, pos - 1, path, sizeof path);
    for (int waited = 0; pos > 0 && access(path, F_OK) != 0 && waited < 60000; waited += 5)
        sleep_ms(5);
}

static void say_failed(const char *log, int attempt, int pos)
{
    char path[4096];
    failure_file(log, attempt, pos, path, sizeof path);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
}

/* The position of rank in the comma list, -1 if absent. */
static int position(const char *list, long rank)
{
    int pos = 0;
    for (const char *p = list; p && *p; pos++) {
        if (strtol(p, NULL, 10) == rank)
            return pos;
        p = strchr(p, ',');
        if (p)
            p++;
    }
    return -1;
}

int main(void)
{
    static const char *const ranks[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", NULL};
    static const char *const locals[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", NULL};
    long rank = first_env(ranks), local = first_env(locals);
    if (rank < 0)
        rank = 0;
    if (local < 0)
        local = rank;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        fprintf(stderr, "lw_worker rank %ld: no device\n", rank);
        return 3;
    }
    int dev = getenv("CUDA_VISIBLE_DEVICES") ? 0 : (int)(local % count);
    const char *restart = getenv("TORCHELASTIC_RESTART_COUNT");
    int attempt = restart ? atoi(restart) : 0;
    const char *log = getenv("LW_LOG");
    if (log) {
        char line[256];
        const char *vis = getenv("CUDA_VISIBLE_DEVICES");
        int n = snprintf(line, sizeof line, "pid=%ld\trank=%ld\tlocal=%ld\tdev=%d\tvisible=%s\tattempt=%d\n",
                         (long)getpid(), rank, local, dev, vis ? vis : "-", attempt);
        int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd >= 0) {
            if (write(fd, line, (size_t)n) != n)
                perror("lw_worker: log");
            close(fd);
        }
    }
    void *a = NULL, *b = NULL, *c = NULL, *huge = NULL;
    if (cudaSetDevice(dev) != cudaSuccess) {
        fprintf(stderr, "lw_worker rank %ld: no device %d\n", rank, dev);
        return 4;
    }
    vramtrace_phase_push("forward");
    bool ok = cudaMalloc(&a, 256 * MIB * (size_t)(rank + 1)) == cudaSuccess &&
              cudaMalloc(&b, 64 * MIB) == cudaSuccess && cudaFree(b) == cudaSuccess;
    vramtrace_phase_pop();
    vramtrace_phase_push("optimizer");
    ok = ok && cudaMalloc(&c, 32 * MIB * (size_t)(rank + 1)) == cudaSuccess;
    vramtrace_phase_pop();
    if (!ok) {
        fprintf(stderr, "lw_worker rank %ld: allocation failed\n", rank);
        return 4;
    }
    int pos = position(getenv("LW_OOM_RANKS"), rank);
    if (pos >= 0) {
        if (log)
            wait_for_failure(log, attempt, pos);
        else
            sleep_ms(150L * pos);
        if (cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess)
            cudaFree(huge);
        if (log)
            say_failed(log, attempt, pos);
    }
    const char *fail = getenv("LW_FAIL_RANK");
    if (fail && *fail && atol(fail) == rank && attempt == 0) {
        fprintf(stderr, "lw_worker rank %ld: failing on purpose (attempt %d)\n", rank, attempt);
        return 1;
    }
    const char *hold = getenv("LW_HOLD_MS");
    if (hold) {
        printf("ready rank=%ld pid=%ld\n", rank, (long)getpid());
        fflush(stdout);
        sleep_ms(atol(hold));
    }
    cudaFree(c);
    cudaFree(a);
    return 0;
}
