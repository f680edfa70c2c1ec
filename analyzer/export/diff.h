/*
 * `vramtrace diff BEFORE AFTER`: two runs compared (docs/user/REPORT.md,
 * "Exports and diff"). Each side is a trace, a directory (its traces and
 * snapshots) or a PyTorch memory snapshot, reduced to processes and units
 * (diff_profile.h) - one per process and device ledger, or per snapshot
 * device - each with its peak, its phases' peaks and the bytes per call
 * site at the peak. Processes are paired by program and rank, units by
 * process and device, call sites by their functions and files, whatever
 * their lines (diff_match.h); per unit the peak's change, each phase's,
 * and each site's: new, grew, shrank or gone, biggest change first.
 */
#ifndef VRAMTRACE_EXPORT_DIFF_H
#define VRAMTRACE_EXPORT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "run_traces.h"
#include "symbolize.h"

struct vt_diff_options {
    size_t top;                 /* site rows per unit (0: all) */
    /* text: sites named as the report names them (report/stack_where.h) */
    size_t frames;              /* the program's frames shown per site (0: all) */
    size_t width;               /* columns a line may use (0: no limit) */
    bool full_stacks;           /* every frame as recorded, whole lines */
    bool has_device;
    int64_t device;
    bool json;
    /* --fail-above: the exit status is 1 when any peak shown (a unit's, a
     * phase's) grew more */
    bool has_limit;
    bool limit_is_percent;
    double limit_percent;
    uint64_t limit_bytes;
    const char *limit_text;     /* as given, for the output */
    struct vt_symbolize_options sym;
};

/* One side: the traces and the snapshots one argument stands for. */
struct vt_diff_side {
    const char *arg;
    char *const *traces;
    size_t ntraces;
    char *const *snapshots;
    size_t nsnapshots;
};

/* A side reduced to its units: its traces' run (run_traces.h, read by the
 * caller with no observers; NULL when the side has none) and its
 * snapshots, read here. Returns 0, or 2 when an input could not be read
 * (said on err); *out is set either way, for vt_diff_profile_free. The
 * caller may free the run as soon as this returns: a profile keeps its
 * own copies. */
struct vt_diff_profile;
int vt_diff_profile_build(struct vt_diff_profile **out, const struct vt_diff_side *s,
                          const struct vt_run_result *traces, const struct vt_diff_options *opt,
                          FILE *err);
void vt_diff_profile_free(struct vt_diff_profile *p);

/* Compares the two profiles and writes the result. Returns 0; 1 when
 * --fail-above was exceeded; 2 when nothing was left to compare (said on
 * err) or the output failed. */
int vt_diff_write(const struct vt_diff_profile *before_profile,
                  const struct vt_diff_profile *after_profile, const struct vt_diff_side *before,
                  const struct vt_diff_side *after, const struct vt_diff_options *opt, FILE *out,
                  FILE *err);

#endif
