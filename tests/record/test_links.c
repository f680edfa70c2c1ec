/* What these tests hand the recorder at start (test_links.h). */
#define _GNU_SOURCE
#include "test_links.h"

#include <dlfcn.h>
#include <stddef.h>

static const char *const names[] = {NULL, "cuMemAlloc_v2", "cuMemFree_v2", "cudaMalloc"};

static const char *name_of(unsigned api)
{
    return api < sizeof names / sizeof names[0] ? names[api] : NULL;
}

const struct vt_recorder_links tc_links = {
    .loader_dlsym = dlsym, /* nothing interposes it here */
    .api_name = name_of,
};
