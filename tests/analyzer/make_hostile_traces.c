/*
 * Writes the small hostile traces of tests/fuzz/crashes/trace_file/ that
 * once made `vramtrace report` run for minutes to hours
 * (docs/internals/RELIABILITY.md, finding 4):
 *
 *   nested-phases-then-allocations.trace: 5,000 distinct phase names opened
 *     nested (2,500 NVTX pushes on one thread, 2,500 start/end ranges from
 *     another), then 25,000 allocations; the eager phase bookkeeping walked
 *     every open phase and scanned the ledger's phase list for each, per
 *     allocation;
 *   many-ledgers-and-phases.trace: device and managed allocations on each
 *     of the 4,096 device ordinals the reader accepts (8,192 ledgers), then
 *     250 phases opened and closed between allocations on rotating
 *     ledgers; every ledger lookup scanned every ledger, and every phase
 *     opening made a record (with a snapshot) in every ledger.
 *
 * Usage: make_hostile_traces DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "trace_builder.h"

static void names(struct tb *b, int n)
{
    char name[16];
    for (int i = 0; i < n; i++) {
        int len = snprintf(name, sizeof name, "p%d", i);
        vt_encode_string(&b->enc, name, (size_t)len); /* string id i + 1 */
    }
}

static int write_file(struct tb *b, const char *dir, const char *file)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int rc = tb_write(b, path);
    tb_free(b);
    if (rc)
        fprintf(stderr, "make_hostile_traces: cannot write %s\n", path);
    return rc;
}

static int nested_phases(const char *dir)
{
    enum { PHASES = 5000, ALLOCS = 25000 };
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4242, 7, 1ull << 40);
    names(&b, PHASES);
    uint64_t t = 1000;
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x10, 1, TB_STACK_A); /* the ledger exists */
    for (uint64_t i = 0; i < PHASES; i++)
        if (i % 2)
            vt_encode_range_start(&b.enc, TB_AUTOGRAD, t++, i, 0, i + 1);
        else
            vt_encode_range_push(&b.enc, TB_MAIN, t++, 0, i + 1);
    for (uint64_t i = 0; i < ALLOCS; i++)
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, t++, 0, 0x100000 + i * 0x100, 256,
                 TB_STACK_A + i % 3);
    for (uint64_t i = PHASES; i-- > 0;)
        if (i % 2)
            vt_encode_range_end(&b.enc, TB_MAIN, t++, i);
        else
            vt_encode_range_pop(&b.enc, TB_MAIN, t++, 0);
    tb_trailer(&b, t);
    return write_file(&b, dir, "nested-phases-then-allocations.trace");
}

static int many_ledgers(const char *dir)
{
    enum { DEVICES = 4096, PHASES = 250 };
    struct tb b;
    tb_init(&b);
    tb_standard_header(&b, 4343, 8, 1ull << 40);
    names(&b, PHASES);
    uint64_t t = 1000, addr = 0x100000;
    for (int64_t d = 0; d < DEVICES; d++, addr += 0x200) {
        tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, t++, d, addr, 256, TB_STACK_A);
        tb_alloc(&b, VT_KIND_MANAGED, TB_MAIN, t++, d, addr + 0x100, 256, TB_STACK_C);
    }
    for (uint64_t i = 0; i < PHASES; i++) {
        vt_encode_range_push(&b.enc, TB_MAIN, t++, 0, i + 1);
        for (int64_t k = 0; k < 8; k++, addr += 0x100)
            tb_alloc(&b, k % 2 ? VT_KIND_MANAGED : VT_KIND_DEVICE, TB_MAIN, t++,
                     (int64_t)((i * 8 + (uint64_t)k) * 37 % DEVICES), addr, 512, TB_STACK_B);
        vt_encode_range_pop(&b.enc, TB_MAIN, t++, 0);
    }
    tb_trailer(&b, t);
    return write_file(&b, dir, "many-ledgers-and-phases.trace");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_hostile_traces DIR\n");
        return 2;
    }
    return nested_phases(argv[1]) || many_ledgers(argv[1]) ? 1 : 0;
}
