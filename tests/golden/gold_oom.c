/* Scenarios 2 and 3: an allocation that fails.
 *     gold_oom HELD_MIB REQUEST_MIB
 * keep_model() holds HELD_MIB (in 64 MiB pieces, the last one smaller),
 * then allocate_batch() asks for REQUEST_MIB, which must fail with
 * CUDA_ERROR_OUT_OF_MEMORY (whether the device is full of this process's
 * memory or of another's depends on how the test set the device up). */
#include <stdlib.h>

#include "gold_client.h"

#define PIECE_MIB 64

GOLD_SITE int keep_model(CUdeviceptr *out, size_t mib)
{
    int n = 0;
    for (size_t left = mib; left > 0; n++) {
        size_t piece = left < PIECE_MIB ? left : PIECE_MIB;
        CHECK_CU(cuMemAlloc(&out[n], piece * MIB));
        gold_note_alloc(__func__, out[n]);
        left -= piece;
    }
    return n;
}

GOLD_SITE CUresult allocate_batch(CUdeviceptr *out, size_t mib)
{
    CUresult rc = cuMemAlloc(out, mib * MIB);
    printf("failed %s %d\n", __func__, (int)rc);
    return rc;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    size_t held = strtoull(argv[1], NULL, 10), request = strtoull(argv[2], NULL, 10);
    CUdeviceptr *model = calloc(held / PIECE_MIB + 2, sizeof *model), batch = 0;
    CHECK(model);
    gold_start();
    int n = keep_model(model, held);
    CHECK(allocate_batch(&batch, request) == CUDA_ERROR_OUT_OF_MEMORY);
    for (int i = 0; i < n; i++)
        CHECK_CU(cuMemFree(model[i]));
    free(model);
    gold_stop();
    return 0;
}
