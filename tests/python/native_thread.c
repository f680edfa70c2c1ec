/* For py_client.py: device memory allocated on a thread of our own that
 * never ran Python (like PyTorch's pt_autograd_* threads): its stack must
 * stay native; and allocated by native code that Python called (like
 * PyTorch's C++ under a module's forward): the text report shows that
 * stack's Python frames, not this library's. */
#include <pthread.h>
#include <stddef.h>

#include <cuda_runtime_api.h>

struct job {
    size_t bytes;
    void *ptr;
};

static __attribute__((noinline)) void *vtpy_native_thread_main(void *arg)
{
    struct job *j = arg;
    if (cudaMalloc(&j->ptr, j->bytes) != cudaSuccess)
        j->ptr = NULL;
    return NULL;
}

__attribute__((visibility("default"))) void *vtpy_alloc_on_native_thread(size_t bytes)
{
    struct job j = {bytes, NULL};
    pthread_t t;
    if (pthread_create(&t, NULL, vtpy_native_thread_main, &j) != 0)
        return NULL;
    pthread_join(t, NULL);
    return j.ptr;
}

__attribute__((visibility("default"), noinline)) void *vtpy_alloc_from_python(size_t bytes)
{
    void *ptr = NULL;
    if (cudaMalloc(&ptr, bytes) != cudaSuccess)
        return NULL;
    return ptr;
}
