/* The analyzer's heap in transparent huge pages; see heap_pages.h. */
#define _DEFAULT_SOURCE /* sbrk, madvise */
#include "heap_pages.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)
#define TOP_PAD (64 << 20)

/* The first huge page's boundary of the heap as it grows from init on;
 * 0: not initialised. Set before any thread runs, read-only after. */
static uintptr_t heap_from;

void vt_heap_pages_init(void)
{
    void *end = sbrk(0);
    if (end == (void *)-1)
        return;
    heap_from = ((uintptr_t)end + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    /* the heap then grows in steps that huge pages can fill, and advised
     * once a step, not a page fault at a time */
    mallopt(M_TOP_PAD, TOP_PAD);
    /* The first growth now, so that the advice covers it before anything
     * touches it: a job's inputs (readers, paths, the analysis's array),
     * allocated before its first group advises, were 4 KiB faults, 1.5 a
     * trace. volatile: a malloc freed unused is otherwise optimised away. */
    void *volatile grow = malloc(HUGE_PAGE);
    free(grow);
    vt_heap_pages_advise();
}

void vt_heap_pages_advise(void)
{
    if (!heap_from)
        return;
    uintptr_t end = (uintptr_t)sbrk(0);
    if (end != (uintptr_t)-1 && end > heap_from)
        (void)madvise((void *)heap_from, end - heap_from, MADV_HUGEPAGE);
}
