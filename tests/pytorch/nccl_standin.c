/*
 * A stand-in for a communication library that allocates device memory of
 * its own, outside PyTorch's caching allocator, as NCCL does at a
 * communicator's initialisation (its buffers): built as libnccl.so.2 so
 * that the report names it by its module, as it names the real one.
 */
#include <stddef.h>

typedef unsigned long long CUdeviceptr;
int cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytes);

__attribute__((visibility("default"))) int ncclCommInitRank(size_t bytes)
{
    CUdeviceptr p = 0;
    return cuMemAlloc_v2(&p, bytes);
}
