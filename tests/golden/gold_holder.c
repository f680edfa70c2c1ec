/* Another process on the same simulated GPU (VTSIM_SHARED): holds MIB of
 * device memory, says "held" on stdout, and keeps it until its stdin
 * closes.
 *     gold_holder MIB */
#include <stdlib.h>
#include <unistd.h>

#include "gold_client.h"

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    CUdeviceptr p;
    gold_start();
    CHECK_CU(cuMemAlloc(&p, strtoull(argv[1], NULL, 10) * MIB));
    printf("held\n");
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0)
        ;
    CHECK_CU(cuMemFree(p));
    gold_stop();
    return 0;
}
