/*
 * Another job on the same GPU: allocates BYTES of device memory, prints
 * "ready", and holds it until it is terminated (SIGTERM/SIGINT) or the
 * process that started it is gone (so a killed script leaves nothing behind). Used by examples/shared_gpu_oom.sh to stand for the
 * other processes of a shared GPU (nvidia-smi's "Process N has X in use":
 * X is BYTES plus the process's CUDA context).
 *
 *     gpu_holder BYTES
 */
#define _DEFAULT_SOURCE  /* usleep */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <sys/types.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void quit(int sig)
{
    (void)sig;
    _exit(0);
}

int main(int argc, char **argv)
{
    char *end = NULL;
    errno = 0;
    unsigned long long bytes = argc == 2 ? strtoull(argv[1], &end, 10) : 0;
    if (argc != 2 || errno || !end || *end || !bytes) {
        fprintf(stderr, "usage: %s BYTES\n", argv[0]);
        return 2;
    }
    signal(SIGTERM, quit);
    signal(SIGINT, quit);
    void *p = NULL;
    cudaError_t err = cudaMalloc(&p, (size_t)bytes);
    if (err != cudaSuccess) {
        fprintf(stderr, "gpu_holder: cudaMalloc(%llu): %s\n", bytes, cudaGetErrorString(err));
        return 1;
    }
    printf("ready %ld\n", (long)getpid());
    fflush(stdout);
    pid_t parent = getppid();
    while (getppid() == parent)
        usleep(100 * 1000);
    return 0;  /* the simulated driver releases this process's memory at exit */
}
