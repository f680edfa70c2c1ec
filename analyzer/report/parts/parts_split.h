/*
 * What the memory is made of at an instant - the peak, a failure, a
 * phase's peak - split into the parts engineers reason in (docs/user/
 * PYTORCH.md, "Parts"; docs/user/REPORT.md has the numbers):
 *
 *   parameters, buffers, gradients, optimizer state   the Python
 *       bootstrap's census nearest the instant (replay/parts.h): the
 *       bytes of its tensors whose allocation was live then;
 *   library workspaces and NCCL   allocations whose stack passes through
 *       a CUDA library (cuBLAS, cuDNN, NCCL, ...: the table in
 *       parts_split.c), where a per-site view of the instant exists;
 *   the CUDA context   measured by the tracer, outside the ledger (at
 *       failures only: the replay keeps the contexts live then);
 *   the rest, two ways:
 *     segment level (the trace alone): "activations, temporaries and
 *       cache" - the driver's allocations less the above; a caching
 *       allocator's segment is one allocation, so the tensors inside it
 *       and its free blocks cannot be told apart;
 *     tensor level (a failure with PyTorch's OOM snapshot beside the
 *       trace): the allocator's live blocks less the parts are
 *       "activations and temporaries", its segments' unallocated bytes
 *       "cached but unallocated", and what the driver holds outside the
 *       allocator's segments "other".
 *
 * Beside it, the theory: the parameter count by dtype, the bytes per
 * parameter a person would write down (gradients as the parameters'
 * dtype; optimizer state: AdamW/Adam two states of the parameter's dtype,
 * SGD none) and what was observed, with the largest differences named.
 */
#ifndef VRAMTRACE_REPORT_PARTS_SPLIT_H
#define VRAMTRACE_REPORT_PARTS_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

enum vt_split_row {
    VT_SPLIT_PARAMETERS,
    VT_SPLIT_BUFFERS,
    VT_SPLIT_GRADIENTS,
    VT_SPLIT_OPTIMIZER_STATE,
    VT_SPLIT_ACTIVATIONS,   /* tensor level: live blocks not a part */
    VT_SPLIT_LIBRARY,       /* library workspaces and NCCL */
    VT_SPLIT_CONTEXT,       /* the CUDA context (outside the ledger) */
    VT_SPLIT_CACHED,        /* tensor level: reserved, not allocated */
    VT_SPLIT_REST,          /* segment level: activations, temporaries and cache */
    VT_SPLIT_OTHER,         /* tensor level: outside the allocator's segments */
    VT_SPLIT_ROWS_,
};
/* The row's words ("parameters", "optimizer state", ...) and JSON key. */
const char *vt_split_row_name(enum vt_split_row r);
const char *vt_split_row_key(enum vt_split_row r);

/* The row of a part (enum vt_part, not VT_PART_CENSUS). */
enum vt_split_row vt_split_row_of_part(unsigned part);

struct vt_split {
    bool known;               /* a census of this process exists */
    bool tensor_level;        /* the allocator's blocks were at hand */
    bool library_known;       /* a per-site view of the instant was at hand */
    bool context_known;
    uint64_t time_ns;
    uint64_t total;           /* the ledger's bytes then (the context not in it) */
    uint64_t rows[VT_SPLIT_ROWS_];
    bool row_shown[VT_SPLIT_ROWS_]; /* rows this level tells */
    const struct vt_part_census *census; /* the census gone by */
    /* at the peak: the snapshot whose history was replayed to it (its file
     * name; "" none), and whether it was there but began after the peak */
    char snapshot[256];
    bool history_short;
    uint64_t census_tensors[VT_PART_COUNT_];
};

/* At l's peak. */
void vt_split_at_peak(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                      struct vt_split *s);
/* At l's peak, at the tensor level where the last snapshot's history
 * (--torch-history: an OOM's, or the one at exit) reaches back to it (the allocator's state replayed to
 * the peak's microsecond); else as vt_split_at_peak. Reads the snapshot:
 * for the report's own peak, not for every rank of a job. */
void vt_split_at_peak_tensors(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                              struct vt_split *s);
/* At the failure ooms[first .. end) of l (tensor level with its OOM
 * snapshot). */
void vt_split_at_failure(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                         size_t first, size_t end, struct vt_split *s);
/* At a phase's peak. */
void vt_split_at_phase(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                       const struct vt_phase_peak *ph, struct vt_split *s);

/* The theory beside one census. */
#define VT_THEORY_DTYPES 8
struct vt_theory {
    bool known;
    const struct vt_part_census *census; /* the census it reads (most gradients + state) */
    const char *optimizer;    /* the optimizers' classes, NULL: none seen */
    struct { const char *dtype; uint64_t count, bytes; } params[VT_THEORY_DTYPES];
    size_t ndtypes;
    uint64_t param_count, param_bytes, buffer_bytes, grad_bytes, state_bytes;
    bool grads_seen;          /* .grad was set on some parameter then */
    /* by hand: bytes per parameter, and the sums */
    bool state_rule;          /* a rule for this optimizer is known */
    double hand_grad_per_param, hand_state_per_param;
    uint64_t hand_params, hand_grads, hand_state;
    double grad_per_param, state_per_param; /* observed */
};
void vt_theory_of(struct vt_report *rep, size_t input, struct vt_theory *t);

/* The text section of l (after its peak's table) and the lines of a
 * failure; nothing for a process without a census. */
void vt_parts_text(struct vt_report *rep, FILE *out, size_t input, const struct vt_ledger *l);
void vt_parts_failure_text(struct vt_report *rep, FILE *out, size_t input,
                           const struct vt_ledger *l, size_t first, size_t end);
/* The "parts" key of a ledger and of a failure (null without a census). */
void vt_parts_json(struct vt_report *rep, struct vt_json *j, size_t input,
                   const struct vt_ledger *l);
void vt_parts_failure_json(struct vt_report *rep, struct vt_json *j, size_t input,
                           const struct vt_ledger *l, size_t first, size_t end);

#endif
