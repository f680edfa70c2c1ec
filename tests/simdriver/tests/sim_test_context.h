/* For the tests that link the simulated driver (-lcuda): a cmocka group
 * setup that initialises the driver and makes device 0's primary context
 * current. Inline, so sim_test.c stays free of driver symbols for the tests
 * that reach the driver only through a runtime. */
#ifndef SIM_TEST_CONTEXT_H
#define SIM_TEST_CONTEXT_H

#include <cuda.h>

static inline int simtest_primary_context(void **state)
{
    (void)state;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
        return -1;
    return cuCtxSetCurrent(ctx) == CUDA_SUCCESS ? 0 : -1;
}

#endif
