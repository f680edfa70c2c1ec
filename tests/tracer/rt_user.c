/* A library that uses a CUDA runtime it links itself, like a Python
 * extension module linked to libcudart.so.12 or .13: the client dlopens it
 * RTLD_LOCAL, so its runtime is not in the global scope. Built twice, each
 * copy linked to its own runtime object (client_rt_scopes.c). */
#include <stddef.h>

#include <cuda_runtime_api.h>

#define RT_USER_API __attribute__((visibility("default")))

/* Not hooked by the tracer: always reaches the runtime the loader bound. */
RT_USER_API int rt_user_set_device(int device)
{
    return (int)cudaSetDevice(device);
}

/* Hooked (label wrappers): must reach the same runtime as cudaSetDevice.
 * Like real callers these look at the result after the call, so the call
 * is a real call, not a tail jump (docs/internals/HOOKS.md: a tail jump hides the
 * caller from the tracer). */
RT_USER_API int rt_user_alloc(void **ptr, size_t size)
{
    cudaError_t e = cudaMalloc(ptr, size);
    if (e != cudaSuccess)
        *ptr = NULL;
    return (int)e;
}

RT_USER_API int rt_user_free(void *ptr)
{
    cudaError_t e = cudaFree(ptr);
    return e == cudaSuccess ? 0 : -(int)e; /* not a tail call either */
}
