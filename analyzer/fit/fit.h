/*
 * `vramtrace fit`: the largest value of one parameter (batch, sequence
 * length, layers) that fits, from a few short runs that differ only in it
 * (docs/user/FIT.md).
 *
 * Matching (fit_match.c): an allocation is known across runs by its group,
 * its call site (fit_runs.h: frames without lines) in the phase open when
 * it began. Where a group made as many allocations in every run, the k-th
 * allocation's size follows a law of its own (fit_law.h); where the count
 * changed, the count and the mean size follow laws.
 *
 * A run at any value (fit_eval.c) is the largest run - its order, its
 * lifetimes, its phases - with each allocation's size (and each group's
 * count) taken from its laws, replayed on the ledger's rules (the bytes
 * the report counts) or, for a program on PyTorch's caching allocator,
 * through the allocator model (analyzer/simulate/), so that fragmentation
 * counts. The search (fit_search.c) finds the largest value whose replay
 * stays within the capacity, assuming more of the parameter never needs
 * less memory.
 */
#ifndef VRAMTRACE_FIT_FIT_H
#define VRAMTRACE_FIT_FIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "alloc_policy.h"
#include "fit_law.h"
#include "fit_runs.h"

/* A call site in a phase, across the runs. */
struct vt_fit_group {
    const char *key, *shown;   /* the site (fit_runs.h) */
    const char *phase;         /* NULL: no phase open */
    size_t runs_seen;          /* runs that made allocations here */
    bool in_template;
    bool per_alloc;            /* the same count in every run: a law per allocation */
    struct vt_fit_law bytes;   /* its bytes per run, as the value goes */
    struct vt_fit_law count;   /* its allocations per run */
    struct vt_fit_law mean;    /* its mean size (when the count changes) */
    double residual;           /* the worst of its laws' */
    size_t template_count;
    double template_mean;
};

struct vt_fit_model {
    struct vt_fit_run *runs;   /* sorted by value */
    size_t nruns;
    const struct vt_fit_run *tpl; /* the largest value's */
    struct vt_fit_group *groups;
    size_t ngroups;
    /* per template allocation */
    uint32_t *group_of;
    uint32_t *ordinal;         /* its place among its group's */
    struct vt_fit_law *law;    /* its size's law (per_alloc groups) */
};

/* Matches the runs (taking them: freed by vt_fit_model_free). Returns 0,
 * or 2 with the reason in err (one run, no parameter, other programs). */
int vt_fit_model_build(struct vt_fit_model *m, struct vt_fit_run *runs, size_t nruns, char *err,
                       size_t errlen);
void vt_fit_model_free(struct vt_fit_model *m);

/* How a synthesized run is replayed. */
struct vt_fit_replay_options {
    uint64_t capacity;
    bool model;                     /* through the caching allocator's model */
    struct vt_alloc_config cfg;     /* its settings */
};

/* One synthesized run at a value. */
struct vt_fit_eval {
    long long value;
    bool fits;
    uint64_t peak;                  /* ledger: live bytes; model: reserved */
    uint64_t peak_allocated;        /* model: bytes in tensors at most */
    uint64_t *phase_peak;           /* per template phase, then one for "no phase" */
    size_t nphase_peaks;
    /* the first allocation that did not fit */
    size_t fail_alloc;              /* template allocation */
    uint64_t fail_request, fail_in_use;
    bool fail_fragmented;           /* model: enough was free, not in one piece */
    size_t peak_step;               /* the step of the peak (or the failure) */
    char error[128];
};

/* Replays the run at value (the whole run, past a failure on the ledger;
 * the model stops at its failure). False only on an internal error. */
bool vt_fit_eval_at(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                    long long value, struct vt_fit_eval *ev);
void vt_fit_eval_free(struct vt_fit_eval *ev);
/* The bytes each group holds at the eval's peak step (or failure): out has
 * m->ngroups entries. */
bool vt_fit_parts_at(const struct vt_fit_model *m, long long value, size_t step, uint64_t *out);

/* The answer. */
#define VT_FIT_VALUE_MAX (1LL << 40)
struct vt_fit_answer {
    bool unlimited;                 /* fits at VT_FIT_VALUE_MAX: nothing that grows limits it */
    long long max_fits;             /* 0: not even the value 1 */
    struct vt_fit_eval at_max, at_next; /* at max_fits (if >= 1) and max_fits + 1 */
    size_t evaluations;
    /* What sets the limit: of the sites that grow with the value, the one
     * holding the most when max_fits + 1 fails (the failing allocation may
     * be a small one that came after it) */
    bool has_limit_group;
    size_t limit_group;
    uint64_t limit_group_bytes;
    /* confidence */
    const char *confidence;         /* "high", "medium", "low" */
    double residual;                /* the worst residual among groups that matter */
    double extrapolation;           /* max_fits / the largest measured value */
    char why[256];                  /* what lowered it */
};

bool vt_fit_search(const struct vt_fit_model *m, const struct vt_fit_replay_options *opt,
                   struct vt_fit_answer *a, char *err, size_t errlen);
void vt_fit_answer_free(struct vt_fit_answer *a);

/* What the runs' allocations are: "allocations" (the program's own),
 * "pytorch_tensors" (PyTorch with its cache off), "pytorch_segments"
 * (the segments of PyTorch's caching allocator, not its tensors). */
const char *vt_fit_traced(const struct vt_fit_model *m);

/* What the output says. */
struct vt_fit_output {
    bool json;
    bool has_at;
    long long at;
    bool capacity_given;
    const char *allocator;          /* the settings given, NULL: none */
};
void vt_fit_write_text(FILE *out, const struct vt_fit_model *m,
                       const struct vt_fit_replay_options *opt, const struct vt_fit_output *o,
                       const struct vt_fit_answer *a, const struct vt_fit_eval *at);
void vt_fit_write_json(FILE *out, const struct vt_fit_model *m,
                       const struct vt_fit_replay_options *opt, const struct vt_fit_output *o,
                       const struct vt_fit_answer *a, const struct vt_fit_eval *at);

#endif
