/* The client of the offline symbolization test (check_offline_symbols.py):
 * two allocation sites with known frames, both live at the peak.
 *     reserve  (inlined into fill_layer) <- fill_layer <- build_model <- main
 *     scratch_buffer <- main
 * Each call the report must show is marked "@site NAME" on its line: the
 * checker finds the expected line numbers by grepping this file for the
 * markers, so moving code cannot make it compare against stale numbers.
 * Built with -g at -O0 and a build-id (meson.build). */
#include "gold_client.h"

static inline __attribute__((always_inline)) CUdeviceptr reserve(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB)); /* @site reserve */
    return p;
}

GOLD_SITE CUdeviceptr fill_layer(size_t mib)
{
    CUdeviceptr p = reserve(mib); /* @site fill_layer */
    return p;
}

GOLD_SITE CUdeviceptr build_model(size_t mib)
{
    CUdeviceptr p = fill_layer(mib); /* @site build_model */
    return p;
}

GOLD_SITE CUdeviceptr scratch_buffer(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB)); /* @site scratch_buffer */
    return p;
}

int main(void)
{
    gold_start();
    CUdeviceptr model = build_model(24); /* @site main>build_model */
    CUdeviceptr scratch = scratch_buffer(8); /* @site main>scratch_buffer */
    CHECK_CU(cuMemFree(scratch));
    CHECK_CU(cuMemFree(model));
    gold_stop();
    return 0;
}
