/* Writes the sample traces the CLI test (test_cli.py) runs vramtrace on,
 * and prints the facts the test checks as "key value" lines. The figures
 * are chosen here by hand; the test compares vramtrace's output to them. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1ull << 20)
#define GiB (1ull << 30)

static void scenario(struct tb *b)
{
    tb_init(b);
    tb_standard_header(b, 777, 0x42, 8 * GiB);
    vt_encode_string(&b->enc, "train\n\"step\"", 12); /* a name that needs escaping */
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, 2000, 0, 0x10000000, 100 * MiB, TB_STACK_A);
    vt_encode_range_push(&b->enc, TB_MAIN, 2500, 0, 1);
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, 3000, 0, 0x20000000, 200 * MiB, TB_STACK_B);
    tb_flush(b);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, 4000, 0, 0x10000000);
    tb_alloc(b, VT_KIND_DEVICE, TB_AUTOGRAD, 5000, 0, 0x30000000, 300 * MiB, TB_STACK_C);
    vt_encode_range_pop(&b->enc, TB_MAIN, 5500, 0);
    tb_free_mem(b, VT_KIND_DEVICE, TB_AUTOGRAD, 6000, 0, 0x30000000);
    tb_fail(b, VT_KIND_DEVICE, TB_MAIN, 7000, 0, 8 * GiB, TB_STACK_A, 7 * GiB, 8 * GiB);
    tb_alloc(b, VT_KIND_HOST_PINNED, TB_MAIN, 8000, -1, 0x50000000, 64 * MiB, TB_STACK_A);
    tb_flush(b);
}

/* Names that carry terminal escapes (a title, a screen clear, a colour):
 * a thread, a phase, a mark, a census's strings and a Python frame, each
 * shown by the text report (the frame by the folded stacks too). The text outputs must show them with '?' for each control
 * character; JSON must keep them exactly. */
#define ESC "\x1b"
static const char *const hostile[] = {
    ESC "[31mtrain", ESC "[31msaved", ESC "[31mfirst-step", ESC "[31mAdam",
    ESC "[31mfloat32", ESC "[31mlayer.weight",
};
static const char hostile_thread[] = ESC "]0;PWN\a" ESC "[2J";

static void hostile_scenario(struct tb *b)
{
    enum { THREAD = 3, PY_STACK = 4 };
    tb_init(b);
    tb_standard_header(b, 778, 0x43, 8 * GiB);
    const char code[] = ESC "[31mforward", file[] = "/src/" ESC "[31mtrain.py";
    vt_encode_py_code(&b->enc, 1, code, strlen(code), file, strlen(file), 5);
    vt_encode_stack_node(&b->enc, 0, vt_py_frame_ip(1, 7)); /* PY_STACK */
    vt_encode_thread(&b->enc, THREAD, 779, hostile_thread, strlen(hostile_thread));
    for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++)
        vt_encode_string(&b->enc, hostile[i], strlen(hostile[i])); /* ids 1.. */
    vt_encode_range_push(&b->enc, THREAD, 1000, 0, 1);
    tb_alloc(b, VT_KIND_DEVICE, THREAD, 2000, 0, 0x10000000, 100 * MiB, PY_STACK);
    vt_encode_mark(&b->enc, THREAD, 2500, 0, 2);
    struct vt_part_record census = {.thread = THREAD, .census = 1, .part = VT_PART_CENSUS,
                                    .device = -1, .elements = 1, .dtype = 4, .name = 3};
    vt_encode_part(&b->enc, 3000, &census);
    struct vt_part_record param = {.thread = THREAD, .census = 1, .part = VT_PART_PARAMETER,
                                   .device = 0, .addr = 0x10000000, .bytes = 100 * MiB,
                                   .elements = 25 * MiB, .dtype = 5, .name = 6};
    vt_encode_part(&b->enc, 3000, &param);
    tb_fail(b, VT_KIND_DEVICE, THREAD, 4000, 0, 8 * GiB, TB_STACK_B, 7 * GiB, 8 * GiB);
    vt_encode_range_pop(&b->enc, THREAD, 5000, 0);
    tb_flush(b);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_traces DIR\n");
        return 2;
    }
    char path[4096];
    struct tb b;
    scenario(&b);
    tb_trailer(&b, 9000);
    snprintf(path, sizeof path, "%s/good.vtrace", argv[1]);
    if (tb_write(&b, path) != 0)
        return 1;
    printf("pid 777\ndevice_peak %llu\ndevice_peak_time 5000\npinned_peak %llu\n"
           "phase_peak %llu\nrequested %llu\nmem_records 7\n",
           500 * MiB, 64 * MiB, 500 * MiB, 8 * GiB);
    /* the same without its trailer chunk, cut 3 bytes into it */
    size_t cut_len = b.chunk_offsets[b.chunks - 1] + 3;
    snprintf(path, sizeof path, "%s/cut.vtrace", argv[1]);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.file.data, 1, cut_len, f) != cut_len || fclose(f) != 0)
        return 1;
    printf("cut_end %zu\n", b.chunk_offsets[b.chunks - 1]);
    /* a byte flipped in the middle of the second chunk's frame */
    size_t at = b.chunk_offsets[1] + VT_CHUNK_HEADER_SIZE + 8;
    b.file.data[at] ^= 0x33;
    snprintf(path, sizeof path, "%s/corrupt.vtrace", argv[1]);
    if (tb_write(&b, path) != 0)
        return 1;
    printf("corrupt_chunk %zu\n", b.chunk_offsets[1]);
    tb_free(&b);
    hostile_scenario(&b);
    tb_trailer(&b, 6000);
    snprintf(path, sizeof path, "%s/hostile.vtrace", argv[1]);
    if (tb_write(&b, path) != 0)
        return 1;
    tb_free(&b);
    return 0;
}
