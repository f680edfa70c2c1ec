/* Scenario 4: nested phases. "outer" is an NVTX range (NVTX 3 headers, the
 * tracer as injection library), "inner" (opened twice) and "eval" use the
 * public vramtrace API. Each boundary is printed as
 *     push NAME NS   (CLOCK_MONOTONIC read just before opening)
 *     pop NAME NS    (read just after closing)
 * so that the checker can cut the driver's ledger, whose lines carry the
 * same clock, into phase windows. The largest total of all is outside any
 * phase; "eval" peaks at the total it opened with. */
#include <nvtx3/nvToolsExt.h>
#include <time.h>

#define VRAMTRACE_DYNAMIC
#include "vramtrace/vramtrace.h"

#include "gold_client.h"

static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void push(const char *name, int nvtx)
{
    printf("push %s %llu\n", name, now_ns());
    if (nvtx)
        CHECK(nvtxRangePushA(name) >= 0);
    else
        vramtrace_phase_push(name);
}

static void pop(const char *name, int nvtx)
{
    if (nvtx)
        CHECK(nvtxRangePop() >= 0);
    else
        vramtrace_phase_pop();
    printf("pop %s %llu\n", name, now_ns());
}

static CUdeviceptr alloc_mib(size_t mib)
{
    CUdeviceptr p;
    CHECK_CU(cuMemAlloc(&p, mib * MIB));
    return p;
}

int main(void)
{
    gold_start();
    CUdeviceptr base = alloc_mib(10);
    push("outer", 1);
    CUdeviceptr a20 = alloc_mib(20);
    push("inner", 0);
    CUdeviceptr a50 = alloc_mib(50), a5 = alloc_mib(5);
    CHECK_CU(cuMemFree(a50));
    pop("inner", 0);
    CUdeviceptr a60 = alloc_mib(60);   /* outer's peak, after inner closed */
    CHECK_CU(cuMemFree(a60));
    push("inner", 0);
    CUdeviceptr a15 = alloc_mib(15);
    pop("inner", 0);
    CHECK_CU(cuMemFree(a15));
    CHECK_CU(cuMemFree(a20));
    CHECK_CU(cuMemFree(a5));
    pop("outer", 1);
    CHECK_CU(cuMemFree(alloc_mib(200)));   /* the process's peak, in no phase */
    CUdeviceptr a40 = alloc_mib(40);
    push("eval", 0);
    CHECK_CU(cuMemFree(a40));
    CUdeviceptr a8 = alloc_mib(8);
    pop("eval", 0);
    CHECK_CU(cuMemFree(a8));
    CHECK_CU(cuMemFree(base));
    gold_stop();
    return 0;
}
