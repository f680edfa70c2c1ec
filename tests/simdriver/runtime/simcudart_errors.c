/* Driver result -> runtime error, and cudaGetErrorString. */
#include "simcudart_internal.h"

#define SIMCUDART_ERROR_MAP(X)                                            \
    X(CUDA_SUCCESS, cudaSuccess, "no error")                              \
    X(CUDA_ERROR_INVALID_VALUE, cudaErrorInvalidValue, "invalid argument") \
    X(CUDA_ERROR_OUT_OF_MEMORY, cudaErrorMemoryAllocation, "out of memory") \
    X(CUDA_ERROR_NOT_INITIALIZED, cudaErrorInitializationError, "initialization error") \
    X(CUDA_ERROR_NO_DEVICE, cudaErrorNoDevice, "no CUDA-capable device is detected") \
    X(CUDA_ERROR_INVALID_DEVICE, cudaErrorInvalidDevice, "invalid device ordinal") \
    X(CUDA_ERROR_INVALID_CONTEXT, cudaErrorDeviceUninitialized, "invalid device context") \
    X(CUDA_ERROR_NOT_FOUND, cudaErrorSymbolNotFound, "named symbol not found") \
    X(CUDA_ERROR_NOT_SUPPORTED, cudaErrorNotSupported, "operation not supported")

cudaError_t simcudart_error_from(CUresult r)
{
    switch (r) {
#define SIMCUDART_MAP_CASE(cu, rt, text) case cu: return rt;
    SIMCUDART_ERROR_MAP(SIMCUDART_MAP_CASE)
#undef SIMCUDART_MAP_CASE
    default: return cudaErrorUnknown;
    }
}

SIMCUDART_API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
#define SIMCUDART_TEXT_CASE(cu, rt, text) case rt: return text;
    SIMCUDART_ERROR_MAP(SIMCUDART_TEXT_CASE)
#undef SIMCUDART_TEXT_CASE
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorUnknown: return "unknown error";
    default: return "unrecognized error code";
    }
}
