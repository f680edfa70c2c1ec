/* How many threads the analysis uses; see thread_count.h. */
#define _GNU_SOURCE
#include "thread_count.h"

#include <sched.h>
#include <stdlib.h>
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
    double load[1];
    if (getloadavg(load, 1) != 1)
        load[0] = 0; /* unknown: as if idle */
    return vt_threads_for(getenv("VRAMTRACE_ANALYZER_THREADS"), cpus_allowed(), load[0],
                          work_bytes);
}
