/*
 * How `diff` pairs what two runs have (diff_match.c): processes by their
 * program and rank (not their pid, nor their input's place: a directory
 * may hold a trace and its OOM snapshot, or more traces than the other),
 * units by process and device, and call sites by their functions and
 * files, so that a refactor diffs clean: a site whose lines moved is the
 * same site, and one whose function or file was renamed is paired with
 * its old self and said renamed.
 */
#ifndef VRAMTRACE_EXPORT_DIFF_MATCH_H
#define VRAMTRACE_EXPORT_DIFF_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diff_profile.h"

/* Two units side by side (either NULL where its side has none), named. */
struct diff_pair {
    const struct diff_unit *before, *after;
    char name[160];
};

/* The units of both sides paired: the before side's in its order, then
 * those only the after side has. NULL if out of memory (*n 0). */
struct diff_pair *vt_diff_pair_units(const struct vt_diff_profile *before,
                                     const struct vt_diff_profile *after, size_t *n);

/* A call site of either side, and of both where they are paired. */
struct diff_change {
    const struct diff_site *b, *a;
    uint64_t before, after, before_count, after_count;
    bool renamed;              /* paired though a function or file name differs */
};

/* The sites of two units side by side, biggest change first; NULL if out
 * of memory. */
struct diff_change *vt_diff_compare_sites(const struct diff_unit *before,
                                          const struct diff_unit *after, size_t *n);

/* One name that differs between a renamed site's two stacks. */
struct diff_rename {
    const char *what;          /* "function" or "file" */
    const char *before, *after;
};
/* The renames of a paired site (each once), at most max; how many. */
size_t vt_diff_renames(const struct diff_change *c, struct diff_rename *out, size_t max);

#endif
