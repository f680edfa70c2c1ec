/* Scenario 7 (a trace cut in the middle): allocations in batches with
 * pauses longer than the tracer's flush interval (the test sets
 * VRAMTRACE_FLUSH_MS=10), so the trace holds several chunks and a cut keeps
 * a readable prefix. The memory grows batch after batch: a prefix has a
 * lower peak than the whole run. "batch N" on stdout: batch N is done.
 *     gold_batches BATCHES */
#include <stdlib.h>
#include <time.h>

#include "gold_client.h"

GOLD_SITE void batch(CUdeviceptr *keep, int b)
{
    CUdeviceptr tmp;
    CHECK_CU(cuMemAlloc(&tmp, (size_t)(b + 1) * 3 * MIB));
    CHECK_CU(cuMemAlloc(keep, (size_t)(b + 1) * MIB + 512));
    CHECK_CU(cuMemFree(tmp));
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    int n = atoi(argv[1]);
    CHECK(n > 0 && n <= 64);
    CUdeviceptr keep[64];
    gold_start();
    for (int b = 0; b < n; b++) {
        batch(&keep[b], b);
        printf("batch %d\n", b);   /* a known point for a test that kills us */
        fflush(stdout);
        struct timespec pause = {0, 40 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    for (int b = 0; b < n; b++)
        CHECK_CU(cuMemFree(keep[b]));
    gold_stop();
    return 0;
}
