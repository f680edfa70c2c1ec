/* Writes a tensor-level trace (what backend:cudaMallocAsync records: one
 * device ALLOC/FREE per tensor) for check_simulate.py. The scenario is
 * worked by hand there: four 5 MiB tensors, the 2nd and 4th freed, then
 * an 8 MiB one; a 1000-byte tensor on another (host) kind is ignored. */
#include <stdio.h>

#include "trace_builder.h"

#define MiB (1ull << 20)

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_sim_trace FILE\n");
        return 2;
    }
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4242, 0x11, 24ull << 30);
    uint64_t t = 1000;
    for (int i = 0; i < 4; i++)
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x1000000 + (uint64_t)i * 0x1000000, 5 * MiB,
                 TB_STACK_A);
    tb_alloc(&b, VT_KIND_HOST_PINNED, TB_MAIN, t++, -1, 0x9000000, 1000, TB_STACK_B);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x2000000);
    tb_free_mem(&b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x4000000);
    tb_alloc(&b, VT_KIND_DEVICE, TB_AUTOGRAD, t++, 0, 0x6000000, 8 * MiB, TB_STACK_C);
    tb_trailer(&b, t++);
    int rc = tb_write(&b, argv[1]);
    tb_free(&b);
    return rc ? 1 : 0;
}
