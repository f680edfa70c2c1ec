/*
 * Runs a program under a seccomp filter that refuses some system calls with
 * EPERM, as container profiles do (Docker's refuses unshare without
 * CAP_SYS_ADMIN; older profiles know nothing of close_range and refuse it).
 * The filter survives exec, so it holds from the program's first
 * instruction, the tracer's constructor included.
 *
 * With --kill the filter kills the process instead (systemd's
 * SystemCallFilter= does by default).
 *
 *   refuse_syscalls [--kill] close_range|unshare[,...] PROGRAM [ARGS...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

int main(int argc, char **argv)
{
    unsigned action = SECCOMP_RET_ERRNO | EPERM;
    if (argc > 1 && !strcmp(argv[1], "--kill")) {
        action = SECCOMP_RET_KILL_PROCESS;
        argv++;
        argc--;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: refuse_syscalls [--kill] close_range|unshare[,...] PROGRAM [ARGS...]\n");
        return 2;
    }
    struct sock_filter prog[16];
    unsigned n = 0;
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data, nr));
    char names[256];
    snprintf(names, sizeof names, "%s", argv[1]);
    for (char *save, *name = strtok_r(names, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        long nr = !strcmp(name, "close_range") ? SYS_close_range
                : !strcmp(name, "unshare") ? SYS_unshare : -1;
        if (nr < 0 || n > 10) {
            fprintf(stderr, "refuse_syscalls: unknown system call %s\n", name);
            return 2;
        }
        prog[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, 0, 1);
        prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action);
    }
    prog[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_fprog fprog = {.len = (unsigned short)n, .filter = prog};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) {
        perror("refuse_syscalls: seccomp");
        return 2;
    }
    execvp(argv[2], argv + 2);
    perror("refuse_syscalls: exec");
    return 127;
}
