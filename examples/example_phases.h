/*
 * Phase markers of the examples: an NVTX range, exactly as PyTorch's
 * torch.cuda.nvtx.range_push/range_pop or DeepSpeed would emit it.
 * vramtrace reads NVTX ranges as an injection library; nothing here knows
 * about vramtrace.
 *
 * The examples' golden tests (tests/examples/) need the ground truth of when
 * each phase was open, independently of the tracer and analyzer: when the
 * environment variable VTEXAMPLE_PHASE_LOG names a file, every push and pop
 * also appends a line "push NAME NS TID" / "pop NS TID" to it (NS:
 * CLOCK_MONOTONIC, the clock of the simulated driver's ledger). The line is
 * written before a push and after a pop, so the logged interval contains
 * everything the tracer saw inside the range.
 *
 * Needs _GNU_SOURCE (syscall, O_CLOEXEC) defined by the including file.
 */
#ifndef EXAMPLE_PHASES_H
#define EXAMPLE_PHASES_H

#include <fcntl.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline void example_phase_log(const char *what, const char *name)
{
    static int fd = -2;  /* -2: not opened yet; -1: no log wanted */
    if (fd == -2) {
        const char *path = getenv("VTEXAMPLE_PHASE_LOG");
        fd = path && *path ? open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (fd < 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned long long ns = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
    char line[256];
    int n = name ? snprintf(line, sizeof line, "%s %s %llu %ld\n", what, name, ns, (long)syscall(SYS_gettid))
                 : snprintf(line, sizeof line, "%s %llu %ld\n", what, ns, (long)syscall(SYS_gettid));
    if (n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) != n)
        fd = -1;  /* the log is for tests only: give up quietly */
}

/* Opens a phase on the calling thread (phases nest). */
static inline void range_push(const char *name)
{
    example_phase_log("push", name);
    nvtxRangePushA(name);
}

/* Closes the innermost phase of the calling thread. */
static inline void range_pop(void)
{
    nvtxRangePop();
    example_phase_log("pop", NULL);
}

#endif
