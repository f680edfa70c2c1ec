/* Writes the driver-level traces check_simulate.py works by hand, with the
 * recorder's own encoder:
 *
 *   make_sim_trace FILE            tensor level (what backend:cudaMallocAsync
 *       records: one device ALLOC/FREE per tensor): four 5 MiB tensors, the
 *       2nd and 4th freed, then an 8 MiB one; a 1000-byte tensor on another
 *       (host) kind is ignored.
 *   make_sim_trace --frees FILE    every rule by which a free ends an
 *       allocation (analyzer/replay/replay.h), each one changing what the
 *       model holds after some step (the list in free_rules below).
 */
#include <stdio.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1ull << 20)

static void tensors(struct tb *b)
{
    uint64_t t = 1000;
    for (int i = 0; i < 4; i++)
        tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x1000000 + (uint64_t)i * 0x1000000, 5 * MiB,
                 TB_STACK_A);
    tb_alloc(b, VT_KIND_HOST_PINNED, TB_MAIN, t++, -1, 0x9000000, 1000, TB_STACK_B);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x2000000);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x4000000);
    tb_alloc(b, VT_KIND_DEVICE, TB_AUTOGRAD, t++, 0, 0x6000000, 8 * MiB, TB_STACK_C);
    tb_trailer(b, t++);
}

/* A record tb_alloc/tb_free_mem cannot write: a mapping (aux = the
 * handle), a failed free. */
static void raw(struct tb *b, uint8_t op, uint8_t kind, uint64_t t, uint64_t addr, uint64_t size,
                uint64_t result, uint64_t aux)
{
    struct vt_mem_record m = {.op = op, .kind = kind, .api = TB_API_CREATE, .thread = TB_MAIN,
                              .device = 0, .addr = addr, .size = size,
                              .result = result, .aux = aux};
    vt_encode_mem(&b->enc, t, &m);
    b->events++;
}

/* Device 0's stream, and the bytes allocated after each of its events:
 *   1 alloc A 10 MiB                                        10
 *   2 free A: cuMemFree names no device (-1)                 0
 *   3 alloc handle H 4 MiB (cuMemCreate); then a retain (size 0) and a
 *     mapping hold it: two releases leave it alive          4
 *   4 alloc D 12 MiB; a failed free of D changes nothing    16
 *   5 free H at the unmap of its last mapping               12
 *   6 alloc graph memory G 2 MiB                            14
 *   7 free G: cuMemFreeAsync, recorded as plain device      12
 *   8 free D: a new 3 MiB allocation at D's address
 *     without a free (the tracer missed it)                  0
 *   9 alloc D' 3 MiB                                         3
 *  10 free D'                                                0
 * A failed 32 MiB allocation is not in the stream; device 1 has one 5 MiB
 * allocation, freed with device -1 too. Allocated peak 16 MiB (5 allocations, 5
 * frees); it would be 12 if the retain or the mapping were ignored, 26 if
 * frees naming no device were. */
static void free_rules(struct tb *b)
{
    uint64_t t = 1000;
    const uint64_t A = 0x10000000, D = 0x20000000, G = 0x30000000, E = 0x40000000;
    const uint64_t H = 0x77, VA = 0x50000000;
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, A, 10 * MiB, TB_STACK_A);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, -1, A);
    tb_alloc(b, VT_KIND_VMM_PHYSICAL, TB_MAIN, t++, 0, H, 4 * MiB, TB_STACK_B);
    tb_alloc(b, VT_KIND_VMM_PHYSICAL, TB_MAIN, t++, 0, H, 0, TB_STACK_B);  /* retain */
    raw(b, VT_OP_ALLOC, VT_KIND_VA_MAP, t++, VA, 4 * MiB, 0, H);          /* cuMemMap */
    tb_free_mem(b, VT_KIND_VMM_PHYSICAL, TB_MAIN, t++, 0, H);             /* cuMemRelease x 2 */
    tb_free_mem(b, VT_KIND_VMM_PHYSICAL, TB_MAIN, t++, 0, H);
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, D, 12 * MiB, TB_STACK_C);
    raw(b, VT_OP_FREE, VT_KIND_DEVICE, t++, D, 0, 1 /* INVALID_VALUE */, 0);
    raw(b, VT_OP_FREE, VT_KIND_VA_MAP, t++, VA, 0, 0, 0);                 /* cuMemUnmap */
    tb_alloc(b, VT_KIND_GRAPH, TB_MAIN, t++, 0, G, 2 * MiB, TB_STACK_A);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, -1, G);
    tb_fail(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 32 * MiB, TB_STACK_A, 1 * MiB, 24ull << 30);
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, t++, 1, E, 5 * MiB, TB_STACK_A);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, -1, E);
    tb_alloc(b, VT_KIND_DEVICE, TB_MAIN, t++, 0, D, 3 * MiB, TB_STACK_B);
    tb_free_mem(b, VT_KIND_DEVICE, TB_MAIN, t++, -1, D);
    tb_trailer(b, t++);
}

int main(int argc, char **argv)
{
    bool frees = argc == 3 && !strcmp(argv[1], "--frees");
    if (argc != 2 && !frees) {
        fprintf(stderr, "usage: make_sim_trace [--frees] FILE\n");
        return 2;
    }
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4242, 0x11, 24ull << 30);
    if (frees)
        free_rules(&b);
    else
        tensors(&b);
    int rc = tb_write(&b, argv[argc - 1]);
    tb_free(&b);
    return rc ? 1 : 0;
}
