/*
 * Where `vramtrace run` finds what it puts into the traced program, the
 * tracer (libvramtrace.so) and the Python bootstrap: relative to this very
 * executable (/proc/self/exe), whichever layout it was installed in, with
 * no environment variable and no path compiled in (docs/user/INSTALL.md).
 */
#ifndef VT_INSTALL_PATHS_H
#define VT_INSTALL_PATHS_H

#include <stdbool.h>
#include <stddef.h>

/* The absolute path of libvramtrace.so into out. */
bool vt_find_tracer(char *out, size_t n);

/* The absolute path of the directory holding the bootstrap's
 * sitecustomize.py into out. */
bool vt_find_python_bootstrap(char *out, size_t n);

/* The places looked in, for an error message. */
extern const char vt_install_places[];

#endif
