/*
 * Stacks a person reads (docs/user/REPORT.md, "Stacks"): which frames the table
 * of analyzer/report/sites/frame_class.c folds, for the binaries the simulated
 * GPU cannot run (PyTorch's libc10_cuda.so with mangled names, a runtime
 * linked statically, libcudart.so), and how analyzer/report/sites/stack_line.c
 * fits lines to a width. tests/examples/check_stacks.py checks both on
 * real runs of the examples.
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
#include "stack_line.h"

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
        {"_PyEval_EvalFrameDefault", NULL, "libpython3.11.so.1.0", VT_FRAME_INTERPRETER},
        {"forward", "/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", "python",
         VT_FRAME_FRAMEWORK},
        {"_call_impl", "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", "python",
         VT_FRAME_FRAMEWORK},
        {"forward", "/home/me/model.py", "python", VT_FRAME_OWN},
        {"main", "/home/me/torchvision_like/train.py", "python", VT_FRAME_OWN});
    /* Where else PyTorch's Python lives, and a user's directory that is
     * only named torch. */
    CHECK_STACK(
        {"_call_impl", "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", "python",
         VT_FRAME_FRAMEWORK},
        {"_call_impl", "/home/me/src/pytorch/torch/nn/modules/module.py", "python",
         VT_FRAME_FRAMEWORK},
        {"_call_impl", "C:\\Python311\\Lib\\site-packages\\torch\\nn\\modules\\module.py",
         "python", VT_FRAME_FRAMEWORK},
        {"forward", "/home/me/torch/model.py", "python", VT_FRAME_OWN},
        {"main", "/data/torch/experiments/train.py", "python", VT_FRAME_OWN});
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
    assert_string_equal(vt_frame_class_name(VT_FRAME_FFI), "foreign-function call");
    assert_string_equal(vt_frame_class_name(VT_FRAME_INTERPRETER), "python interpreter");
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

/* ---- fitting lines ----------------------------------------------------- */

struct frame_in {
    const char *name, *file;
    uint64_t line;
    bool keep_file;
};

/* Text written through a fitting stream of width columns: prefix, a stack
 * of the frames (hidden more, then tag), suffix, newline; per line. */
struct line_in {
    const char *prefix;
    const struct frame_in *frames;
    size_t n, hidden;
    const char *tag, *suffix;
};

static char *fitted(size_t width, const struct line_in *lines, size_t n, bool fit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    FILE *out = fit ? vt_stack_lines_open(mem, width) : mem;
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        struct vt_stack_writer w;
        fputs(lines[i].prefix, out);
        vt_stack_begin(&w, out, fit);
        for (size_t k = 0; k < lines[i].n; k++)
            vt_stack_frame(&w, lines[i].frames[k].name, lines[i].frames[k].file,
                           lines[i].frames[k].line, lines[i].frames[k].keep_file);
        vt_stack_end(&w, lines[i].hidden, lines[i].tag);
        fprintf(out, "%s\n", lines[i].suffix ? lines[i].suffix : "");
    }
    if (fit)
        assert_int_equal(vt_stack_lines_close(out), 0);
    fclose(mem);
    return buf;
}

static const struct frame_in demo[] = {
    {"device_alloc", "/src/train_eval_phases.c", 60, false},
    {"grow_kv_cache", "/src/train_eval_phases.c", 175, false},
    {"eval_generate", "/src/train_eval_phases.c", 187, false},
    {"main", "/src/train_eval_phases.c", 226, false},
};

#define PREFIX "      6.00 GiB     384  "
#define TAG "  via cudaMallocAsync"

static void check_fit(size_t width, size_t hidden, const char *suffix, const char *want)
{
    struct line_in l = {PREFIX, demo, 4, hidden, TAG, suffix};
    char *got = fitted(width, &l, 1, true);
    assert_string_equal(got, want);
    free(got);
}

