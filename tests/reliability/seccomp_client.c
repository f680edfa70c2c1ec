/*
 * A program under a seccomp filter of its own that answers close_range and
 * unshare - which it never calls - by killing the process, by a SIGSYS to
 * its own handler (which says so and exits 3) or by killing the thread,
 * set for every thread (TSYNC) before or after its first CUDA call, or
 * after it, before a forked child allocates. Untraced it prints "done" and
 * exits 0; so it must traced.
 *
 *   seccomp_client kill|trap|kill_thread before|after|fork
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

static void on_sigsys(int sig)
{
    (void)sig;
    static const char msg[] = "seccomp_client: SIGSYS\n";
    if (write(1, msg, sizeof msg - 1) < 0)
        _exit(4);
    _exit(3);
}

static void filter(unsigned action)
{
    struct sock_filter prog[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close_range, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog fprog = {.len = sizeof prog / sizeof prog[0], .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog) != 0) {
        perror("seccomp_client: seccomp");
        exit(2);
    }
}

static void alloc_free(void)
{
    CUdeviceptr p;
    if (cuMemAlloc(&p, 1 << 20) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
        fprintf(stderr, "seccomp_client: allocation failed\n");
        exit(5);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: seccomp_client kill|trap|kill_thread before|after|fork\n");
        return 2;
    }
    unsigned action = !strcmp(argv[1], "kill") ? SECCOMP_RET_KILL_PROCESS
                    : !strcmp(argv[1], "trap") ? SECCOMP_RET_TRAP
                                               : SECCOMP_RET_KILL_THREAD;
    if (action == SECCOMP_RET_TRAP)
        signal(SIGSYS, on_sigsys);
    const char *when = argv[2];
    if (!strcmp(when, "before"))
        filter(action);
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "seccomp_client: no device\n");
        return 5;
    }
    alloc_free();
    if (strcmp(when, "before") != 0)
        filter(action);
    alloc_free();
    if (!strcmp(when, "fork")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            alloc_free();
            exit(0);
        }
        int status;
        if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "seccomp_client: the child did not end well (status %#x)\n", status);
            return 6;
        }
    }
    printf("done\n");
    return 0;
}
