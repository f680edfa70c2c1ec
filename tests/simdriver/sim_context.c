/* Contexts: per-device primary contexts (reference counted) and created
 * contexts, a per-thread current-context stack, and the fixed device memory
 * a context costs (VTSIM_CONTEXT_BYTES), charged while it lives. */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <string.h>

#define MAX_CONTEXTS 256
#define STACK_DEPTH 32

static struct vtsim_ctx contexts[MAX_CONTEXTS];
static int primary_refs[VTSIM_MAX_DEVICES];
static __thread struct vtsim_ctx *ctx_stack[STACK_DEPTH];
static __thread int ctx_depth;

static struct vtsim_ctx *primary_of(int dev) { return &contexts[dev]; }  /* slots 0..15 */

static struct vtsim_ctx *as_ctx(CUcontext c)
{
    struct vtsim_ctx *x = (struct vtsim_ctx *)c;
    if (x < contexts || x >= contexts + MAX_CONTEXTS || !x->live)
        return NULL;
    return x;
}

struct vtsim_ctx *vtsim_current_ctx(void)
{
    struct vtsim_ctx *c = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
    return c && c->live ? c : NULL;
}

CUresult vtsim_current_device(int *dev)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    struct vtsim_ctx *c = vtsim_current_ctx();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *dev = c->dev;
    return CUDA_SUCCESS;
}

static void push(struct vtsim_ctx *c)
{
    if (ctx_depth < STACK_DEPTH)
        ctx_stack[ctx_depth++] = c;
}

VTSIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !pctx)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t bytes = vtsim_config()->context_bytes;
    vtsim_lock();
    struct vtsim_ctx *c = primary_of(dev);
    int first = primary_refs[dev] == 0;
    if (first)
        r = vtsim_charge(dev, bytes);
    if (r == CUDA_SUCCESS) {
        primary_refs[dev]++;
        c->dev = dev;
        c->primary = 1;
        c->live = 1;
        *pctx = (CUcontext)c;
    }
    vtsim_ledger("ctx_retain", r, "dev=%d\tctx=%p\tkind=primary\trefs=%d\tsize=%llu\tdelta=%lld",
                 (int)dev, (void *)c, primary_refs[dev], (unsigned long long)bytes,
                 r == CUDA_SUCCESS && first ? (long long)bytes : 0ll);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t bytes = vtsim_config()->context_bytes;
    vtsim_lock();
    int last = 0;
    if (primary_refs[dev] == 0) {
        r = CUDA_ERROR_INVALID_CONTEXT;
    } else if (--primary_refs[dev] == 0) {
        last = 1;
        primary_of(dev)->live = 0;
        vtsim_uncharge(dev, bytes);
    }
    vtsim_ledger("ctx_release", r, "dev=%d\tctx=%p\tkind=primary\trefs=%d\tsize=%llu\tdelta=%lld",
                 (int)dev, (void *)primary_of(dev), primary_refs[dev],
                 (unsigned long long)bytes, last ? -(long long)bytes : 0ll);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return cuDevicePrimaryCtxRelease_v2(dev);
}

VTSIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && (!flags || !active))
        r = CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS) {
        vtsim_lock();
        *flags = primary_of(dev)->flags;
        *active = primary_refs[dev] > 0;
        vtsim_unlock();
    }
    return r;
}

VTSIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS)
        primary_of(dev)->flags = flags;
    return r;
}

static CUresult create_context(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    CUresult r = vtsim_check_device(dev);
    if (r == CUDA_SUCCESS && !pctx)
        r = CUDA_ERROR_INVALID_VALUE;
    if (r != CUDA_SUCCESS)
        return r;
    uint64_t bytes = vtsim_config()->context_bytes;
    struct vtsim_ctx *c = NULL;
    vtsim_lock();
    for (int i = VTSIM_MAX_DEVICES; i < MAX_CONTEXTS && !c; i++)
        if (!contexts[i].live)
            c = &contexts[i];
    r = c ? vtsim_charge(dev, bytes) : CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
        c->dev = dev;
        c->primary = 0;
        c->live = 1;
        c->flags = flags;
        push(c);
        *pctx = (CUcontext)c;
    }
    vtsim_ledger("ctx_create", r, "dev=%d\tctx=%p\tkind=created\tsize=%llu\tdelta=%lld",
                 (int)dev, r == CUDA_SUCCESS ? (void *)c : NULL, (unsigned long long)bytes,
                 r == CUDA_SUCCESS ? (long long)bytes : 0ll);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create_context(pctx, flags, dev);
}

VTSIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return create_context(pctx, flags, dev);
}

VTSIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *params, int n,
                                     unsigned int flags, CUdevice dev)
{
    (void)params;
    (void)n;
    return create_context(pctx, flags, dev);
}

VTSIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params,
                                     unsigned int flags, CUdevice dev)
{
    (void)params;
    return create_context(pctx, flags, dev);
}

VTSIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    uint64_t bytes = vtsim_config()->context_bytes;
    vtsim_lock();
    struct vtsim_ctx *c = as_ctx(ctx);
    CUresult r = c && !c->primary ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    int dev = c ? c->dev : -1;
    if (r == CUDA_SUCCESS) {
        c->live = 0;
        vtsim_uncharge(dev, bytes);
        int keep = 0;
        for (int i = 0; i < ctx_depth; i++)  /* drop it from this thread's stack */
            if (ctx_stack[i] != c)
                ctx_stack[keep++] = ctx_stack[i];
        ctx_depth = keep;
    }
    vtsim_ledger("ctx_destroy", r, "dev=%d\tctx=%p\tkind=created\tsize=%llu\tdelta=%lld", dev,
                 (void *)ctx, (unsigned long long)bytes,
                 r == CUDA_SUCCESS ? -(long long)bytes : 0ll);
    vtsim_unlock();
    return r;
}

VTSIM_EXPORT CUresult cuCtxDestroy(CUcontext ctx)
{
    return cuCtxDestroy_v2(ctx);
}

VTSIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx) {
        if (ctx_depth)
            ctx_depth--;
        return CUDA_SUCCESS;
    }
    vtsim_lock();
    struct vtsim_ctx *c = as_ctx(ctx);
    vtsim_unlock();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth)
        ctx_stack[ctx_depth - 1] = c;
    else
        push(c);
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)(ctx_depth ? ctx_stack[ctx_depth - 1] : NULL);
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    vtsim_lock();
    struct vtsim_ctx *c = as_ctx(ctx);
    vtsim_unlock();
    if (!c || ctx_depth == STACK_DEPTH)
        return CUDA_ERROR_INVALID_CONTEXT;
    push(c);
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    if (!vtsim_is_initialized())
        return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx_depth)
        return CUDA_ERROR_INVALID_CONTEXT;
    struct vtsim_ctx *c = ctx_stack[--ctx_depth];
    if (pctx)
        *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    int dev;
    CUresult r = device ? vtsim_current_device(&dev) : CUDA_ERROR_INVALID_VALUE;
    if (r == CUDA_SUCCESS)
        *device = dev;
    return r;
}

VTSIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx)
        return cuCtxGetDevice(device);
    vtsim_lock();
    struct vtsim_ctx *c = as_ctx(ctx);
    vtsim_unlock();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev;
    return CUDA_SUCCESS;
}

VTSIM_EXPORT CUresult cuCtxSynchronize(void)
{
    return vtsim_current_ctx() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

/* A forked child is a new process on the GPU: it owns its copies of the
 * contexts, so their cost is charged again under its own pid. */
static void recharge_contexts_in_child(void)
{
    vtsim_capacity_forget_mine();
    uint64_t bytes = vtsim_config()->context_bytes;
    for (int i = 0; i < MAX_CONTEXTS; i++)
        if (contexts[i].live)
            vtsim_charge(contexts[i].dev, bytes);
}

__attribute__((constructor)) static void register_fork_hook(void)
{
    vtsim_on_fork_child(recharge_contexts_in_child);
}
