/*
 * Which runtime does a label wrapper call? The one the caller would have
 * bound to without the tracer (docs/internals/HOOKS.md, runtime entry points).
 *
 *   client_rt_scopes local  LIB_A LIB_B
 *     LIB_A and LIB_B (rt_user.c, each linked to its own copy of the
 *     simulated runtime) are dlopen'ed RTLD_LOCAL: neither runtime is in
 *     the global scope. Each library selects a device of its own through
 *     its runtime (cudaSetDevice, not hooked); cudaMalloc through each must
 *     succeed and land on that library's device - it reached its own copy.
 *   client_rt_scopes global LIB_A RUNTIME_B
 *     RUNTIME_B (another copy) is loaded RTLD_GLOBAL first, then LIB_A
 *     RTLD_LOCAL: the loader binds LIB_A's runtime calls to the GLOBAL copy
 *     (global scope before local), so its cudaMalloc must land where its
 *     cudaSetDevice went (LIB_A's own copy would put it on device 0).
 *
 * The device of each pointer is the simulated driver's answer. The same
 * checks hold without the tracer (meson test *_untraced): they describe
 * the loader's behaviour, which the tracer must not change.
 */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>

#include "client_util.h"

typedef int (*set_device_fn)(int);
typedef int (*alloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);

struct rt_user {
    void *handle;
    set_device_fn set_device;
    alloc_fn alloc;
    free_fn free;
};

static struct rt_user open_user(const char *path)
{
    struct rt_user u;
    u.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!u.handle)
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    CHECK(u.handle);
    u.set_device = (set_device_fn)dlsym(u.handle, "rt_user_set_device");
    u.alloc = (alloc_fn)dlsym(u.handle, "rt_user_alloc");
    u.free = (free_fn)dlsym(u.handle, "rt_user_free");
    CHECK(u.set_device && u.alloc && u.free);
    return u;
}

/* The driver's answer: which device holds ptr. */
static int device_of(void *ptr)
{
    int dev = -1;
    CHECK_CU(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                   (CUdeviceptr)(uintptr_t)ptr));
    return dev;
}

static void *alloc_on(struct rt_user *u, size_t size, int want_device, const char *who)
{
    void *p = NULL;
    int rc = u->alloc(&p, size);
    if (rc != 0)
        fprintf(stderr, "%s: cudaMalloc returned %d\n", who, rc);
    CHECK(rc == 0 && p);
    int dev = device_of(p);
    if (dev != want_device)
        fprintf(stderr, "%s: allocation on device %d, expected %d\n", who, dev, want_device);
    CHECK(dev == want_device);
    printf("%s: %zu bytes on device %d\n", who, size, dev);
    return p;
}

static int mode_local(const char *lib_a, const char *lib_b)
{
    struct rt_user a = open_user(lib_a), b = open_user(lib_b);
    CHECK(a.set_device(1) == 0);
    CHECK(b.set_device(2) == 0);
    void *pa = alloc_on(&a, 1 << 20, 1, "a");
    void *pb = alloc_on(&b, 2 << 20, 2, "b");
    void *pa2 = alloc_on(&a, 3 << 20, 1, "a");
    CHECK(a.free(pa) == 0);
    CHECK(b.free(pb) == 0);
    CHECK(a.free(pa2) == 0);
    return 0;
}

static int mode_global(const char *lib_a, const char *runtime_b)
{
    void *global_rt = dlopen(runtime_b, RTLD_NOW | RTLD_GLOBAL);
    if (!global_rt)
        fprintf(stderr, "dlopen %s: %s\n", runtime_b, dlerror());
    CHECK(global_rt);
    struct rt_user a = open_user(lib_a);
    /* binds to the global copy: its device for this thread becomes 2 */
    CHECK(a.set_device(2) == 0);
    void *p = alloc_on(&a, 4 << 20, 2, "a via the global runtime");
    CHECK(a.free(p) == 0);
    return 0;
}

int main(int argc, char **argv)
{
    setenv("VTSIM_DEVICES", "3", 0); /* read by the driver at its first call */
    CHECK(argc == 4);
    if (!strcmp(argv[1], "local"))
        return mode_local(argv[2], argv[3]);
    if (!strcmp(argv[1], "global"))
        return mode_global(argv[2], argv[3]);
    fprintf(stderr, "usage: client_rt_scopes local|global LIB_A LIB_B|RUNTIME_B\n");
    return 2;
}
