/* The ground-truth ledger and the look-up log: one whole line per write()
 * on an O_APPEND descriptor, so lines from threads and processes never mix. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void write_line(int fd, const char *line, int len, size_t cap)
{
    if (len < 0)
        return;
    if ((size_t)len >= cap)  /* never write a cut line without its newline */
        len = (int)cap - 1;
    ssize_t w = write(fd, line, (size_t)len);
    (void)w;  /* a test double cannot do better than drop a line it cannot write */
}

void vtsim_ledger(const char *op, CUresult result, const char *fields, ...)
{
    int fd = vtsim_config()->ledger_fd;
    if (fd < 0)
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "op=%s\tresult=%d\t", op, (int)result);
    va_list ap;
    va_start(ap, fields);
    n += vsnprintf(line + n, sizeof line - (size_t)n, fields, ap);
    va_end(ap);
    if ((size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n, "\tpid=%d\ttid=%d\tns=%llu\n",
                      (int)getpid(), (int)gettid(), now_ns());
    if ((size_t)n >= sizeof line) {
        line[sizeof line - 2] = '\n';
        n = (int)sizeof line - 1;
    }
    write_line(fd, line, n, sizeof line);
}

void vtsim_lookup_log(const char *name, int version, unsigned long long flags,
                      CUresult result, int status, const char *symbol)
{
    int fd = vtsim_config()->lookup_fd;
    if (fd < 0)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s %d %llu result=%d status=%d symbol=%s pid=%d\n",
                     name, version, flags, (int)result, status, symbol ? symbol : "-",
                     (int)getpid());
    write_line(fd, line, n, sizeof line);
}

VTSIM_EXPORT void vtsim_nvml_ledger(const char *op, const char *fields)
{
    vtsim_ledger(op, CUDA_SUCCESS, "%s", fields);
}
