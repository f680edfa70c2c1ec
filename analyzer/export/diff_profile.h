/*
 * What `diff` reduces a side to (diff_profile.c), inside diff only:
 * processes - a trace's, or a snapshot's that stands alone (an OOM snapshot
 * beside its trace belongs to that trace's process) - and per process and
 * device a unit: its peak, its phases' peaks, its failed requests and the
 * bytes per call site at the peak. A site keeps its frames, so that two
 * runs' sites can be paired by function and file, whatever their lines
 * (diff_match.h).
 */
#ifndef VRAMTRACE_EXPORT_DIFF_PROFILE_H
#define VRAMTRACE_EXPORT_DIFF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diff.h"
#include "parts_split.h"

struct diff_frame {
    char *function; /* its name; where it is when it has none ("libx.so+0x12") */
    char *file;     /* the file's base name; NULL if unknown */
    uint64_t line;  /* 0 if unknown */
    bool named;     /* function is a function's name */
};

struct diff_site {
    char *key;      /* the frames innermost first without their lines, " <- " between */
    char *frames;   /* with their lines, as JSON writes them */
    char *shown;    /* as the text report names it (stack_where.h), marked for a
                     * stack-lines stream to fit */
    struct diff_frame *fr;
    size_t nfr;
    uint64_t bytes, count;
};

struct diff_phase {
    char *name;
    uint64_t peak;
};

/* A failed request, with the one verdict every view gives it
 * (report_verdict.c: the allocator's where its snapshot is beside the
 * trace). */
struct diff_failure {
    char verdict[24];
    uint64_t requested;
};

/* The rows of the peak's split diff compares (segment level, the same
 * on both sides: parts_split.h). */
#define DIFF_PARTS 6
extern const enum vt_split_row vt_diff_part_rows[DIFF_PARTS];

struct diff_unit {
    size_t proc;                /* in the profile's procs */
    int64_t device;
    uint64_t peak;
    bool parts_known;           /* a census: the peak's split below */
    uint64_t parts[DIFF_PARTS];
    struct diff_site *sites;    /* by key, then by their lines */
    size_t nsites, sites_cap;
    struct diff_phase *phases;
    size_t nphases, phases_cap;
    struct diff_failure *failures;
    size_t nfailures, failures_cap;
};

struct diff_proc {
    char program[128];  /* the program's name, a Python script's; "snapshot" */
    long rank;          /* -1: none said */
    bool snapshot;      /* a snapshot that stands alone */
    uint64_t start_ns;  /* orders the processes of one program */
    size_t ordinal;     /* 1-based among the side's of this program and rank */
    size_t nsame;       /* how many of them the side has */
    bool has_units;
};

struct vt_diff_profile {
    size_t inputs;
    size_t oom_snapshots;       /* snapshots that belong to a trace of the side */
    bool *snapshot_owned;       /* per snapshot of the side: belongs to a trace */
    struct diff_proc *procs;
    size_t nprocs, procs_cap;
    struct diff_unit *units;
    size_t n, cap;
    bool out_of_memory;
};

#endif
