/* cuGetProcAddress (v1, 4 arguments) and cuGetProcAddress_v2 (5 arguments):
 * (base name, version, flags) -> the newest variant whose version <= the one
 * asked; flags=2 (per-thread default stream) prefers the _ptsz/_ptds variant.
 * Also cuGetExportTable, which a driver without private tables refuses. */
#define _GNU_SOURCE
#include "sim_internal.h"
#include "sim_variants.h"

#include <stdio.h>
#include <string.h>

/* The variant answering (name, version, flags); *status tells why not. */
static const struct vtsim_variant *resolve(const char *name, int version, cuuint64_t flags,
                                           CUdriverProcAddressQueryResult *status)
{
    const struct vtsim_variant *best = NULL, *best_pt = NULL;
    int exists = 0;
    for (unsigned i = 0; name && i < vtsim_variant_count; i++) {
        const struct vtsim_variant *v = &vtsim_variants[i];
        if (strcmp(v->base, name) != 0)
            continue;
        exists = 1;
        if (v->version > version)
            continue;
        if (v->per_thread) {
            if (!best_pt || v->version >= best_pt->version)
                best_pt = v;
        } else if (!best || v->version >= best->version) {
            best = v;
        }
    }
    if ((flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && best_pt)
        best = best_pt;
    *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                   : exists ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                            : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best;
}

static CUresult get_proc_address(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                 CUdriverProcAddressQueryResult *symbol_status)
{
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    const struct vtsim_variant *v = NULL;
    CUresult r;
    if (!symbol || !pfn || flags > 3) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        v = resolve(symbol, version, flags, &status);
        r = v ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
        *pfn = v ? (void *)v->fn : NULL;
    }
    if (symbol_status)
        *symbol_status = status;
    vtsim_lookup_log(symbol ? symbol : "(null)", version, (unsigned long long)flags, r,
                     (int)status, v ? v->symbol : NULL);
    return r;
}

VTSIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    return get_proc_address(symbol, pfn, version, flags, NULL);
}

VTSIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version,
                                          cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    return get_proc_address(symbol, pfn, version, flags, status);
}

/* The real runtime asks for private tables here; a driver without them says
 * so, and the runtime gives up cleanly (the real-libcudart test relies on it). */
VTSIM_EXPORT CUresult cuGetExportTable(const void **table, const CUuuid *id)
{
    if (table)
        *table = NULL;
    char hex[33] = "-";
    if (id)
        for (int i = 0; i < 16; i++)
            snprintf(hex + 2 * i, 3, "%02x", (unsigned char)id->bytes[i]);
    vtsim_ledger("export_table", CUDA_ERROR_NOT_SUPPORTED, "uuid=%s", hex);
    return CUDA_ERROR_NOT_SUPPORTED;
}
