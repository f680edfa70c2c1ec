/*
 * Frames of the test stacks (frames.h). This file is compiled twice, with
 * -fno-omit-frame-pointer (FU_SUFFIX=fp) and with -fomit-frame-pointer
 * (FU_SUFFIX=nofp), so that each kind of frame exists in both forms.
 */
#include <alloca.h>
#include <string.h>

#include "frames.h"

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(base) CAT(base, FU_SUFFIX)

int NAME(fu_frame_)(const char *plan, fu_action act, void *arg)
{
    int r = fu_next(plan, act, arg);
    fu_sink = r;
    return r + 1;
}

int NAME(fu_frame_alloca_)(const char *plan, fu_action act, void *arg)
{
    size_t bytes = 16 + (size_t)(fu_sink & 0xff);
    volatile char *p = alloca(bytes);
    p[0] = 1;
    int r = fu_next(plan, act, arg);
    fu_sink = r + p[0];
    return r + 1;
}

int NAME(fu_frame_vla_)(const char *plan, fu_action act, void *arg)
{
    int n = 3 + (fu_sink & 15);
    volatile long v[n];
    v[0] = 1;
    v[n - 1] = 2;
    int r = fu_next(plan, act, arg);
    fu_sink = r + (int)v[0] + (int)v[n - 1];
    return r + 1;
}

int NAME(fu_frame_regs_)(const char *plan, fu_action act, void *arg)
{
    /* eight values live across the call: every callee-saved register */
    int a = fu_sink, b = a * 3, c = b ^ 5, d = c + 7, e = d * 11, f = e - 13, g = f ^ 17,
        h = g + 19;
    int r = fu_next(plan, act, arg);
    fu_sink = r + a + b + c + d + e + f + g + h;
    return r + 1;
}

int NAME(fu_frame_big_)(const char *plan, fu_action act, void *arg)
{
    volatile char buf[6000];
    buf[0] = 1;
    buf[sizeof buf - 1] = 2;
    int r = fu_next(plan, act, arg);
    fu_sink = r + buf[0] + buf[sizeof buf - 1];
    return r + 1;
}
