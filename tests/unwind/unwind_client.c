/*
 * A client for tracer_fast_unwind (unwind_check.py): cuMemAlloc from stacks
 * of many shapes (frames.h), from a library replaced by another at the same
 * address (dlclose + dlopen, swap_frame.S) and from a signal handler. Before
 * each allocation it prints the stack the tracer must record, computed
 * with libunwind's unw_step loop on flushed caches:
 *   expect TAG IP1 IP2 ...     (the allocating frame's callers, outward)
 * and "same_address 1" when the second library landed where the first was.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "reference_walk.h"

#define MAX_FRAMES 300

static int fail(const char *what)
{
    fprintf(stderr, "unwind_client: %s\n", what);
    exit(1);
}

/* The recorded stack starts at the return address of cuMemAlloc_v2's call
 * here; the reference, taken from the same frame, with this frame's
 * callers: from its second entry on, both are the same. Inlined into each
 * allocating frame below. */
static inline __attribute__((always_inline)) int alloc_in_this_frame(const char *tag)
{
    void *buf[MAX_FRAMES];
    int n = fu_fresh_libunwind(buf, MAX_FRAMES);
    CUdeviceptr p = 0;
    if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS)
        fail("cuMemAlloc_v2");
    char line[MAX_FRAMES * 20 + 64];
    int len = snprintf(line, sizeof line, "expect %s", tag);
    for (int i = 1; i < n; i++)
        len += snprintf(line + len, sizeof line - (size_t)len, " %#lx", (unsigned long)(uintptr_t)buf[i]);
    /* one write: a signal handler's line is never torn */
    printf("%s\n", line);
    fflush(stdout);
    cuMemFree_v2(p);
    fu_sink = n;
    return 1;
}

/* An allocating frame that keeps rbp for itself (saved, then used as any
 * register: -O2 here) ... */
static int alloc_here(void *arg)
{
    return alloc_in_this_frame(arg);
}

/* ... and one with a frame pointer (bench/, and programs built with
 * -fno-omit-frame-pointer), whose CFA is rbp + 16 with rbp as it was at
 * the call: the tracer's walk, which starts at its hook's caller, must
 * begin with that rbp. */
static int alloc_here_fp(void *arg)
{
    fu_sink = (int)(uintptr_t)__builtin_frame_address(0); /* a frame pointer, also at -O2 */
    return alloc_in_this_frame(arg);
}

typedef void (*swap_entry_fn)(int (*cb)(void *), void *arg);

static void *open_swap(const char *env, swap_entry_fn *entry)
{
    const char *path = getenv(env);
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h)
        fail(env);
    *entry = (swap_entry_fn)(uintptr_t)dlsym(h, "fu_swap_entry");
    if (!*entry)
        fail("fu_swap_entry");
    return h;
}

static void on_usr1(int sig)
{
    (void)sig;
    alloc_here((void *)"signal");
}

static int raise_usr1(void *arg)
{
    (void)arg;
    raise(SIGUSR1);
    return 1;
}

int main(void)
{
    CUcontext primary;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&primary, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(primary) != CUDA_SUCCESS)
        fail("context");

    static const char *const plans[] = {"f", "n", "fnAaVvRrBb", "sfsnsa", "nnnnnnnnnnnnnnnnnnnn",
                                        "ffffffffffffffffffff", "bBrRsvVaAo", "s", "fxn"};
    for (int round = 0; round < 3; round++) /* again: from the rules kept */
        for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
            fu_next(plans[i], alloc_here, (void *)plans[i]);
            fu_next(plans[i], alloc_here_fp, (void *)plans[i]);
        }

    /* a library replaced by another at the same address */
    swap_entry_fn a, b;
    void *ha = open_swap("FU_SWAP_A", &a);
    a(alloc_here, (void *)"swap-a");
    dlclose(ha);
    void *hb = open_swap("FU_SWAP_B", &b);
    printf("same_address %d\n", a == b);
    b(alloc_here, (void *)"swap-b");
    dlclose(hb);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    fu_next("fnas", raise_usr1, NULL);

    cuDevicePrimaryCtxRelease(0);
    return 0;
}
