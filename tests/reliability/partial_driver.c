/*
 * A "driver" that exports two of the functions the tracer hooks and nothing
 * else: when a program finds one of them with dlsym, the tracer adopts this
 * object as the driver and looks up every other hooked name in it, and
 * those look-ups fail (client_dlerror.c).
 */
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef uint64_t CUdeviceptr;

/* The project builds with -fvisibility=hidden: these are the exports. */
#define EXPORT __attribute__((visibility("default")))

static unsigned char arena[1 << 16];

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (dptr == NULL || bytesize > sizeof arena)
        return 1; /* CUDA_ERROR_INVALID_VALUE */
    *dptr = (CUdeviceptr)(uintptr_t)arena;
    return 0;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr);
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    return dptr == (CUdeviceptr)(uintptr_t)arena ? 0 : 1;
}
