/* A frame in a shared library (frames.h, plan letter 's'): the test calls
 * it through its PLT, it calls back through a pointer. */
#include "frames.h"

static volatile int lib_sink;

int fu_lib_frame(const char *plan, fu_action act, void *arg,
                                                        fu_next_fn next)
{
    int r = next(plan, act, arg);
    lib_sink = r;
    return r + 1;
}
