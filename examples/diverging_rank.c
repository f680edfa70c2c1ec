/*
 * Example 7: the rank that diverged. A data-parallel job of NPROC ranks
 * (default 4), one simulated GPU each, that trains STEPS steps (default
 * 12). Every rank holds the same model state and, in each step, the same
 * activations, freed at the step's end - give or take 2%: each rank's
 * sizes are its own (sequence lengths differ a little). One rank, from one
 * step on, keeps a batch it should have let go (a cache of inputs that is
 * never trimmed): 24 MiB more at every step's end. nvidia-smi shows one
 * GPU slowly fuller than the others; `vramtrace report` names the rank,
 * the call site, the step it began at and the rate.
 *
 * Started without RANK, the program is its own launcher: it starts the
 * ranks (fork + exec of itself, RANK, LOCAL_RANK, WORLD_SIZE set as
 * torchrun sets them), each on GPU LOCAL_RANK, and waits for them. Unless
 * the environment says otherwise the simulated driver shows NPROC devices.
 *
 *   EXAMPLE_DIVERGE_RANK=R  the rank that keeps its batches (default 2; -1: none)
 *   EXAMPLE_DIVERGE_FROM=S  from step S on, counted from 1 (default 5)
 *   EXAMPLE_STEP_MS=N       each step lasts N ms more (to watch it with `vramtrace top`)
 *   EXAMPLE_DIVERGE_SPREAD=1  the batch is kept in 40 pieces of 600 KiB, each
 *                           from a call of its own on one line of
 *                           cache_batch_spread (40 stacks, one site: each
 *                           stack far under 0.5% of the peak, the site not)
 *
 * Each rank says "diverging_rank: rank R pid P" on stdout (the tests' truth
 * of which pid is which rank).
 *
 * Run:  vramtrace run -- build/examples/diverging_rank [NPROC [STEPS]]
 */
#define _GNU_SOURCE /* example_phases.h */
#include <cuda_runtime_api.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "example_phases.h"

#define MIB ((size_t)1 << 20)
#define MAX_RANKS 16

/* A failed cudaMalloc ends the rank; a macro, so that the call site is
 * the function that asks (the report names sites by their innermost
 * frame of the program's own). */
#define MALLOC_OR_EXIT(p, bytes)                                                             \
    do {                                                                                     \
        if (cudaMalloc((p), (bytes)) != cudaSuccess) {                                       \
            fprintf(stderr, "diverging_rank: cudaMalloc(%zu MiB) failed\n", (bytes) / MIB);  \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static int rank;

/* Each rank's sizes: within 2% of the others' (-2, -1, 0, +1, +2 %). */
static size_t sized(size_t bytes)
{
    int percent = rank % 5 - 2;
    return bytes / 100 * (size_t)(100 + percent);
}

static void *load_model(void)
{
    void *state;
    MALLOC_OR_EXIT(&state, sized(2048 * MIB)); /* weights, gradients, optimizer state */
    return state;
}

static void *forward(void)
{
    void *activations;
    MALLOC_OR_EXIT(&activations, sized(1024 * MIB));
    return activations;
}

/* The batch kept "for later": never freed. */
static void *cache_batch(void)
{
    void *batch;
    MALLOC_OR_EXIT(&batch, 24 * MIB);
    return batch;
}

/* The batch kept in 40 pieces from 40 calls (40 stacks) on one line:
 * one call site as every view names it (function and line). */
#define KEEP_PIECE() MALLOC_OR_EXIT(&piece, 600 * KIB);
#define KEEP_8_PIECES() KEEP_PIECE() KEEP_PIECE() KEEP_PIECE() KEEP_PIECE() \
    KEEP_PIECE() KEEP_PIECE() KEEP_PIECE() KEEP_PIECE()
#define KIB ((size_t)1 << 10)
static void cache_batch_spread(void)
{
    void *piece;
    KEEP_8_PIECES() KEEP_8_PIECES() KEEP_8_PIECES() KEEP_8_PIECES() KEEP_8_PIECES()
}

static int env_int(const char *name, int fallback)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static int train(int steps)
{
    int local_rank = env_int("LOCAL_RANK", 0);
    if (cudaSetDevice(local_rank) != cudaSuccess) {
        fprintf(stderr, "diverging_rank: rank %d: no device %d\n", rank, local_rank);
        return 1;
    }
    printf("diverging_rank: rank %d pid %d\n", rank, (int)getpid());
    fflush(stdout);
    int diverging = env_int("EXAMPLE_DIVERGE_RANK", 2), from = env_int("EXAMPLE_DIVERGE_FROM", 5);
    long step_ms = env_int("EXAMPLE_STEP_MS", 0);
    void *state = load_model();
    for (int step = 1; step <= steps; step++) {
        range_push("step");
        void *activations = forward();
        if (rank == diverging && step >= from) {
            if (env_int("EXAMPLE_DIVERGE_SPREAD", 0))
                cache_batch_spread();
            else
                cache_batch();
        }
        if (step_ms > 0) {
            struct timespec ts = {step_ms / 1000, step_ms % 1000 * 1000000L};
            nanosleep(&ts, NULL);
        }
        cudaFree(activations);
        range_pop();
    }
    cudaFree(state);
    return 0;
}

/* The launcher: NPROC ranks of this program, the worst status. */
static int launch(int nproc, const char *steps)
{
    char self[PATH_MAX], n[16], r[16];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0) {
        perror("diverging_rank: /proc/self/exe");
        return 1;
    }
    self[len] = '\0';
    snprintf(n, sizeof n, "%d", nproc);
    setenv("VTSIM_DEVICES", n, 0); /* one simulated GPU a rank */
    setenv("WORLD_SIZE", n, 1);
    setenv("LOCAL_WORLD_SIZE", n, 1);
    pid_t pids[MAX_RANKS];
    for (int i = 0; i < nproc; i++) {
        snprintf(r, sizeof r, "%d", i);
        pids[i] = fork();
        if (pids[i] == 0) {
            setenv("RANK", r, 1);
            setenv("LOCAL_RANK", r, 1);
            execl(self, self, steps, (char *)NULL);
            _exit(127);
        }
    }
    int worst = 0;
    for (int i = 0; i < nproc; i++) {
        int status;
        if (pids[i] > 0 && waitpid(pids[i], &status, 0) == pids[i] &&
            (!WIFEXITED(status) || WEXITSTATUS(status)))
            worst = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
    return worst;
}

int main(int argc, char **argv)
{
    if (!getenv("RANK")) {
        int nproc = argc > 1 ? atoi(argv[1]) : 4;
        if (nproc < 1 || nproc > MAX_RANKS) {
            fprintf(stderr, "diverging_rank: NPROC from 1 to %d\n", MAX_RANKS);
            return 2;
        }
        return launch(nproc, argc > 2 ? argv[2] : "12");
    }
    rank = env_int("RANK", 0);
    return train(argc > 1 ? atoi(argv[1]) : 12);
}
