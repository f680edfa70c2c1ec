/*
 * One verdict per failure, whatever view prints it (text, JSON, the job
 * overview, summaries, the page). The trace sees what the driver sees:
 * segments, free bytes, other processes. Inside a caching allocator's
 * segments it is blind, so where PyTorch's allocator left its state at
 * the failure (the OOM snapshot), that state decides: "fragmented" there
 * is a fact, where the trace could only have said "exhausted". The
 * trace's verdict stays beside it, second, with why it gave way.
 */
#include <stdio.h>
#include <string.h>

#include "report.h"

static const char *trace_story(enum vt_verdict v)
{
    switch (v) {
    case VT_VERDICT_LARGER_THAN_DEVICE:
        return "the request alone is larger than the device";
    case VT_VERDICT_FRAGMENTED:
        return "enough was free, on the device or in the cache, but not in one block";
    case VT_VERDICT_CONTENDED:
        return "other processes hold the memory this one is short of";
    case VT_VERDICT_OVERSIZED:
        return "the request itself is the problem: larger than all this process held";
    case VT_VERDICT_EXHAUSTED:
        return "this process's own allocations fill the device";
    default:
        return "the driver's free/total were not captured";
    }
}

void vt_report_verdict(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                       size_t first, size_t end, struct vt_verdict_told *v)
{
    const struct vt_oom *o = &l->ooms[first];
    memset(v, 0, sizeof *v);
    v->trace_verdict = vt_verdict_name(o->verdict);
    v->trace_story = trace_story(o->verdict);
    struct vt_torch_decision d;
    /* A request larger than the device is that whatever the cache holds;
     * the allocator's view decides every other case it saw. */
    if (o->verdict != VT_VERDICT_LARGER_THAN_DEVICE &&
        vt_report_torch_decide(rep, input, l, first, end, &d)) {
        v->verdict = d.verdict;
        v->source = "allocator";
        snprintf(v->story, sizeof v->story, "%s", d.story);
        snprintf(v->next_step, sizeof v->next_step, "%s", d.next_step);
        v->has_largest_free = true;
        v->largest_free_block = d.largest_free_block;
        return;
    }
    v->verdict = v->trace_verdict;
    v->source = "trace";
    snprintf(v->story, sizeof v->story, "%s", v->trace_story);
    vt_oom_next_step(rep, input, o, v->next_step, sizeof v->next_step);
}
