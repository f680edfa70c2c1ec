/* Scenario 1: a peak made of three allocation sites (three functions,
 * different sizes and counts), with memory freed before the peak and a
 * fourth site whose memory is all gone by then (it must not appear in the
 * peak breakdown). */
#include "gold_client.h"

GOLD_SITE void load_weights(CUdeviceptr *out, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemAlloc(&out[i], 24 * MIB));
        gold_note_alloc(__func__, out[i]);
    }
}

GOLD_SITE void make_activations(CUdeviceptr *out, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK_CU(cuMemAlloc(&out[i], 6 * MIB + 4096));
        gold_note_alloc(__func__, out[i]);
    }
}

GOLD_SITE void make_workspace(CUdeviceptr *out)
{
    CHECK_CU(cuMemAlloc(out, 40 * MIB));
    gold_note_alloc(__func__, *out);
}

/* A big temporary that sets an early, lower peak and is freed before the
 * real one. */
GOLD_SITE void scratch_buffer(CUdeviceptr *out)
{
    CHECK_CU(cuMemAlloc(out, 50 * MIB));
    gold_note_alloc(__func__, *out);
}

int main(void)
{
    CUdeviceptr weights[3], acts[5], workspace, scratch;
    gold_start();
    scratch_buffer(&scratch);
    load_weights(weights, 3);
    CHECK_CU(cuMemFree(scratch));
    make_activations(acts, 5);
    CHECK_CU(cuMemFree(acts[1]));
    CHECK_CU(cuMemFree(acts[3]));
    make_workspace(&workspace);          /* the peak: 72 + 3 x 6 + 40 MiB */
    CHECK_CU(cuMemFree(workspace));
    make_activations(acts + 1, 1);       /* after the peak: no effect on it */
    for (int i = 0; i < 3; i++)
        CHECK_CU(cuMemFree(weights[i]));
    CHECK_CU(cuMemFree(acts[0]));
    CHECK_CU(cuMemFree(acts[1]));
    CHECK_CU(cuMemFree(acts[2]));
    CHECK_CU(cuMemFree(acts[4]));
    gold_stop();
    return 0;
}
