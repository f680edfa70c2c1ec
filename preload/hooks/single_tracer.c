/*
 * One tracer per process. Two copies of libvramtrace.so can end up in one
 * process - a user's LD_PRELOAD plus a launcher's, another path, another
 * build - and each would start its own recorder: two traces per process,
 * every process reported twice.
 *
 * Every copy exports the same claim symbol; the dynamic loader resolves a
 * name to the first definition in the global scope, so all copies agree on
 * which one owns the process. The others step aside silently: no recorder,
 * no signal handler, and hooks that pass everything through untouched -
 * including dlsym and cuGetProcAddress, which hand out the real driver
 * functions rather than their own wrappers, so that the owner's wrappers
 * are the ones the program ends up calling. NVTX injection asked of a copy
 * that stepped aside is forwarded to the owner. The name and meaning of the
 * claim must never change: copies of other versions rely on it.
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <dlfcn.h>

VT_EXPORT extern const struct vt_claim vramtrace_process_tracer;
const struct vt_claim vramtrace_process_tracer = {
    .version = 1,
    .nvtx_initialize = vt_nvtx_initialize,
};
/* This copy's own claim: the exported name, taken from inside the library,
 * is interposable - it means the owner's. */
extern const struct vt_claim vt_own_claim
    __attribute__((alias("vramtrace_process_tracer"), visibility("hidden")));

static _Atomic(const struct vt_claim *) owner_claim;

bool vt_single_tracer_claim(void)
{
    vt_in_tracer++;
    const struct vt_claim *owner = vt_real_dlsym(RTLD_DEFAULT, "vramtrace_process_tracer");
    vt_in_tracer--;
    /* Not found: this copy is outside the global scope (dlopen'ed
     * RTLD_LOCAL) and no copy is inside it - it is the only one seen. */
    bool mine = owner == NULL || owner == &vt_own_claim;
    atomic_store(&owner_claim, mine ? NULL : owner);
    return mine;
}

bool vt_stepped_aside(void)
{
    return atomic_load_explicit(&owner_claim, memory_order_relaxed) != NULL;
}

const struct vt_claim *vt_owner_claim(void)
{
    return atomic_load_explicit(&owner_claim, memory_order_relaxed);
}
