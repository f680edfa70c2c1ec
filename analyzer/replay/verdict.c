/*
 * Why an allocation failed: the decision table of
 * docs/internals/REPORT_INTERNALS.md ("Verdicts"), on the numbers at the
 * failure. R requested, F free on the device, T its capacity, P this
 * process's bytes on it (live and cached), Ca of them cache its allocator
 * gave back before retrying, K its contexts, X = T - F - P - K everything
 * else (other processes). The first row that holds is the verdict:
 *
 *   unknown             F and T were not captured
 *   larger_than_device  R > T: no amount of freeing makes it fit
 *   fragmented          F + Ca >= R: enough was free, on the device or as
 *                       cache, but not as one block large enough
 *   contended           X >= R - F - Ca and X > P - Ca: without the other
 *                       processes it would fit, and they hold more than
 *                       this process's own live memory
 *   oversized           R > P + K: the request alone is larger than all
 *                       this process holds; nothing it could free is the
 *                       problem, the request is
 *   exhausted           otherwise: this process's own live memory fills
 *                       the device; freeing it would make R fit
 */
#include "replay.h"

static uint64_t minus(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

const char *vt_verdict_name(enum vt_verdict v)
{
    switch (v) {
    case VT_VERDICT_LARGER_THAN_DEVICE: return "larger_than_device";
    case VT_VERDICT_FRAGMENTED: return "fragmented";
    case VT_VERDICT_CONTENDED: return "contended";
    case VT_VERDICT_OVERSIZED: return "oversized";
    case VT_VERDICT_EXHAUSTED: return "exhausted";
    case VT_VERDICT_STARVED_BY_CACHE: return "starved_by_cache";
    default: return "unknown";
    }
}

const char *vt_retry_name(enum vt_retry r)
{
    switch (r) {
    case VT_RETRY_SUCCEEDED: return "succeeded";
    case VT_RETRY_FAILED: return "failed";
    default: return "not seen";
    }
}

uint64_t vt_oom_others_bytes(const struct vt_oom_numbers *n)
{
    return minus(minus(minus(n->total_bytes, n->free_bytes), n->process_bytes), n->context_bytes);
}

/* The cache counts at most what the process held. */
static uint64_t cached(const struct vt_oom_numbers *n)
{
    return n->cached_bytes < n->process_bytes ? n->cached_bytes : n->process_bytes;
}

uint64_t vt_oom_shortfall(const struct vt_oom_numbers *n)
{
    return minus(minus(n->requested, n->free_bytes), cached(n));
}

enum vt_verdict vt_oom_verdict_of(const struct vt_oom_numbers *n)
{
    if (!n->driver_info)
        return VT_VERDICT_UNKNOWN;
    if (n->requested > n->total_bytes)
        return VT_VERDICT_LARGER_THAN_DEVICE;
    uint64_t shortfall = vt_oom_shortfall(n);
    if (shortfall == 0)
        return VT_VERDICT_FRAGMENTED;
    uint64_t others = vt_oom_others_bytes(n);
    if (others >= shortfall && others > n->process_bytes - cached(n))
        return VT_VERDICT_CONTENDED;
    if (n->requested > n->process_bytes + n->context_bytes)
        return VT_VERDICT_OVERSIZED;
    return VT_VERDICT_EXHAUSTED;
}

struct vt_oom_numbers vt_oom_numbers_of(const struct vt_oom *o)
{
    return (struct vt_oom_numbers){
        .requested = o->requested_bytes,
        .free_bytes = o->free_bytes,
        .total_bytes = o->total_bytes,
        .process_bytes = o->process_bytes,
        .cached_bytes = o->cached_bytes,
        .context_bytes = o->context_known ? o->context_bytes : 0,
        .driver_info = o->driver_info,
    };
}

void vt_oom_diagnose(struct vt_oom *o)
{
    /* Frees between a failure and its retry are the caching allocator's
     * flush: memory it held as cache, unusable for this request. Without a
     * retry they may be ordinary frees, so the cache is not known. */
    o->cached_known = o->retry != VT_RETRY_NOT_SEEN;
    o->cached_bytes = o->cached_known ? o->released_bytes : 0;
    o->context_known = o->contexts > 0 && o->contexts_unmeasured == 0;
    uint64_t context = o->context_known ? o->context_bytes : 0;
    o->other_bytes = o->driver_info ? minus(o->outside_bytes, context) : 0;
    struct vt_oom_numbers n = vt_oom_numbers_of(o);
    o->verdict = vt_oom_verdict_of(&n);
}
