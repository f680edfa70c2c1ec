/*
 * A program that enters a user namespace, which the kernel allows only a
 * process of one thread (unshare(CLONE_NEWUSER), setns into one) - or
 * makes a child in one (clone(CLONE_NEWUSER)) - before or after its first
 * CUDA call. On stdout: its thread count at start (before any CUDA call),
 * each call's result and errno, its uid after, "done"; the same traced
 * and untraced (tests/reliability/reliability.py, scenario userns). On
 * stderr: its thread count just before the namespace call (traced: the
 * tracer's threads are there, so the wrapper is what lets it through).
 *
 *   userns_client before|after|fails|clone
 *   userns_client setns TYPE     (TYPE: the nstype argument, 0 or user)
 *
 * before: unshare before the first CUDA call; after: after it; fails:
 * after it, with a thread of its own (EINVAL, traced or not); setns: into
 * a forked child's new user namespace, after the first CUDA call; clone:
 * a child in a new user namespace, after it. Allocations before and after
 * the call, checked against the simulated driver's ledger by the test.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Threads:", 8))
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

/* The program's descriptors (the tracer's file is never among them). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    while (d && readdir(d))
        n++;
    if (d)
        closedir(d);
    return n;
}

static void cuda_start(void)
{
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "userns_client: no device\n");
        exit(5);
    }
}

static void alloc_free(int n)
{
    for (int i = 0; i < n; i++) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, (size_t)(i + 1) << 16) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
            fprintf(stderr, "userns_client: allocation failed\n");
            exit(5);
        }
    }
}

static void said(const char *what, int rc)
{
    printf("%s %d%s%s\n", what, rc, rc ? " " : "", rc ? strerror(errno) : "");
    fflush(stdout);
}

static void *wait_on(void *arg)
{
    char c;
    while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/* A child in a user namespace of its own, until its pipe closes. */
static pid_t child_in_new_userns(int *hold)
{
    int ready[2], stay[2];
    if (pipe(ready) || pipe(stay))
        exit(6);
    pid_t pid = fork();
    if (pid == 0) {
        char c = unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
        close(stay[1]);
        if (write(ready[1], &c, 1) != 1)
            _exit(7);
        while (read(stay[0], &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(ready[1]);
    close(stay[0]);
    char c = 'n';
    if (pid < 0 || read(ready[0], &c, 1) != 1 || c != 'y') {
        printf("child unshare failed\n");
        exit(8);
    }
    close(ready[0]);
    *hold = stay[1];
    return pid;
}

static char clone_stack[64 * 1024] __attribute__((aligned(16)));

static int in_new_userns(void *arg)
{
    (void)arg;
    printf("child uid %d\n", (int)getuid());
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: userns_client before|after|fails|clone|setns TYPE\n");
        return 2;
    }
    const char *mode = argv[1];
    printf("threads at start %d\n", threads());
    fflush(stdout);
    if (!strcmp(mode, "before")) {
        fprintf(stderr, "threads before the call %d\n", threads());
        said("unshare", unshare(CLONE_NEWUSER));
        cuda_start();
        alloc_free(20);
    } else {
        cuda_start();
        alloc_free(20);
        /* past the flush interval the test sets (20 ms): traced, the file
         * is written, so its keeper thread runs too */
        usleep(200 * 1000);
        if (!strcmp(mode, "after")) {
            fprintf(stderr, "threads before the call %d\n", threads());
            said("unshare", unshare(CLONE_NEWUSER));
        } else if (!strcmp(mode, "fails")) {
            int p[2];
            pthread_t t;
            if (pipe(p) || pthread_create(&t, NULL, wait_on, &p[0]))
                return 6;
            fprintf(stderr, "threads before the call %d\n", threads());
            said("unshare", unshare(CLONE_NEWUSER));
            close(p[1]);
            pthread_join(t, NULL);
        } else if (!strcmp(mode, "setns") && argc == 3) {
            int hold;
            pid_t pid = child_in_new_userns(&hold);
            char path[64];
            snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            fprintf(stderr, "threads before the call %d\n", threads());
            said("setns", setns(fd, !strcmp(argv[2], "user") ? CLONE_NEWUSER : 0));
            close(fd);
            close(hold);
            waitpid(pid, NULL, 0);
        } else if (!strcmp(mode, "clone")) {
            fprintf(stderr, "threads before the call %d\n", threads());
            pid_t pid = clone(in_new_userns, clone_stack + sizeof clone_stack,
                              CLONE_NEWUSER | SIGCHLD, NULL);
            int status = -1;
            if (pid > 0)
                waitpid(pid, &status, 0);
            said("clone", pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1);
        } else {
            fprintf(stderr, "userns_client: unknown mode %s\n", mode);
            return 2;
        }
    }
    alloc_free(20);
    printf("uid %d\nfds %d\ndone\n", (int)getuid(), open_fds());
    return 0;
}
