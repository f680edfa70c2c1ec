/* Printing `vramtrace simulate` results: a side-by-side table of runs,
 * each failure explained, the check against the snapshot's own segment
 * events, and the reserved/allocated timeline (docs/user/SNAPSHOTS.md). */
#ifndef VRAMTRACE_SIMULATE_SIM_REPORT_H
#define VRAMTRACE_SIMULATE_SIM_REPORT_H

#include <stdio.h>

#include "sim_run.h"

struct vt_sim_case {
    char label[256];              /* the allocator setting as given */
    struct vt_alloc_config cfg;
    uint64_t capacity;            /* 0: unlimited */
    struct vt_sim_result res;
    bool has_min_capacity;
    uint64_t min_capacity;
};

struct vt_sim_report_options {
    size_t text_frames;
    bool json;
};

void vt_sim_report_text(const struct vt_sim_input *in, const struct vt_sim_case *cases, size_t n,
                        const struct vt_sim_report_options *opt, FILE *out);
void vt_sim_report_json(const struct vt_sim_input *in, const struct vt_sim_case *cases, size_t n,
                        FILE *out);

/* Relative deviation of model from truth, in percent. */
double vt_sim_deviation_pct(uint64_t model, uint64_t truth);

#endif
