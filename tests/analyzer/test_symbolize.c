/* The symbolizer on this very test binary: known functions, lines and an
 * inlined frame, described by a module record as the recorder writes it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <elf.h>
#include <link.h>

#include "symbolize.h"
#include "trace_builder.h"

static int caller_line, inline_line, outer_line;

__attribute__((noinline)) static uintptr_t return_address(void)
{
    uintptr_t ip = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return ip;
}

__attribute__((noinline)) uintptr_t vt_test_known_caller(void)
{
    caller_line = __LINE__ + 1;
    uintptr_t ip = return_address();
    __asm__ volatile("" ::: "memory");
    return ip;
}

static inline __attribute__((always_inline)) uintptr_t vt_test_inlined_helper(void)
{
    inline_line = __LINE__ + 1;
    uintptr_t ip = return_address();
    return ip;
}

__attribute__((noinline)) uintptr_t vt_test_outer(void)
{
    outer_line = __LINE__ + 1;
    uintptr_t ip = vt_test_inlined_helper();
    __asm__ volatile("" ::: "memory");
    return ip;
}

/* The main program's load bias, extent and build-id (what the recorder's
 * dl_iterate_phdr walk records). */
struct self_module {
    uint64_t bias, start, end;
    uint8_t build_id[64];
    size_t build_id_len;
};

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct self_module *m = arg;
    if (info->dlpi_name && info->dlpi_name[0])
        return 0; /* the main program comes first, with an empty name */
    m->bias = info->dlpi_addr;
    m->start = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
            if (s < m->start)
                m->start = s;
            if (e > m->end)
                m->end = e;
        } else if (ph->p_type == PT_NOTE) {
            const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
            const uint8_t *end = p + ph->p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= end) {
                const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
                const uint8_t *name = p + sizeof *n;
                const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
                if (n->n_type == NT_GNU_BUILD_ID && n->n_descsz <= sizeof m->build_id) {
                    memcpy(m->build_id, desc, n->n_descsz);
                    m->build_id_len = n->n_descsz;
                }
                p = desc + ((n->n_descsz + 3) & ~3u);
            }
        }
    }
    return 1;
}

static struct vt_reader *reader_with_self(struct tb *b, bool wrong_build_id)
{
    struct self_module m = {0};
    dl_iterate_phdr(find_self, &m);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(n > 0);
    exe[n] = '\0';
    if (wrong_build_id) {
        assert_true(m.build_id_len > 0);
        m.build_id[0] ^= 0xff;
    }
    tb_init(b);
    tb_standard_header(b, 1, 1, 1);
    vt_encode_module(&b->enc, 1, m.bias, m.start, m.end, exe, m.build_id, m.build_id_len);
    tb_flush(b);
    struct vt_reader *r;
    assert_int_equal(vt_reader_open_memory(b->file.data, b->file.len, "sym", &r, NULL), 0);
    struct vt_record rec;
    while (vt_reader_next(r, &rec) > 0)
        ;
    return r;
}

static void test_known_function_and_line(void **state)
{
    (void)state;
    struct tb b;
    struct vt_reader *r = reader_with_self(&b, false);
    struct vt_symbolize_options opt = {0};
    struct vt_symbolizer *s = vt_symbolizer_new(r, &opt);
    const struct vt_frame *f;
    size_t n = vt_symbolize(s, vt_test_known_caller(), &f);
    assert_int_equal(n, 1);
    assert_string_equal(f[0].function, "vt_test_known_caller");
    assert_non_null(f[0].file);
    assert_non_null(strstr(f[0].file, "test_symbolize.c"));
    assert_int_equal(f[0].line, (uint64_t)caller_line);
    assert_false(f[0].inlined);
    assert_non_null(strstr(f[0].module, "test_analyzer_symbolize"));
    /* cached: the same answer again */
    const struct vt_frame *g;
    assert_int_equal(vt_symbolize(s, vt_test_known_caller(), &g), 1);
    assert_string_equal(g[0].function, "vt_test_known_caller");

    n = vt_symbolize(s, vt_test_outer(), &f);
    assert_int_equal(n, 2);
    assert_string_equal(f[0].function, "vt_test_inlined_helper");
    assert_true(f[0].inlined);
    assert_int_equal(f[0].line, (uint64_t)inline_line);
    assert_string_equal(f[1].function, "vt_test_outer");
    assert_false(f[1].inlined);
    assert_int_equal(f[1].line, (uint64_t)outer_line);
    assert_non_null(f[1].file);
    assert_non_null(strstr(f[1].file, "test_symbolize.c"));

    /* Outside every module: the address alone. */
    n = vt_symbolize(s, 0x10, &f);
    assert_int_equal(n, 1);
    assert_null(f[0].function);
    assert_null(f[0].module);
    vt_symbolizer_free(s);
    vt_reader_close(r);
    tb_free(&b);
}

static void test_build_id_mismatch(void **state)
{
    (void)state;
    struct tb b;
    struct vt_reader *r = reader_with_self(&b, true);
    struct vt_symbolize_options opt = {0};
    struct vt_symbolizer *s = vt_symbolizer_new(r, &opt);
    const struct vt_frame *f;
    assert_int_equal(vt_symbolize(s, vt_test_known_caller(), &f), 1);
    assert_null(f[0].function); /* a different binary's symbols would lie */
    assert_non_null(f[0].module);
    assert_int_equal(vt_symbolizer_missing(s), 1);
    vt_symbolizer_free(s);
    vt_reader_close(r);
    tb_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_function_and_line),
        cmocka_unit_test(test_build_id_mismatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
