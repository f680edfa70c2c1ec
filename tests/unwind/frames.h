/*
 * Test stacks of many shapes for the fast unwinder's tests. A plan string
 * says, frame by frame from the outside in, what kind of frame to build;
 * at its end the action runs (it walks the stack).
 *
 *   f / n   a plain frame, built with / without frame pointers
 *   A / a   alloca: a variable-size frame (CFA from rbp even without -fno-omit-frame-pointer)
 *   V / v   a variable-length array
 *   R / r   many values live across the call (callee-saved registers, rbp among them)
 *   B / b   a frame of several KiB
 *   s       a frame in a shared library, entered through the PLT
 *   o       rbp-based, rbp saved below another register (CFA = rbp + 24; assembly)
 *   x       the CFA as a DWARF expression (assembly): the fast walker gives up
 */
#ifndef VT_TEST_UNWIND_FRAMES_H
#define VT_TEST_UNWIND_FRAMES_H

/* Exported (the project builds with -fvisibility=hidden): dladdr names
 * them in the tests' messages and checks. */
#define FU_EXPORT __attribute__((visibility("default")))

typedef int (*fu_action)(void *arg);
typedef int (*fu_next_fn)(const char *plan, fu_action act, void *arg);

/* Builds the next frame of the plan, or runs act at its end. */
FU_EXPORT int fu_next(const char *plan, fu_action act, void *arg);

/* Written after every call so that no call becomes a jump. */
extern volatile int fu_sink;

#define FU_VARIANT_DECLS(suffix)                                                \
    FU_EXPORT int fu_frame_##suffix(const char *plan, fu_action act, void *arg);       \
    FU_EXPORT int fu_frame_alloca_##suffix(const char *plan, fu_action act, void *arg); \
    FU_EXPORT int fu_frame_vla_##suffix(const char *plan, fu_action act, void *arg);   \
    FU_EXPORT int fu_frame_regs_##suffix(const char *plan, fu_action act, void *arg);  \
    FU_EXPORT int fu_frame_big_##suffix(const char *plan, fu_action act, void *arg);
FU_VARIANT_DECLS(fp)
FU_VARIANT_DECLS(nofp)

/* In odd_frames.S. */
FU_EXPORT int fu_frame_rbp_late(const char *plan, fu_action act, void *arg);
FU_EXPORT int fu_frame_cfa_expr(const char *plan, fu_action act, void *arg);

/* In libfu_frames.so. */
FU_EXPORT int fu_lib_frame(const char *plan, fu_action act, void *arg, fu_next_fn next);

#endif
