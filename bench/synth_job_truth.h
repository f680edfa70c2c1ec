/*
 * The truth of a synthetic job's GPUs (synth_trace --truth FILE), computed
 * from the events as they are written, not from any trace: every GPU's
 * combined peak (the first time the sum of its processes' device bytes is
 * at its largest, the processes' events merged by time, then rank, then
 * file order), what each process held then, and at every failed
 * allocation the other processes' bytes on its GPU, largest first.
 */
#ifndef VRAMTRACE_BENCH_SYNTH_JOB_TRUTH_H
#define VRAMTRACE_BENCH_SYNTH_JOB_TRUTH_H

#include <stdint.h>
#include <stdio.h>

#include "vramtrace/trace_format.h"

/* A change of rank's bytes on the GPU of UUID (delta 0 with failed: a
 * failed allocation) at time_ns, as the trace stores it. */
void truth_event(long rank, const uint8_t uuid[VT_UUID_SIZE], uint64_t time_ns, int64_t delta,
                 int failed);
/* Writes the truth as JSON: {"gpus": [...], "failures": [...]}. */
int truth_write(FILE *out);

#endif
