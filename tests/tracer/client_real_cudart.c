/* The real CUDA 13 runtime's look-up phase against the simulated driver:
 * it resolves ~440 driver functions through cuGetProcAddress, then stops
 * (the simulated driver has no private export tables, so the call below
 * fails with an error, which is expected). lookup_spy.so, preloaded before
 * libvramtrace.so, logs what the runtime received for each look-up;
 * cudart_lookup_check.py judges it. */
#include "client_util.h"

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(rt);
    int (*get_count)(int *) = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
    CHECK(get_count);
    int count = -1;
    printf("cudaGetDeviceCount %d\n", get_count(&count));
    return 0;
}