static void test_fit(void **state)
{
    (void)state;
    /* Room for all: as written. */
    check_fit(0, 0, NULL,
              PREFIX "device_alloc (train_eval_phases.c:60) <- grow_kv_cache (train_eval_phases.c:175)"
                     " <- eval_generate (train_eval_phases.c:187) <- main (train_eval_phases.c:226)" TAG
                     "\n");
    /* Without files, more frames fit: every one here. */
    check_fit(160, 0, NULL,
              PREFIX "device_alloc:60 <- grow_kv_cache:175 <- eval_generate:187 <- main:226" TAG "\n");
    /* A pipe's 100 columns: dropped whole, outermost first, counted. */
    check_fit(100, 0, NULL, PREFIX "device_alloc:60 <- grow_kv_cache:175 <- ... 2 more" TAG "\n");
    /* Frames left out before (--frames) count in the marker. */
    check_fit(100, 3, NULL, PREFIX "device_alloc:60 <- grow_kv_cache:175 <- ... 5 more" TAG "\n");
    /* What follows the stack takes its room. */
    check_fit(100, 0, "  [thread pt_loader]",
              PREFIX "device_alloc:60 <- ... 3 more" TAG "  [thread pt_loader]\n");
    /* Not even the first with its line: its name alone, longer than the width. */
    check_fit(40, 0, NULL, PREFIX "device_alloc <- ... 3 more" TAG "\n");
    /* Files are kept where leaving them out shows no more frames. */
    struct line_in one = {PREFIX, demo, 1, 0, TAG, NULL};
    char *got = fitted(24 + 37 + 21, &one, 1, true);
    assert_string_equal(got, PREFIX "device_alloc (train_eval_phases.c:60)" TAG "\n");
    free(got);
    one.hidden = 1;
    got = fitted(24 + 37 + 21, &one, 1, true);
    assert_string_equal(got, PREFIX "device_alloc:60 <- ... 1 more" TAG "\n");
    free(got);
}

static void test_fit_block(void **state)
{
    (void)state;
    /* Lines in a row share a form: the short one where any needs it. */
    static const struct frame_in two[] = {{"a", "/x/f.c", 1, false}, {"b", "/x/f.c", 2, false}};
    struct line_in lines[] = {
        {"  ", two, 2, 0, TAG, NULL},
        {"  ", demo, 4, 0, TAG, NULL},
    };
    char *got = fitted(110, lines, 2, true);
    assert_string_equal(got, "  a:1 <- b:2" TAG "\n"
                             "  device_alloc:60 <- grow_kv_cache:175 <- eval_generate:187 <- main:226" TAG
                             "\n");
    free(got);
    /* A line without a stack ends the row: the next keeps its files. */
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    FILE *out = vt_stack_lines_open(mem, 110);
    struct vt_stack_writer w;
    for (int i = 0; i < 2; i++) {
        fputs("  ", out);
        vt_stack_begin(&w, out, true);
        for (size_t k = 0; k < (i ? 2u : 4u); k++)
            vt_stack_frame(&w, i ? two[k].name : demo[k].name, i ? two[k].file : demo[k].file,
                           i ? two[k].line : demo[k].line, false);
        vt_stack_end(&w, 0, NULL);
        fputs(i ? "" : "\nphases:\n", out);
    }
    assert_int_equal(vt_stack_lines_close(out), 0); /* a last line without newline */
    fclose(mem);
    assert_string_equal(buf, "  device_alloc:60 <- grow_kv_cache:175 <- eval_generate:187 <- main:226\n"
                             "phases:\n"
                             "  a (f.c:1) <- b (f.c:2)");
    free(buf);
}

/* Lines that would read alike for different stacks show where the stacks
 * part: the frame cut away is the one that tells them apart. */
