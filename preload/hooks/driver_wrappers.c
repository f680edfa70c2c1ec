/*
 * Every wrapper of a hooked driver variant, generated from driver_hooks.def.
 *
 * Each variant gets two entry points sharing one body:
 *   - the EXPORTED symbol (cuMemAlloc_v2 ...), which programs linked with
 *     -lcuda reach; it calls the next definition after this library, so a
 *     second interposer loaded after us still sees the call;
 *   - an INTERNAL wrapper handed out by dlsym and cuGetProcAddress, which
 *     calls exactly the driver pointer the caller would have got.
 * The body calls the real function with the recursion guard set (whatever
 * the driver or a stacked interposer calls back into is not counted again),
 * then describes what happened. The result is returned unchanged.
 *
 * While the action runs, vt_hook_frame is the body's frame (recorder.h):
 * the stack walk starts at its caller. __builtin_frame_address gives the
 * body (or the wrapper it is inlined into) a frame-pointer frame that
 * lives as long as the action; nothing in it is over-aligned, so no
 * realignment moves the return address away from frame[1].
 */
#include "hooks_internal.h"

#include <string.h>

#define VT_UNPAREN(...) __VA_ARGS__

/* The frame address, if it is laid out as vt_hook_frame says (recorder.h):
 * the saved rbp and the return address right below the caller's stack
 * pointer (the CFA). A frame realigned at entry (over-aligned locals)
 * keeps a copy of the return address elsewhere: NULL, and the recorder
 * walks from its own frame as without one (a compare and a conditional
 * move per call). */
static inline void *vt_frame_of_this_call(void *frame, void *cfa)
{
    return (char *)cfa == (char *)frame + 2 * sizeof(void *) ? frame : NULL;
}

#define VT_HOOK(name, base, version, ptsz, pfn, params, args, pre_expr, action)        \
    static CUresult vt_body_##name(pfn real, VT_UNPAREN params)                        \
    {                                                                                  \
        const unsigned api = VT_API_##name;                                            \
        if (real == NULL)                                                              \
            return CUDA_ERROR_NOT_INITIALIZED; /* no driver: as if libcuda said so */  \
        if (vt_in_tracer)                                                              \
            return real args;                                                          \
        vt_in_tracer++;                                                                \
        const struct vt_pre pre = pre_expr;                                            \
        CUresult rc = real args;                                                       \
        vt_in_tracer--;                                                                \
        (void)pre;                                                                     \
        (void)api;                                                                     \
        void *outer_frame = vt_hook_frame;                                             \
        vt_hook_frame = vt_frame_of_this_call(__builtin_frame_address(0),              \
                                              __builtin_dwarf_cfa());                  \
        action;                                                                        \
        vt_hook_frame = outer_frame;                                                   \
        return rc;                                                                     \
    }                                                                                  \
    VT_EXPORT CUresult CUDAAPI name params;                                            \
    VT_EXPORT CUresult CUDAAPI name params                                             \
    {                                                                                  \
        return vt_body_##name((pfn)vt_next_real(VT_API_##name), VT_UNPAREN args);      \
    }                                                                                  \
    static CUresult CUDAAPI vt_internal_##name params                                  \
    {                                                                                  \
        return vt_body_##name((pfn)vt_driver_real(VT_API_##name), VT_UNPAREN args);    \
    }                                                                                  \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), pfn),               \
                   #name " must have the signature of " #pfn);                         \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&vt_internal_##name), pfn), \
                   #name " (internal) must have the signature of " #pfn);
#include "driver_hooks.def"
#undef VT_HOOK

const struct vt_hook_info vt_hooks[VT_API_DRIVER_END_] = {
#define VT_HOOK(name, base, version, ptsz, ...) \
    [VT_API_##name] = { #name, #base, version, ptsz, (void *)&name, (void *)&vt_internal_##name },
#include "driver_hooks.def"
#undef VT_HOOK
};

unsigned vt_hook_by_name(const char *name)
{
    if (name == NULL || name[0] != 'c' || name[1] != 'u')
        return 0;
    for (unsigned api = 1; api < VT_API_DRIVER_END_; api++)
        if (strcmp(vt_hooks[api].name, name) == 0)
            return api;
    return 0;
}

static const char *const vt_api_names[VT_API_COUNT_] = {
#define VT_HOOK(name, ...) [VT_API_##name] = #name,
#include "driver_hooks.def"
#undef VT_HOOK
#define VT_RT_HOOK(name, ...) [VT_API_##name] = #name,
#include "runtime_hooks.def"
#undef VT_RT_HOOK
};

const char *vt_api_name(unsigned api)
{
    return api < VT_API_COUNT_ ? vt_api_names[api] : NULL;
}

unsigned vt_api_count(void)
{
    return VT_API_COUNT_;
}
