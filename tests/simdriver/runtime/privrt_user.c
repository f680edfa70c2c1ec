/* A library with its own private copy of the runtime, like NCCL or cuBLAS:
 * it imports no cuda* symbol and exports only these functions. */
#include "simcudart_internal.h"

#define PRIVRT_API __attribute__((visibility("default")))

PRIVRT_API int privrt_user_alloc(size_t size, void **ptr)
{
    return (int)cudaMalloc(ptr, size);
}

PRIVRT_API int privrt_user_free(void *ptr)
{
    return (int)cudaFree(ptr);
}

PRIVRT_API int privrt_user_mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
    return (int)cudaMemGetInfo(free_bytes, total_bytes);
}
