/*
 * The runs `vramtrace fit` compares, as fit needs them: for one process of
 * each run (the one with the largest device peak), its device allocations
 * in the order the live set saw them begin and end, each with its call
 * site (known across runs by its frames without line numbers, so a moved
 * line still matches; shown as the report names it) and the phase open
 * when it began; and what the device offered the process.
 *
 * This is fit's one door into the analysis (fit_runs.c): everything else
 * in fit/ works on these arrays.
 */
#ifndef VRAMTRACE_FIT_FIT_RUNS_H
#define VRAMTRACE_FIT_FIT_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc_policy.h"

#define VT_FIT_NO_PHASE UINT32_MAX

struct vt_fit_alloc {
    uint64_t size;
    uint32_t site;   /* index in the run's sites */
    uint32_t phase;  /* index in the run's phases, VT_FIT_NO_PHASE: none open */
};

/* One step of the run: an allocation begins (alloc index) or ends. */
#define VT_FIT_ENDS 0x80000000u
struct vt_fit_step {
    uint32_t alloc;  /* index in allocs, | VT_FIT_ENDS for its end */
};

struct vt_fit_site {
    char *key;       /* its frames, innermost first, without lines */
    char *shown;     /* "function (file.c:60)", as every view names a site */
};

struct vt_fit_run {
    char *name;      /* the parameter's name, as the argument gave it */
    long long value;
    const char *arg; /* the traces it was read from, as given */
    char *path;      /* the trace used */
    int64_t device;
    struct vt_fit_alloc *allocs;
    size_t nallocs;
    struct vt_fit_step *steps;
    size_t nsteps;
    struct vt_fit_site *sites;
    size_t nsites;
    char **phases;
    size_t nphases;
    uint64_t peak;           /* the ledger's peak, as the report counts it */
    uint64_t device_total;   /* the device's memory (0: not recorded) */
    uint64_t context_bytes;  /* this process's contexts on it, measured */
    uint32_t contexts_unmeasured;
    /* the device's free bytes once the process's first context on it
     * existed (format version 6): what it had for itself from then on */
    bool has_free_at_context;
    uint64_t free_at_context;
    bool caching_allocator;  /* PyTorch's caching allocator's frames allocated */
    char *alloc_conf;        /* its PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF), NULL: not set */
    bool torch_tensors;      /* traced with PYTORCH_NO_CUDA_MEMORY_CACHING=1: PyTorch's
                                tensors, each its own allocation */
};

/* Reads one run: paths are its trace files. Returns 0, or 2 with the
 * reason in err ("FILE: byte N: reason" for a bad trace). */
int vt_fit_run_load(struct vt_fit_run *run, char *const *paths, size_t npaths, char *err,
                    size_t errlen);
void vt_fit_run_free(struct vt_fit_run *run);
/* The capacity without --capacity: the free bytes at the first context
 * where the trace has them, else the device's total less its contexts. */
uint64_t vt_fit_default_capacity(const struct vt_fit_run *tpl);

#endif
