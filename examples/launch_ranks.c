/*
 * Example 5 (launcher): a torchrun stand-in for one node with two GPUs.
 *
 * Starts NPROC ranks (default 4) of rank_worker with fork + exec, each with
 * RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE set as torchrun sets them,
 * waits for them, and exits with the worst status; when a rank fails, the
 * others are stopped (SIGTERM), as torchrun's agent stops a group whose
 * member failed - they would wait at the next barrier forever - and the
 * launcher exits with the failed rank's status. The ranks meet at
 * barriers (like torch.distributed.barrier) through a process-shared
 * pthread barrier in a memfd whose descriptor they inherit
 * (EXAMPLE_BARRIER_FD).
 *
 * The simulated node: unless the environment already says otherwise, the
 * launcher makes the simulated driver show two devices (VTSIM_DEVICES=2)
 * shared by all ranks (VTSIM_SHARED, a name of its own, removed at the end),
 * so two ranks share each GPU.
 *
 * Run:  vramtrace run -- build/examples/launch_ranks [NPROC]
 */
#define _GNU_SOURCE  /* memfd_create */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_RANKS 16

/* rank_worker beside this program. */
static void worker_path(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[len > 0 ? len : 0] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, n, "%s/rank_worker", slash ? exe : ".");
}

static int make_barrier(int count)
{
    int fd = memfd_create("rank-barrier", 0);  /* no MFD_CLOEXEC: the ranks inherit it */
    if (fd < 0 || ftruncate(fd, sizeof(pthread_barrier_t)) != 0)
        return -1;
    pthread_barrier_t *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED)
        return -1;
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    int rc = pthread_barrier_init(b, &attr, (unsigned)count);
    pthread_barrierattr_destroy(&attr);
    munmap(b, sizeof *b);
    return rc == 0 ? fd : -1;
}

static void set_int(const char *name, int v)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

int main(int argc, char **argv)
{
    int nproc = argc > 1 ? atoi(argv[1]) : 4;
    if (argc > 2 || nproc < 1 || nproc > MAX_RANKS) {
        fprintf(stderr, "usage: %s [NPROC 1..%d]\n", argv[0], MAX_RANKS);
        return 2;
    }
    char shared[64] = "";
    if (!getenv("VTSIM_SHARED")) {
        snprintf(shared, sizeof shared, "vramtrace-ranks-%ld", (long)getpid());
        setenv("VTSIM_SHARED", shared, 1);
    }
    if (!getenv("VTSIM_DEVICES"))
        setenv("VTSIM_DEVICES", "2", 1);
    int fd = make_barrier(nproc);
    if (fd < 0) {
        perror("launch_ranks: barrier");
        return 1;
    }
    set_int("EXAMPLE_BARRIER_FD", fd);
    set_int("WORLD_SIZE", nproc);
    set_int("LOCAL_WORLD_SIZE", nproc);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);

    char worker[PATH_MAX + 16];
    worker_path(worker, sizeof worker);
    pid_t pids[MAX_RANKS];
    for (int r = 0; r < nproc; r++) {
        fflush(NULL);
        pids[r] = fork();
        if (pids[r] < 0) {
            perror("launch_ranks: fork");
            return 1;
        }
        if (pids[r] == 0) {
            set_int("RANK", r);
            set_int("LOCAL_RANK", r);
            execl(worker, worker, (char *)NULL);
            fprintf(stderr, "launch_ranks: cannot run %s: %s\n", worker, strerror(errno));
            _exit(127);
        }
        printf("launch_ranks: rank %d pid %ld\n", r, (long)pids[r]);
    }
    fflush(stdout);
    int worst = 0, first_failure = 0, left = nproc;
    bool stopping = false;
    while (left > 0) {
        int st = 0;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        int r = 0;
        while (r < nproc && pids[r] != pid)
            r++;
        if (r == nproc)
            continue;
        pids[r] = 0;
        left--;
        int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (code > worst)
            worst = code;
        if (code != 0 && !stopping) {
            first_failure = code;
            fprintf(stderr, "launch_ranks: rank %d failed (%d); stopping the others\n", r, code);
            stopping = true;
            for (int k = 0; k < nproc; k++)
                if (pids[k] > 0)
                    kill(pids[k], SIGTERM);
        }
    }
    if (shared[0]) {
        char name[96];
        snprintf(name, sizeof name, "/vtsim-%s", shared);
        shm_unlink(name);  /* the simulated driver's shared ledger of the node */
    }
    return stopping ? first_failure : worst;
}