static void test_fit_parting(void **state)
{
    (void)state;
    static const struct frame_in a[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"from_pretrained", "/s/ds.c", 63, false},
                                        {"main", "/s/ds.c", 104, false}};
    static const struct frame_in b[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"create_fp32_partitions", "/s/ds.c", 70, false},
                                        {"main", "/s/ds.c", 106, false}};
    static const struct frame_in c[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"create_buckets", "/s/ds.c", 81, false},
                                        {"main", "/s/ds.c", 108, false}};
    /* the same function at another line: its line tells them apart */
    static const struct frame_in d[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"create_buckets", "/s/ds.c", 82, false},
                                        {"main", "/s/ds.c", 108, false}};
    struct line_in lines[] = {
        {PREFIX, a, 3, 0, TAG, NULL},
        {PREFIX, b, 3, 0, TAG, NULL},
        {PREFIX, c, 3, 0, TAG, NULL},
        {PREFIX, d, 3, 0, TAG, NULL},
        {PREFIX, c, 3, 0, TAG, NULL}, /* the same stack again: no parting from its twin */
    };
    /* 70 columns: one frame fits, "tensor:47 <- ... 2 more" for all; the
     * parting frame is shown, the first by name, the line longer than the
     * width (the frames that tell the sites apart are) */
    char *got = fitted(70, lines, 5, true);
    assert_string_equal(got,
                        PREFIX "tensor <- from_pretrained:63 <- ... 1 more" TAG "\n"
                        PREFIX "tensor <- create_fp32_partitions:70 <- ... 1 more" TAG "\n"
                        PREFIX "tensor <- create_buckets:81 <- ... 1 more" TAG "\n"
                        PREFIX "tensor <- create_buckets:82 <- ... 1 more" TAG "\n"
                        PREFIX "tensor <- create_buckets:81 <- ... 1 more" TAG "\n");
    free(got);
    /* Lines that do not read alike are not touched. */
    got = fitted(100, lines, 2, true);
    assert_string_equal(got, PREFIX "tensor:47 <- from_pretrained:63 <- main:104" TAG "\n"
                             PREFIX "tensor:47 <- create_fp32_partitions:70 <- main:106" TAG "\n");
    free(got);
    /* Only the file tells the frames apart: it is shown. */
    static const struct frame_in e[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"helper", "/s/a.c", 5, false},
                                        {"main", "/s/ds.c", 9, false}};
    static const struct frame_in f[] = {{"tensor", "/s/ds.c", 47, false},
                                        {"helper", "/s/b.c", 5, false},
                                        {"main", "/s/ds.c", 9, false}};
    struct line_in files[] = {{PREFIX, e, 3, 0, TAG, NULL}, {PREFIX, f, 3, 0, TAG, NULL}};
    got = fitted(70, files, 2, true);
    assert_string_equal(got, PREFIX "tensor <- helper (a.c:5) <- ... 1 more" TAG "\n"
                             PREFIX "tensor <- helper (b.c:5) <- ... 1 more" TAG "\n");
    free(got);
    /* Rows with other figures before their stacks (diff's gone and new
     * rows) name two sites alike all the same: they part too, here where
     * the first frame's line was all that told them apart (a line moved). */
    static const struct frame_in moved[] = {{"device_alloc", "/src/train_eval_phases.c", 61, false},
                                            {"grow_kv_cache", "/src/train_eval_phases.c", 176, false},
                                            {"eval_generate", "/src/train_eval_phases.c", 188, false},
                                            {"main", "/src/train_eval_phases.c", 227, false}};
    struct line_in rows[] = {{"  -6.00 GiB  gone  ", demo, 4, 0, TAG, NULL},
                             {"  +6.00 GiB  new   ", moved, 4, 0, TAG, NULL}};
    got = fitted(60, rows, 2, true);
    assert_string_equal(got, "  -6.00 GiB  gone  device_alloc:60 <- ... 3 more" TAG "\n"
                             "  +6.00 GiB  new   device_alloc:61 <- ... 3 more" TAG "\n");
    free(got);
    /* Stacks that fit whole are not touched. */
    got = fitted(0, lines, 2, true);
    assert_string_equal(got, PREFIX "tensor (ds.c:47) <- from_pretrained (ds.c:63) <- main (ds.c:104)" TAG
                             "\n" PREFIX "tensor (ds.c:47) <- create_fp32_partitions (ds.c:70) <- main "
                             "(ds.c:106)" TAG "\n");
    free(got);
}

static void test_python_and_hostile(void **state)
{
    (void)state;
    /* Python frames keep their file: many functions are "forward". */
    static const struct frame_in py[] = {
        {"forward", "/m/modeling_llama.py", 330, true},
        {"forward", "/m/select_n.py", 115, true},
    };
    struct line_in l = {"  ", py, 2, 0, "  via cudaMalloc", NULL};
    char *got = fitted(70, &l, 1, true);
    assert_string_equal(got, "  forward (modeling_llama.py:330) <- ... 1 more  via cudaMalloc\n");
    free(got);
    /* The marks cannot come from a trace: control characters are '?'. */
    static const struct frame_in bad[] = {{"f\x1c\x1d\x1e\x1f\n", "/x/g\x1a.c", 3, false},
                                          {"caf\xc3\xa9", "\\\\host\\src\\w.c", 4, false}};
    struct line_in b = {"x ", bad, 2, 0, "  via c\x1f" "d", NULL};
    got = fitted(0, &b, 1, true);
    assert_string_equal(got, "x f????? (g?.c:3) <- caf\xc3\xa9 (w.c:4)  via c?d\n");
    free(got);
    /* Unfitted (--full-stacks): as written, on any stream. */
    got = fitted(0, &b, 1, false);
    assert_string_equal(got, "x f????? (g?.c:3) <- caf\xc3\xa9 (w.c:4)  via c?d\n");
    free(got);
    /* UTF-8 counts one column a character: "café:4" fits in 6 columns. */
    struct line_in u = {"", bad + 1, 1, 0, NULL, NULL};
    got = fitted(6, &u, 1, true);
    assert_string_equal(got, "caf\xc3\xa9:4\n");
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pytorch),       cmocka_unit_test(test_static_runtime),
        cmocka_unit_test(test_others),        cmocka_unit_test(test_short_names),
        cmocka_unit_test(test_fit),           cmocka_unit_test(test_fit_block),
        cmocka_unit_test(test_fit_parting),
        cmocka_unit_test(test_python_and_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
