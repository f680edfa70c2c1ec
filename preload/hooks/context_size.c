/*
 * What a new context costs on its device, estimated as the drop of the
 * driver's free memory across the call that created it (cuCtxCreate*, or the
 * cuDevicePrimaryCtxRetain that actually creates the primary context).
 *
 * An ESTIMATE: another process allocating or freeing on the same device at
 * that moment skews it (the difference is clamped at 0).
 *
 * cuMemGetInfo answers for the calling thread's CURRENT context only, so:
 *   - before the call: measured only when the current context is on the
 *     same device (a free figure of another device would be meaningless);
 *     a thread with no current context - the usual first retain of a
 *     process - cannot be measured at all, and the size stays 0 (unknown);
 *   - after the call: a created context is current (cuCtxCreate pushes it);
 *     a retained primary context is not, so it is pushed for the query and
 *     popped again, leaving the thread's context stack as it was.
 * Where the size stays 0, a reader still has two figures (vt_ctx_cost):
 * the device's free bytes once the new context existed (asked after the
 * call, which needs no current context before it: what the process had
 * for itself from then on), and NVML's count of this process's bytes on
 * the device (nvml_probe.c), of which the analyzer takes away what the
 * process's own allocations held there then: the context's cost as
 * nvidia-smi shows it. Both are asked only by a call that created a
 * context - a few calls in a process, each slower than all of this -
 * never on an allocation's path.
 * Every driver call here is a helper (never a hooked wrapper) made with the
 * recursion guard set, so none of them is recorded.
 */
#include "hooks_internal.h"

/* The pre-call measurement of the context creation in progress on this
 * thread, consumed by its action: the real call in between runs with the
 * recursion guard set, so no other context hook of this thread interleaves. */
static __thread struct {
    int creates; /* this call creates a context (a recorder runs) */
    int armed;   /* free_before was measured */
    uint64_t free_before;
} probe __attribute__((tls_model("initial-exec")));

/* Free bytes of the current context's device if that device is dev. */
static int free_on_device(CUdevice dev, uint64_t *free_bytes)
{
    uint64_t total = 0;
    if (vt_current_device() != (int)dev)
        return 0;
    vt_query_mem_info(free_bytes, &total);
    return total != 0; /* vt_query_mem_info says 0/0 when the query failed */
}

/* 1 if the primary context of dev does not exist yet (this retain creates it). */
static int primary_inactive(CUdevice dev)
{
    PFN_cuDevicePrimaryCtxGetState_t state = VT_HELPER_FN(cuDevicePrimaryCtxGetState);
    unsigned int flags = 0;
    int active = 1;
    if (!state)
        return 0;
    vt_in_tracer++;
    CUresult rc = state(dev, &flags, &active);
    vt_in_tracer--;
    return rc == CUDA_SUCCESS && !active;
}

struct vt_pre vt_pre_ctx_create(CUdevice dev, int primary)
{
    probe.armed = 0;
    probe.creates = vt_recorder_active() && (!primary || primary_inactive(dev));
    if (probe.creates)
        probe.armed = free_on_device(dev, &probe.free_before);
    return (struct vt_pre){ (int32_t)dev, VT_KIND_CONTEXT, NULL };
}

/* Free bytes of dev with ctx pushed as the current context, then popped. */
static int free_in_context(CUcontext ctx, CUdevice dev, uint64_t *free_bytes)
{
    PFN_cuCtxPushCurrent_v2_t push = VT_HELPER_FN(cuCtxPushCurrent_v2);
    PFN_cuCtxPopCurrent_v2_t pop = VT_HELPER_FN(cuCtxPopCurrent_v2);
    if (!push || !pop)
        return 0;
    vt_in_tracer++;
    CUresult rc = push(ctx);
    vt_in_tracer--;
    if (rc != CUDA_SUCCESS)
        return 0;
    int ok = free_on_device(dev, free_bytes);
    CUcontext popped = NULL;
    vt_in_tracer++;
    pop(&popped);
    vt_in_tracer--;
    return ok;
}

struct vt_ctx_cost vt_ctx_created_cost(CUresult rc, const CUcontext *pctx, CUdevice dev,
                                       int primary)
{
    struct vt_ctx_cost cost = { 0, 0, 0 };
    int creates = probe.creates, armed = probe.armed;
    probe.creates = probe.armed = 0;
    if (!creates || rc != CUDA_SUCCESS || !pctx || !*pctx)
        return cost;
    uint64_t after = 0;
    if (primary ? free_in_context(*pctx, dev, &after) : free_on_device(dev, &after)) {
        cost.free_after1 = after + 1;
        if (armed && probe.free_before > after)
            cost.size = probe.free_before - after;
    }
    if (cost.size == 0)
        cost.process_used1 = vt_nvml_process_used1(dev);
    return cost;
}
