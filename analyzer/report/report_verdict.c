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
#include "verdict_rules.h"

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

/* A request from outside PyTorch's allocator that its cache starved. */
static bool starved(struct vt_report *rep, size_t input, const struct vt_oom *o,
                    struct vt_verdict_told *v)
{
    char asker[160], b1[32], b2[32], b3[32], b4[32];
    if (!vt_verdict_starved_by_cache(rep, input, o, asker, sizeof asker))
        return false;
    uint64_t cache = o->torch_reserved - o->torch_allocated;
    v->verdict = vt_verdict_name(VT_VERDICT_STARVED_BY_CACHE);
    v->source = "allocator_samples";
    v->set_aside = "the trace does not see inside PyTorch's segments: its allocator's own figures "
                   "(sampled at the model's latest phase closing) say they were cache";
    snprintf(v->story, sizeof v->story,
             "%s asked for %s outside PyTorch's allocator; %s was free on the device and "
             "PyTorch's cache held %s reserved but unallocated (of %s reserved)",
             asker, vt_format_bytes(o->requested_bytes, b1, sizeof b1),
             vt_format_bytes(o->free_bytes, b2, sizeof b2), vt_format_bytes(cache, b3, sizeof b3),
             vt_format_bytes(o->torch_reserved, b4, sizeof b4));
    snprintf(v->next_step, sizeof v->next_step,
             "give the cache back before the library asks: torch.cuda.empty_cache() before its "
             "initialisation or collective; or cap PyTorch with "
             "torch.cuda.set_per_process_memory_fraction so the library keeps room%s",
             strncmp(asker, "NCCL", 4) ? "" : "; NCCL's own buffers shrink with NCCL_BUFFSIZE");
    return true;
}

/* Other traced processes on the GPU held what the request lacked. */
static bool neighbours(struct vt_report *rep, size_t input, const struct vt_oom *o,
                       struct vt_verdict_told *v)
{
    if (!vt_verdict_neighbours_contended(o))
        return false;
    char who[sizeof v->story - 80];
    vt_verdict_neighbour_story(rep, o, who, sizeof who);
    v->verdict = vt_verdict_name(VT_VERDICT_CONTENDED);
    v->source = "trace";
    if (o->verdict != VT_VERDICT_CONTENDED)
        v->set_aside = "other traced processes on this GPU held what the request lacked";
    snprintf(v->story, sizeof v->story, "other traced processes on this GPU held what this one "
                                        "lacked: %s", who);
    vt_oom_next_step(rep, input, o, VT_VERDICT_CONTENDED, v->next_step, sizeof v->next_step);
    return true;
}

/* A failure its own growth made: the growth first, then the rest. */
static void growth_first(struct vt_report *rep, size_t input, const struct vt_oom *o,
                         struct vt_verdict_told *v)
{
    char text[sizeof v->next_step];
    if (!vt_verdict_growth_caused(rep, input, o, text, sizeof text))
        return;
    size_t n = strlen(text);
    size_t room = sizeof text - 1 - n;
    const char *then = "; then: ";
    size_t m = strlen(then) < room ? strlen(then) : room;
    memcpy(text + n, then, m);
    n += m;
    room -= m;
    size_t rest = strlen(v->next_step) < room ? strlen(v->next_step) : room;
    memcpy(text + n, v->next_step, rest);
    text[n + rest] = '\0';
    memcpy(v->next_step, text, n + rest + 1);
}

void vt_report_verdict(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                       size_t first, size_t end, struct vt_verdict_told *v)
{
    const struct vt_oom *o = &l->ooms[first];
    memset(v, 0, sizeof *v);
    v->trace_verdict = vt_verdict_name(o->verdict);
    v->trace_story = trace_story(o->verdict);
    if (o->verdict == VT_VERDICT_LARGER_THAN_DEVICE) {
        /* That whatever the cache or the neighbours hold. */
    } else if (starved(rep, input, o, v) || neighbours(rep, input, o, v)) {
        return;
    } else {
        struct vt_torch_decision d;
        /* The allocator's view decides every other case it saw. */
        if (vt_report_torch_decide(rep, input, l, first, end, &d)) {
            v->verdict = d.verdict;
            v->source = "allocator";
            if (strcmp(v->verdict, v->trace_verdict))
                v->set_aside = VT_TRACE_VERDICT_REASON;
            snprintf(v->story, sizeof v->story, "%s", d.story);
            snprintf(v->next_step, sizeof v->next_step, "%s", d.next_step);
            v->has_largest_free = true;
            v->largest_free_block = d.largest_free_block;
            growth_first(rep, input, o, v);
            return;
        }
    }
    v->verdict = v->trace_verdict;
    v->source = "trace";
    snprintf(v->story, sizeof v->story, "%s", v->trace_story);
    vt_oom_next_step(rep, input, o, o->verdict, v->next_step, sizeof v->next_step);
    if (o->verdict != VT_VERDICT_LARGER_THAN_DEVICE)
        growth_first(rep, input, o, v);
}
