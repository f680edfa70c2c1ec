/*
 * Stacks a person reads (docs/REPORT.md, "Stacks"): which frames the table
 * of analyzer/report/frame_class.c folds, for the binaries the simulated
 * GPU cannot run (PyTorch's libc10_cuda.so with mangled names, a runtime
 * linked statically, libcudart.so).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "frame_class.h"

/* ---- the table --------------------------------------------------------- */

struct case_frame {
    const char *function, *file, *module;
    enum vt_frame_class want;
};

/* Classifies frames as one stack, innermost first. */
static void check_stack(const struct case_frame *frames, size_t n)
{
    struct vt_frame_classifier c = {0};
    for (size_t i = 0; i < n; i++) {
        struct vt_frame f = {.function = frames[i].function, .file = frames[i].file,
                             .module = frames[i].module};
        enum vt_frame_class got = vt_frame_classify(&c, &f);
        if (got != frames[i].want)
            fail_msg("frame %zu (%s in %s): class %d, want %d", i,
                     frames[i].function ? frames[i].function : "?",
                     frames[i].module ? frames[i].module : "?", got, frames[i].want);
    }
}

#define CHECK_STACK(...)                                                                       \
    do {                                                                                       \
        const struct case_frame fs[] = {__VA_ARGS__};                                          \
        check_stack(fs, sizeof fs / sizeof fs[0]);                                             \
    } while (0)

static void test_pytorch(void **state)
{
    (void)state;
    /* torch.empty(..., device="cuda") from Python, PyTorch without debug
     * info: mangled names from the symbol table. */
    CHECK_STACK(
        {"cudaMalloc", NULL, "libcudart.so.12", VT_FRAME_RUNTIME},
        {"_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEimP11CUstream_st",
         NULL, "libc10_cuda.so", VT_FRAME_ALLOCATOR},
        {"_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvimP11CUstream_st",
         NULL, "libc10_cuda.so", VT_FRAME_ALLOCATOR},
        {"_ZN2at6native10empty_cudaEN3c108ArrayRefIlEE", NULL, "libtorch_cuda.so", VT_FRAME_OWN},
        {"_PyEval_EvalFrameDefault", NULL, "libpython3.11.so.1.0", VT_FRAME_OWN},
        {"forward", "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", "python",
         VT_FRAME_FRAMEWORK},
        {"_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "python",
         VT_FRAME_FRAMEWORK},
        {"forward", "/home/me/model.py", "python", VT_FRAME_OWN},
        {"main", "/home/me/torchvision_like/train.py", "python", VT_FRAME_OWN});
    /* The allocator with DWARF names, in any binary. */
    CHECK_STACK({"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                 "CUDACachingAllocator.cpp", "libtorch_cuda.so", VT_FRAME_ALLOCATOR});
}

static void test_static_runtime(void **state)
{
    (void)state;
    /* nvcc links the runtime statically by default: its internals and its
     * public entry are in the program's own binary. */
    CHECK_STACK({"_ZN6cudart21cudaApiMallocInternalEPPvm", NULL, "train", VT_FRAME_RUNTIME},
                {"__cudart1123", NULL, "train", VT_FRAME_RUNTIME},
                {"cudaMalloc", NULL, "train", VT_FRAME_RUNTIME},
                {"alloc_weights", "train.cu", "train", VT_FRAME_OWN},
                {"cudaHelperInit", "train.cu", "train", VT_FRAME_OWN},
                {"main", "train.cu", "train", VT_FRAME_OWN},
                {"__libc_start_call_main", "libc_start_call_main.h", "libc.so.6", VT_FRAME_STARTUP},
                {"__libc_start_main_alias_2", NULL, "libc.so.6", VT_FRAME_STARTUP},
                {"_start", NULL, "train", VT_FRAME_STARTUP});
    /* A program's own cuda* wrapper over the shared runtime is its own. */
    CHECK_STACK({"cudaMalloc", NULL, "libcudart.so.12", VT_FRAME_RUNTIME},
                {"cudaCheckedMalloc", "util.c", "train", VT_FRAME_OWN},
                {"cudaMallocManaged", "util.c", "train", VT_FRAME_OWN});
}

static void test_others(void **state)
{
    (void)state;
    CHECK_STACK({"cuMemAlloc_v2", NULL, "libcuda.so.1", VT_FRAME_DRIVER},
                {"vt_body_cuMemAlloc_v2", "driver_wrappers.c", "libvramtrace.so", VT_FRAME_TRACER},
                {"malloc_async", "simcudart_api.c", "libsimcudart.so", VT_FRAME_RUNTIME},
                {"cudaMalloc", "../tests/simdriver/runtime/simcudart_api.c", "libprivrt_user.so",
                 VT_FRAME_RUNTIME},
                {"privrt_user_alloc", "privrt_user.c", "libprivrt_user.so", VT_FRAME_OWN},
                {"qsort_r", "msort.c", "libc.so.6", VT_FRAME_OWN},
                {"start_thread", "pthread_create.c", "libc.so.6", VT_FRAME_STARTUP},
                {"__clone3", "clone3.S", "libc.so.6", VT_FRAME_STARTUP});
    /* The same names outside libc are the program's. */
    CHECK_STACK({"start_thread", "pool.c", "server", VT_FRAME_OWN},
                {"clone_model", "model.c", "server", VT_FRAME_OWN},
                {NULL, NULL, NULL, VT_FRAME_OWN});
    assert_string_equal(vt_frame_class_name(VT_FRAME_RUNTIME), "cuda runtime");
    assert_string_equal(vt_frame_class_name(VT_FRAME_STARTUP), "libc start-up");
    assert_null(vt_frame_class_name(VT_FRAME_OWN));
}

static void check_short(const char *function, const char *module, const char *want)
{
    char buf[128];
    struct vt_frame f = {.function = function, .module = module};
    assert_string_equal(vt_frame_short_name(&f, buf, sizeof buf), want);
}

static void test_short_names(void **state)
{
    (void)state;
    check_short("cudaMallocAsync", "libcudart.so.12", "cudaMallocAsync");
    check_short("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, "
                "int, unsigned long, CUstream_st*)",
                "libc10_cuda.so", "NativeCachingAllocator::malloc");
    check_short("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvimP11"
                "CUstream_st",
                "libc10_cuda.so", "NativeCachingAllocator::malloc");
    check_short("_ZNK6cudart7globals6deviceEv", "train", "globals::device");
    check_short("_ZZN3c104cuda20CUDACachingAllocator4initEiENKUlvE_clEv", "libc10_cuda.so",
                "CUDACachingAllocator::init");
    check_short("_Z10cudaHelperv", "train", "cudaHelper");
    check_short("_ZSt4moveIRiEONSt16remove_referenceIT_E4typeEOS2_", "libx.so", "libx.so");
    check_short("_ZN99short", "liby.so", "liby.so"); /* a length past the end */
    check_short(NULL, "libcudart.so.12", "libcudart.so.12");
    check_short(NULL, NULL, "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch),       cmocka_unit_test(test_static_runtime),
        cmocka_unit_test(test_others),        cmocka_unit_test(test_short_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
