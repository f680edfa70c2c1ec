/*
 * cuGetProcAddress routing: the way the CUDA runtime (and every private copy
 * of it inside NCCL, cuBLAS, cuDNN) finds all its driver functions.
 *
 * The real cuGetProcAddress has already answered. Its pointer is looked up
 * in the table of real variant pointers; if it is one we hook, the caller
 * gets our wrapper of THAT variant, so the version and the _ptsz choice the
 * driver made are kept exactly. Asking for cuGetProcAddress itself returns
 * the real v1 or v2 function, which the table maps to our wrapper with the
 * same argument count. Anything else (cuGetExportTable included) passes
 * through untouched.
 */
#include "hooks_internal.h"

void vt_on_get_proc_address(CUresult rc, const char *symbol, void **pfn)
{
    (void)symbol;
    if (rc != CUDA_SUCCESS || pfn == NULL || *pfn == NULL || vt_stepped_aside())
        return;
    vt_in_tracer++;
    vt_driver_attach_from(*pfn);
    vt_in_tracer--;
    unsigned api = vt_driver_find_real(*pfn);
    if (api)
        *pfn = vt_hooks[api].internal;
}
