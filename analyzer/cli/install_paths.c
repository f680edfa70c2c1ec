/*
 * The layouts, by where the executable (EXE) lies:
 *
 *   the build tree   BUILD/analyzer/vramtrace  BUILD/preload/libvramtrace.so
 *                                              BUILD/preload/python/
 *   a prefix         PREFIX/bin/vramtrace      PREFIX/lib{,64,/MULTIARCH}/libvramtrace.so
 *   (meson install, the tarball)               PREFIX/share/vramtrace/python/
 *   the wheel        SCRIPTS/vramtrace         PKG/lib/libvramtrace.so
 *                                              PKG/share/vramtrace/python/
 *
 * where the wheel's PKG is its package directory, site-packages/vramtrace/,
 * a small prefix of its own. pip puts SCRIPTS and site-packages side by
 * side in every scheme it has: PREFIX/bin and PREFIX/lib/pythonX.Y/
 * site-packages (a venv, --user's ~/.local, --prefix; dist-packages under
 * Debian's /usr/local), or DIR/bin and DIR itself (--target DIR).
 */
#define _GNU_SOURCE
#include "install_paths.h"

#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static const char *const tracer_places[] = {
    "%s/../preload/libvramtrace.so",
    "%s/../lib*/libvramtrace.so",
    "%s/../lib/*/libvramtrace.so",
    "%s/../lib*/python3*/*-packages/vramtrace/lib/libvramtrace.so",
    "%s/../vramtrace/lib/libvramtrace.so",
};

static const char *const bootstrap_places[] = {
    "%s/../preload/python/sitecustomize.py",
    "%s/../share/vramtrace/python/sitecustomize.py",
    "%s/../lib*/python3*/*-packages/vramtrace/share/vramtrace/python/sitecustomize.py",
    "%s/../vramtrace/share/vramtrace/python/sitecustomize.py",
};

const char vt_install_places[] =
    "beside this program: ../preload (a build tree), ../lib* (a prefix, the tarball), "
    "../lib*/python3*/*-packages/vramtrace/lib (the wheel)";

/* The directory of this executable, with glob's special characters escaped
 * (a directory may be called "[x]"). */
static bool exe_dir_pattern(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0)
        return false;
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return false;
    *slash = '\0';
    size_t o = 0;
    for (const char *p = exe; *p; p++) {
        if (o + 3 > n)
            return false;
        if (strchr("*?[\\", *p))
            out[o++] = '\\';
        out[o++] = *p;
    }
    out[o] = '\0';
    return true;
}

/* The first existing file the places name, made absolute. */
static bool find_first(const char *const *places, size_t count, char *out, size_t n)
{
    char dir[2 * PATH_MAX], pattern[2 * PATH_MAX + 128];
    if (!exe_dir_pattern(dir, sizeof dir))
        return false;
    for (size_t k = 0; k < count; k++) {
        if (snprintf(pattern, sizeof pattern, places[k], dir) >= (int)sizeof pattern)
            continue;
        glob_t g;
        bool found = false;
        if (glob(pattern, 0, NULL, &g) == 0) {
            for (size_t i = 0; i < g.gl_pathc && !found; i++) {
                char abs[PATH_MAX];
                found = access(g.gl_pathv[i], R_OK) == 0 && realpath(g.gl_pathv[i], abs) &&
                        snprintf(out, n, "%s", abs) < (int)n;
            }
        }
        globfree(&g);
        if (found)
            return true;
    }
    return false;
}

bool vt_find_tracer(char *out, size_t n)
{
    return find_first(tracer_places, sizeof tracer_places / sizeof *tracer_places, out, n);
}

bool vt_find_python_bootstrap(char *out, size_t n)
{
    if (!find_first(bootstrap_places, sizeof bootstrap_places / sizeof *bootstrap_places, out, n))
        return false;
    *strrchr(out, '/') = '\0'; /* the directory of sitecustomize.py */
    return true;
}
