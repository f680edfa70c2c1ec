/*
 * How many threads the analysis uses (analysis.c): those that pay.
 *
 * VRAMTRACE_ANALYZER_THREADS=N, if set, is the number (1: everything on the
 * calling thread). Otherwise the CPUs this process may run on
 * (sched_getaffinity), less what the rest of the machine keeps busy
 * (vt_busy_cpus), rounded, at least 1; and 1 for work too small
 * to pay for a thread (less than VT_THREADS_MIN_BYTES of trace files). A
 * second thread on a core that another program keeps busy only shares
 * that core and adds the threads' hand-overs: on a loaded machine the
 * analysis is then slower than on one thread, so it takes one.
 */
#ifndef VRAMTRACE_ANALYZER_THREAD_COUNT_H
#define VRAMTRACE_ANALYZER_THREAD_COUNT_H

#include <stddef.h>
#include <stdint.h>

#define VT_THREADS_MIN_BYTES (4u << 20)

/* The threads for work_bytes of trace files. */
size_t vt_analysis_threads(uint64_t work_bytes);

/* How many CPUs the rest of the machine keeps busy: the smaller of the
 * one-minute load average and the tasks other than this one runnable now
 * (the median of 3 samples over 2 ms; < 0: unknown). The average lags
 * by a minute: right after a build, or after this very analysis ran
 * before, it still counts a CPU that is free now, and a quiet 2-CPU
 * machine then took one thread where two ran 1.87x faster
 * (docs/internals/PERFORMANCE.md, "A job"). The samples alone could miss
 * a load that comes and goes; a machine busy by both counts is busy. */
double vt_busy_cpus(double load_avg, double others_runnable);

/* The rule itself, for tests: cpus the process may use, load the load
 * average, env the variable's value (NULL if unset). */
size_t vt_threads_for(const char *env, size_t cpus, double load, uint64_t work_bytes);

#endif
