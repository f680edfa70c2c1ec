/*
 * The tracer's own stack walker (x86-64, the calling thread only): the
 * return addresses libunwind's unw_backtrace() would give at the same
 * call site, at a fraction of its cost per frame.
 *
 * Each thread keeps a table of unwind rules, one per return address
 * ("CFA = rsp or rbp + k; the return address at CFA-8; rbp saved at
 * CFA-j or unchanged; or: the outermost frame"), derived once from the
 * module's .eh_frame (found through .eh_frame_hdr) for the instruction
 * before the return address, as libunwind does. A walk is then a table
 * probe, an addition and one or two loads per frame.
 *
 * Whatever the table cannot describe exactly like libunwind's fast trace
 * does (signal frames, CFA or register rules given as DWARF expressions,
 * code without unwind information, odd register rules, a frame that does
 * not move up the stack, this thread already inside a walk: a signal
 * handler) is not guessed at: the whole stack is walked by unw_backtrace()
 * instead, so the answer is always libunwind's. "Cannot describe" is
 * cached too.
 *
 * Modules that go away: dlclose (hooked, preload/hooks/dlsym_hook.c)
 * bumps a generation that makes every thread clear its table before its
 * next walk; a rule miss also compares the loader's unload counter
 * (dlpi_subs) and starts over when it moved (unloads the hook does not
 * see, e.g. glibc's own NSS modules). Per-thread state only: no locks, no
 * shared writes; the table (64 KiB) is mmap'ed at the thread's first walk
 * and unmapped when the thread exits.
 */
#ifndef VRAMTRACE_PRELOAD_FAST_UNWIND_H
#define VRAMTRACE_PRELOAD_FAST_UNWIND_H

#include <stdint.h>

/* Same contract as unw_backtrace(buf, size): buf[0] is the return address
 * into the caller, then the caller's callers, at most size entries; returns
 * how many. Called where unw_backtrace would be, it gives exactly what
 * unw_backtrace would (it IS unw_backtrace when the fast walk gives up: a
 * tail jump, so even buf[0] is the same).
 *
 * One exception: a signal handler's walk that interrupts this thread's
 * walk while that one holds the loader's lock (reading the module list on
 * a rule miss, dl_iterate_phdr) or sets up the thread's table returns 0
 * frames. Any walk there would deadlock: libunwind takes the same,
 * non-recursive lock on its own misses.
 *
 * Not on other architectures: VT_HAVE_FAST_UNWIND says whether it exists. */
#if defined(__x86_64__) && defined(__linux__)
#define VT_HAVE_FAST_UNWIND 1
int vt_fast_backtrace(void **buf, int size);

/* The same walk begun one frame further out: at the caller of the
 * function whose frame-pointer frame is `frame` (that function's
 * __builtin_frame_address(0): frame[0] the caller's rbp, frame[1] the
 * return address into the caller, the caller's rsp frame + 2). buf[0] is
 * that return address. The function must still be running (its frame is
 * read). -1: the table cannot describe this stack (nothing is walked with
 * libunwind here: the caller walks as it would have without a frame);
 * 0 frames in the case vt_fast_backtrace gives 0. */
int vt_fast_backtrace_from(void **buf, int size, const void *frame);

/* The same walk, ended early when its stack reaches a cut (below): the
 * first return address whose call lies inside a cut range is its last
 * entry. Where no cut is set, or the walk misses them, it is the whole
 * walk of vt_fast_backtrace_from. */
int vt_fast_backtrace_from_to_cut(void **buf, int size, const void *frame);
#else
#define VT_HAVE_FAST_UNWIND 0
#endif

/* Code where the walks that ask for it end (vt_fast_backtrace_from_to_cut):
 * up to VT_FAST_UNWIND_CUTS ranges [lo[i], hi[i]) of instructions, a
 * return address "inside" when its call instruction is (the address - 1).
 * The recorder's is the Python interpreter's loop, below which the frames
 * are dropped (python_stack.h): a walk on past it walks frames nobody
 * keeps. Set once, at start-up (every thread's rules are made again); a
 * rule knows its return address lies inside a cut, so a walk pays nothing
 * for the check, and the walks that do not ask pay nothing for it either.
 * n = 0: none. */
#define VT_FAST_UNWIND_CUTS 2
void vt_fast_unwind_set_cuts(const uintptr_t *lo, const uintptr_t *hi, int n);

/* A module was unloaded: every thread's rules are stale (dlclose hook). */
void vt_fast_unwind_modules_gone(void);

/* What the calling thread's walks did, since it started. */
struct vt_fast_unwind_counts {
    uint64_t fast;         /* walks answered from the rule table */
    uint64_t cut;          /* of those, ended at a cut */
    uint64_t fallback;     /* walks handed to unw_backtrace */
    uint64_t rules_built;  /* rules derived from .eh_frame (table misses) */
    uint64_t unsupported;  /* of those, "cannot describe" */
    uint64_t reentered;    /* walks begun inside another (a signal handler's) */
    uint64_t declined;     /* of those, given no stack: see vt_fast_backtrace */
};
void vt_fast_unwind_counts(struct vt_fast_unwind_counts *out);

#endif
