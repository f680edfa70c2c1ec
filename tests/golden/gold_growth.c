/* What grows step over step (docs/user/REPORT.md, "Growth across openings").
 * Ten steps of a phase "step", each with 256 MiB of activations it frees:
 *     gold_growth leak     each step also keeps 64 MiB (keep_step_output)
 *     gold_growth steady   the first four steps keep 32 MiB each (a warm-up
 *                          that rises at three closings), the rest nothing
 * Boundaries are printed as in gold_phases.c ("push step NS", "pop step
 * NS") and allocations as "alloc FUNCTION ADDRESS", so that the checker
 * cuts the ledger at each closing. */
#include <string.h>
#include <time.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#include "gold_client.h"

#define STEPS 10

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static GOLD_SITE CUdeviceptr activations(void)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, 256 * MIB));
    gold_note_alloc("activations", p);
    return p;
}

static GOLD_SITE CUdeviceptr keep_step_output(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    gold_note_alloc("keep_step_output", p);
    return p;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2 && (!strcmp(argv[1], "leak") || !strcmp(argv[1], "steady")));
    int leak = !strcmp(argv[1], "leak");
    CUdeviceptr kept[STEPS];
    int nkept = 0;
    gold_start();
    for (int step = 0; step < STEPS; step++) {
        printf("push step %llu\n", now_ns());
        vramtrace_phase_push("step");
        CUdeviceptr act = activations();
        if (leak)
            kept[nkept++] = keep_step_output(64);
        else if (step < 4)
            kept[nkept++] = keep_step_output(32);
        CHECK_CU(cuMemFree(act));
        vramtrace_phase_pop();
        printf("pop step %llu\n", now_ns());
    }
    while (nkept > 0)
        CHECK_CU(cuMemFree(kept[--nkept]));
    gold_stop();
    return 0;
}
