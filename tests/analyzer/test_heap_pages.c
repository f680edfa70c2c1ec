/*
 * The analyzer's heap in huge pages (analyzer/common/heap_pages.h): the
 * kernel's own account of the heap's mapping (/proc/self/smaps, VmFlags
 * "hg": advised with MADV_HUGEPAGE) says so once the heap has grown and
 * vt_heap_pages_advise ran, and not before. Skipped where malloc does not
 * take its memory from the heap (a sanitizer's allocator).
 */
#define _DEFAULT_SOURCE
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "heap_pages.h"

/* 1: the [heap] mapping's VmFlags have "hg"; 0: they do not; -1: no heap. */
static int heap_advised(void)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in_heap = 0, advised = -1;
    while (fgets(line, sizeof line, f)) {
        if (line[0] && strchr("0123456789abcdef", line[0])) /* a mapping's first line */
            in_heap = strstr(line, "[heap]") != NULL;
        else if (in_heap && !strncmp(line, "VmFlags:", 8))
            advised = strstr(line, " hg") != NULL;
    }
    fclose(f);
    return advised;
}

static void test_heap_advised_after_growth(void **state)
{
    (void)state;
    mallopt(M_MMAP_THRESHOLD, 32 << 20); /* as the analyzer's main does */
    vt_heap_pages_init();
    uintptr_t before = (uintptr_t)sbrk(0);
    char *p = malloc(8 << 20);
    assert_non_null(p);
    if ((uintptr_t)sbrk(0) == before) {
        free(p);
        skip(); /* not from the heap: a sanitizer's allocator */
    }
    assert_true((uintptr_t)sbrk(0) - before >= 64 << 20); /* grown with the pad */
    assert_int_equal(heap_advised(), 0);
    vt_heap_pages_advise();
    assert_int_equal(heap_advised(), 1);
    memset(p, 1, 8 << 20);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heap_advised_after_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
