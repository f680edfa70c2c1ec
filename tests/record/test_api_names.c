/* Test-only API names: in libvramtrace.so the hooks provide these from
 * their X-macro list; these tests link the recorder without the hooks. */
#include <stddef.h>

#include "recorder.h"

static const char *const names[] = {NULL, "cuMemAlloc_v2", "cuMemFree_v2", "cudaMalloc"};

const char *vt_api_name(unsigned api)
{
    return api < sizeof names / sizeof names[0] ? names[api] : NULL;
}

unsigned vt_api_count(void)
{
    return sizeof names / sizeof names[0];
}
