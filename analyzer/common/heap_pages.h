/*
 * The analyzer's heap in transparent huge pages, where the kernel lends
 * them on request (/sys/kernel/mm/transparent_hugepage/enabled set to
 * "madvise", the usual default; with "always" they come anyway, with
 * "never" this does nothing).
 *
 * A job of thousands of small ranks touches most of its heap once, and
 * taking it 4 KiB a page fault was a third of its CPU time (256 ranks of
 * 1,000 events: 12,438 faults; in 2 MiB pages about a thousand). It is what
 * glibc's tunable glibc.malloc.hugetlb=1 does, without an environment
 * variable, which would reach the programs `vramtrace run` starts.
 */
#ifndef VRAMTRACE_COMMON_HEAP_PAGES_H
#define VRAMTRACE_COMMON_HEAP_PAGES_H

/* Once, at the start, before any thread: the heap grows 64 MiB at a time
 * from then on (address space only: a page counts when it is touched), so
 * that an advice after a growth holds for a while. */
void vt_heap_pages_init(void);
/* The heap as it is now advised, where it grew since (nothing before
 * vt_heap_pages_init). Cheap: one madvise of the heap's one mapping. */
void vt_heap_pages_advise(void);

#endif
