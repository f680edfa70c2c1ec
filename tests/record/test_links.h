/* What these tests hand the recorder at start, in place of the hooks of
 * libvramtrace.so (which they do not link): plain dlsym, and a few api
 * names (1 cuMemAlloc_v2, 2 cuMemFree_v2, 3 cudaMalloc). */
#ifndef VRAMTRACE_TESTS_RECORD_TEST_LINKS_H
#define VRAMTRACE_TESTS_RECORD_TEST_LINKS_H

#include "recorder_control.h"

extern const struct vt_recorder_links tc_links;

#endif
