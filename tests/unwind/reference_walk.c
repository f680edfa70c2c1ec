/* See reference_walk.h. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <stdint.h>

#include "frames.h"
#include "reference_walk.h"

int fu_fresh_libunwind(void **buf, int size)
{
    unw_context_t uc;
    unw_cursor_t c;
    unw_flush_cache(unw_local_addr_space, 0, 0);
    if (unw_getcontext(&uc) != 0 || unw_init_local(&c, &uc) != 0)
        return 0;
    int n = 0;
    while (n < size && unw_step(&c) > 0) {
        unw_word_t ip;
        if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0)
            break;
        buf[n++] = (void *)(uintptr_t)ip;
    }
    fu_sink = n;
    return n;
}
