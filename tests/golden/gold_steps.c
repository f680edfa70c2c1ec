/* A process driven step by step from stdin, so that a test can interleave
 * several of them on one simulated GPU in a known order (scenario 5).
 * Commands, one a line:
 *     alloc MIB   -> allocates, answers "ok"
 *     free MIB    -> frees the oldest live allocation of that size, "ok"
 * It exits at the end of its input. */
#include <stdlib.h>
#include <string.h>

#include "gold_client.h"

#define MAX_LIVE 64

int main(void)
{
    CUdeviceptr live[MAX_LIVE];
    size_t size[MAX_LIVE];
    int n = 0;
    char line[128];
    gold_start();
    while (fgets(line, sizeof line, stdin)) {
        char op[16];
        size_t mib;
        CHECK(sscanf(line, "%15s %zu", op, &mib) == 2);
        if (!strcmp(op, "alloc")) {
            CHECK(n < MAX_LIVE);
            CHECK_CU(cuMemAlloc(&live[n], mib * MIB));
            size[n++] = mib;
        } else {
            int i = 0;
            while (i < n && size[i] != mib)
                i++;
            CHECK(i < n);
            CHECK_CU(cuMemFree(live[i]));
            memmove(live + i, live + i + 1, (size_t)(n - i - 1) * sizeof *live);
            memmove(size + i, size + i + 1, (size_t)(n - i - 1) * sizeof *size);
            n--;
        }
        printf("ok\n");
        fflush(stdout);
    }
    while (n > 0)
        CHECK_CU(cuMemFree(live[--n]));
    gold_stop();
    return 0;
}
