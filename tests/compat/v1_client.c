/* The program that made v1_trace.vtrace and v2_trace.vtrace: built and run
 * once under the tracer of commit eed6128 (trace format version 1, as
 * v1_client) and once under that of commit f977377 (format version 2, as
 * v2_client), as README.md tells. It is not built by meson: the committed
 * traces are its fixed output.
 *
 * Three load_weights() allocations stay live throughout; "train" (an NVTX
 * range, opened twice) and "eval" (the vramtrace phase API, opened twice)
 * come and go around them. evaluate() makes the process's peak and holds it
 * for SLEEP_MS (a known duration); grow_cache() asks for more than the
 * device has (run with VTSIM_MEMORY=1GiB) inside the second "eval".
 * Stdout has what the ledger cannot know, one line each:
 *     alloc FUNCTION ADDRESS   (which function made an allocation)
 *     failed FUNCTION RESULT   (the failing call)
 *     push NAME NS / pop NAME NS  (CLOCK_MONOTONIC just before opening /
 *                                  just after closing a phase) */
#include <nvtx3/nvToolsExt.h>
#include <time.h>
#include <unistd.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#include "gold_client.h"

#define SLEEP_MS 100

/* Opens (open != 0) or closes the phase NAME: an NVTX range or one of the
 * vramtrace API. Prints "push NAME NS" just before opening, "pop NAME NS"
 * just after closing (CLOCK_MONOTONIC, the ledger's clock). */
static void phase(const char *name, int nvtx, int open)
{
    struct timespec ts;
    if (!open && nvtx)
        CHECK(nvtxRangePop() >= 0);
    else if (!open)
        vramtrace_phase_pop();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%s %s %lld%09ld\n", open ? "push" : "pop", name, (long long)ts.tv_sec, ts.tv_nsec);
    if (open && nvtx)
        CHECK(nvtxRangePushA(name) >= 0);
    else if (open)
        vramtrace_phase_push(name);
}

GOLD_SITE CUdeviceptr load_weights(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    gold_note_alloc(__func__, p);
    return p;
}

GOLD_SITE CUdeviceptr forward(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    gold_note_alloc(__func__, p);
    return p;
}

GOLD_SITE CUdeviceptr evaluate(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    gold_note_alloc(__func__, p);
    return p;
}

GOLD_SITE CUresult grow_cache(CUdeviceptr *p, size_t mib)
{
    CUresult rc = cuMemAlloc(p, mib * MIB);
    printf("failed %s %d\n", __func__, (int)rc);
    return rc;
}

int main(void)
{
    CUdeviceptr weights[3], cache = 0;
    gold_start();
    for (int i = 0; i < 3; i++)
        weights[i] = load_weights(16);

    phase("train", 1, 1);
    CUdeviceptr act = forward(32), out = forward(8);
    CHECK_CU(cuMemFree(act));
    phase("train", 1, 0);
    CHECK_CU(cuMemFree(out));

    phase("eval", 0, 1);
    CUdeviceptr big = evaluate(64);   /* the process's peak */
    usleep(SLEEP_MS * 1000);
    CHECK_CU(cuMemFree(big));
    phase("eval", 0, 0);

    phase("train", 1, 1);
    CHECK_CU(cuMemFree(forward(24)));
    phase("train", 1, 0);

    phase("eval", 0, 1);
    CHECK(grow_cache(&cache, 2048) == CUDA_ERROR_OUT_OF_MEMORY);
    phase("eval", 0, 0);

    for (int i = 0; i < 3; i++)
        CHECK_CU(cuMemFree(weights[i]));
    gold_stop();
    return 0;
}
