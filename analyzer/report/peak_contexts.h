/*
 * The CUDA contexts' part of a device peak, as every view says it: a
 * context of measured cost counts in its device's ledger (contexts.h), so
 * a peak is what nvidia-smi would have shown, and the views say how much
 * of it the contexts were ("peak 3.38 GiB, of which 384.00 MiB CUDA
 * contexts") and how many contexts were left out, their cost not measured
 * - never a silent 0. Said only where the trace can tell: a context of
 * measured cost at the peak, or a trace that measures contexts (format
 * version 6), so older traces read as they always did.
 */
#ifndef VRAMTRACE_REPORT_PEAK_CONTEXTS_H
#define VRAMTRACE_REPORT_PEAK_CONTEXTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vt_replay;
struct vt_ledger;
struct vt_json;

struct vt_peak_contexts {
    uint64_t bytes;       /* the contexts' bytes in the peak */
    uint32_t unmeasured;  /* contexts made on the device whose cost was not measured */
};

/* The contexts of a device ledger's peak; false where nothing is to be said. */
bool vt_peak_contexts_of(const struct vt_replay *rp, const struct vt_ledger *l,
                         struct vt_peak_contexts *c);
/* "of which 384.00 MiB CUDA contexts", "; 1 context's cost not measured"
 * after it or alone ("1 CUDA context's cost not measured"). */
const char *vt_peak_contexts_words(const struct vt_peak_contexts *c, char *buf, size_t n);
/* "contexts_bytes" and "contexts_unmeasured", beside a peak's figures. */
void vt_peak_contexts_json(struct vt_json *j, const struct vt_peak_contexts *c);

/* Leaves the contexts' sites out of a list of sites (what was never
 * freed: a context is released, not freed); how many are left. */
struct vt_site_bytes;
size_t vt_peak_contexts_drop(const struct vt_replay *rp, struct vt_site_bytes *top, size_t n);

#endif
