/*
 * The verdict every view gives a failed allocation (the report's headline,
 * report_verdict.c: the allocator's where its snapshot is beside the trace,
 * the traced neighbours', the cache's), for the exports that name one: made
 * from the run stage's read (run_traces.h), which is Perfetto's first, and
 * looked up by the failure's own trace, device, time and size.
 */
#ifndef VRAMTRACE_EXPORT_EXPORT_VERDICTS_H
#define VRAMTRACE_EXPORT_EXPORT_VERDICTS_H

#include <stddef.h>
#include <stdint.h>

#include "run_traces.h"
#include "symbolize.h"

struct vt_export_verdict {
    char *path;                   /* the trace's path, as the command gave it */
    int64_t device;
    uint64_t time_ns, requested_bytes;
    char verdict[24];
};

struct vt_export_verdicts {
    struct vt_export_verdict *v;
    size_t n;
};

/* Every failure of the run's device ledgers; false when memory ran out
 * (the table is then empty: the exports fall back to the trace's own). */
bool vt_export_verdicts_init(struct vt_export_verdicts *vs, const struct vt_run_result *run,
                             const struct vt_symbolize_options *sym);
/* The headline verdict of the failure at time_ns of requested_bytes on
 * device of the trace at path; NULL when the table has none. */
const char *vt_export_verdict(const struct vt_export_verdicts *vs, const char *path,
                              int64_t device, uint64_t time_ns, uint64_t requested_bytes);
void vt_export_verdicts_free(struct vt_export_verdicts *vs);

#endif
