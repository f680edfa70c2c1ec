/* The dispatcher of the test stacks (frames.h). */
#include "frames.h"

volatile int fu_sink;

int fu_next(const char *plan, fu_action act, void *arg)
{
    int r;
    switch (*plan) {
    case 'f': r = fu_frame_fp(plan + 1, act, arg); break;
    case 'n': r = fu_frame_nofp(plan + 1, act, arg); break;
    case 'A': r = fu_frame_alloca_fp(plan + 1, act, arg); break;
    case 'a': r = fu_frame_alloca_nofp(plan + 1, act, arg); break;
    case 'V': r = fu_frame_vla_fp(plan + 1, act, arg); break;
    case 'v': r = fu_frame_vla_nofp(plan + 1, act, arg); break;
    case 'R': r = fu_frame_regs_fp(plan + 1, act, arg); break;
    case 'r': r = fu_frame_regs_nofp(plan + 1, act, arg); break;
    case 'B': r = fu_frame_big_fp(plan + 1, act, arg); break;
    case 'b': r = fu_frame_big_nofp(plan + 1, act, arg); break;
    case 's': r = fu_lib_frame(plan + 1, act, arg, fu_next); break;
    case 'o': r = fu_frame_rbp_late(plan + 1, act, arg); break;
    case 'x': r = fu_frame_cfa_expr(plan + 1, act, arg); break;
    default: r = act(arg); break;
    }
    fu_sink = r;
    return r;
}
