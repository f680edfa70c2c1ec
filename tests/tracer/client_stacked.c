/* A -lcuda program under two interposers. argv[1] names the object that
 * must come right after the stacked interposer ("libvramtrace" when the
 * interposer is loaded first, "libcuda" when it is loaded after us). */
#include <cuda.h>

#include "client_util.h"

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    int *calls = dlsym(RTLD_DEFAULT, "stacked_calls");
    void **next = dlsym(RTLD_DEFAULT, "stacked_next");
    int (*malloc_twice)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "stacked_next_malloc_twice");
    CHECK(calls && next && malloc_twice);
    CUcontext ctx;
    CUdeviceptr a = 0, b = 0;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK_CU(cuCtxSetCurrent(ctx));
    CHECK_CU(cuMemAlloc(&a, 1 << 20));
    CHECK_CU(cuMemAlloc(&b, 2 << 20));
    CHECK(*calls == 2);
    CHECK(lives_in(*next, argv[1]));
    CHECK(malloc_twice());
    CHECK_CU(cuMemFree(b));
    CHECK_CU(cuMemFree(a));
    return 0;
}
