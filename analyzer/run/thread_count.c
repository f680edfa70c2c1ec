/* How many threads the analysis uses; see thread_count.h. */
#define _GNU_SOURCE
#include "thread_count.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

size_t vt_threads_for(const char *env, size_t cpus, double load, uint64_t work_bytes)
{
    if (env && *env) {
        char *end;
        long x = strtol(env, &end, 10);
        if (!*end && x >= 1)
            return (size_t)x;
    }
    if (cpus <= 1 || work_bytes < VT_THREADS_MIN_BYTES)
        return 1;
    double idle = (double)cpus - (load > 0 ? load : 0);
    size_t n = idle < 1 ? 1 : (size_t)(idle + 0.5); /* rounded */
    return n < cpus ? n : cpus;
}

double vt_busy_cpus(double load_avg, double others_runnable)
{
    if (others_runnable < 0) /* unknown */
        return load_avg;
    return others_runnable < load_avg ? others_runnable : load_avg;
}

/* Other runnable tasks now: the median of VT_RUNNABLE_SAMPLES reads of
 * /proc/loadavg's running count (which counts the reader), 1 ms apart: a
 * machine that is busy now shows others in most reads, a quiet one a
 * kernel worker in one now and then; -1 if unreadable. Its 2 ms are the
 * report's: five reads 2 ms apart were 3% of one long trace's 0.26 s on
 * two threads. */
#define VT_RUNNABLE_SAMPLES 3
static double others_runnable_now(void)
{
    long seen[VT_RUNNABLE_SAMPLES];
    for (int i = 0; i < VT_RUNNABLE_SAMPLES; i++) {
        if (i) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        FILE *f = fopen("/proc/loadavg", "re");
        long running = -1;
        if (f) {
            double a, b, c;
            if (fscanf(f, "%lf %lf %lf %ld/", &a, &b, &c, &running) != 4)
                running = -1;
            fclose(f);
        }
        if (running < 1)
            return -1;
        /* insertion into the sorted reads so far */
        int j = i;
        for (; j > 0 && seen[j - 1] > running - 1; j--)
            seen[j] = seen[j - 1];
        seen[j] = running - 1;
    }
    return (double)seen[VT_RUNNABLE_SAMPLES / 2];
}

static size_t cpus_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (size_t)CPU_COUNT(&set);
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    return c > 0 ? (size_t)c : 1;
}

size_t vt_analysis_threads(uint64_t work_bytes)
{
    const char *env = getenv("VRAMTRACE_ANALYZER_THREADS");
    size_t cpus = cpus_allowed();
    if ((env && *env) || cpus <= 1 || work_bytes < VT_THREADS_MIN_BYTES)
        return vt_threads_for(env, cpus, 0, work_bytes); /* nothing to measure */
    double load[1];
    if (getloadavg(load, 1) != 1)
        load[0] = 0; /* unknown: as if idle */
    if (vt_threads_for(env, cpus, load[0], work_bytes) == cpus)
        return cpus; /* the average alone leaves every CPU: the samples could not take one */
    return vt_threads_for(env, cpus, vt_busy_cpus(load[0], others_runnable_now()), work_bytes);
}
