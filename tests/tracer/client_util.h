/* Shared by the tracer test clients: checks that end the client with a
 * message, and where a function pointer lives. */
#ifndef VT_TRACER_CLIENT_UTIL_H
#define VT_TRACER_CLIENT_UTIL_H

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

#define CHECK_CU(call) CHECK((call) == 0)

/* 1 if fn is a function of the object whose path contains part. */
static inline int lives_in(const void *fn, const char *part)
{
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname && strstr(info.dli_fname, part);
}

#endif
