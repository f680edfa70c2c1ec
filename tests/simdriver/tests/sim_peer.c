/* A second process on a shared simulated GPU, for test_shared: allocates the
 * bytes given, prints "held <free-after> <uuid-hex>" (or "oom"), then waits
 * until its stdin closes (or it is killed). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    unsigned long long bytes = strtoull(argv[1], NULL, 0);
    CUcontext ctx;
    CUdeviceptr p;
    CUuuid uuid;
    size_t free_bytes = 0;
    if (cuInit(0) || cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx) || cuDeviceGetUuid(&uuid, 0))
        return 3;
    if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) {
        printf("oom\n");
    } else {
        cuMemGetInfo(&free_bytes, NULL);
        printf("held %zu ", free_bytes);
        for (int i = 0; i < 16; i++)
            printf("%02x", (unsigned char)uuid.bytes[i]);
        printf("\n");
    }
    fflush(stdout);
    while (getchar() != EOF)
        ;
    return 0;
}
