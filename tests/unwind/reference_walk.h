/* The reference stack for the fast unwinder's tests. */
#ifndef VT_TEST_UNWIND_REFERENCE_WALK_H
#define VT_TEST_UNWIND_REFERENCE_WALK_H

/* unw_backtrace's contract (buf[0] = the return address into the caller),
 * computed by libunwind's unw_step loop with its caches flushed first.
 * After a library was replaced at the same address this is the truth,
 * where unw_backtrace itself may still answer from its fast-trace cache,
 * which libunwind (1.6) never invalidates. */
int fu_fresh_libunwind(void **buf, int size);

#endif
