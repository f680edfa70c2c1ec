/*
 * Failures as the program saw them: PyTorch's caching allocator answers a
 * failed cudaMalloc by freeing its cache and asking again, so one request
 * can fail twice at the driver. The replay records every failure and marks
 * a failed retry (retry_of_previous); here they are folded back into
 * requests, and a request counts as an out-of-memory only if its last
 * attempt failed too.
 */
#include "replay.h"

size_t vt_oom_request_end(const struct vt_ledger *l, size_t first)
{
    size_t end = first + 1;
    while (end < l->nooms && l->ooms[end].retry_of_previous)
        end++;
    return end;
}

bool vt_oom_request_failed(const struct vt_ledger *l, size_t first)
{
    return l->ooms[vt_oom_request_end(l, first) - 1].retry != VT_RETRY_SUCCEEDED;
}

size_t vt_ledger_failed_requests(const struct vt_ledger *l)
{
    size_t n = 0;
    for (size_t m = 0; m < l->nooms; m = vt_oom_request_end(l, m))
        if (vt_oom_request_failed(l, m))
            n++;
    return n;
}
