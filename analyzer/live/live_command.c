/* The command a process is named by; see live_command.h. */
#include "live_command.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool is_python(const char *program)
{
    return !strncmp(program, "python", 6) || !strncmp(program, "pypy", 4);
}

/* The index of the argument a Python command line runs (its script, or
 * the module after -m), past the interpreter's own options; 0 when it
 * runs none (-c, a bare interpreter). */
static size_t python_target(const struct vt_process_info *info)
{
    for (size_t i = 1; i < info->argc; i++) {
        const char *a = info->argv[i];
        if (!a || a[0] != '-' || !strcmp(a, "-"))
            return a ? i : 0;
        if (!strcmp(a, "-m"))
            return i + 1 < info->argc ? i + 1 : 0;
        if (!strncmp(a, "-c", 2))
            return 0;
        if (!strcmp(a, "-W") || !strcmp(a, "-X"))
            i++; /* the option's value is the next argument */
    }
    return 0;
}

void vt_live_command(const struct vt_process_info *info, char *buf, size_t n)
{
    if (!n)
        return;
    buf[0] = '\0';
    size_t first = 0;
    if (info->argc && info->argv[0] && is_python(base_name(info->argv[0])))
        first = python_target(info);
    size_t used = 0;
    for (size_t i = first; i < info->argc && used + 1 < n; i++) {
        const char *arg = info->argv[i] ? info->argv[i] : "";
        if (i == first)
            arg = base_name(arg); /* the program's or script's name, not where it lives */
        int k = snprintf(buf + used, n - used, "%s%s", i > first ? " " : "", arg);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    if (!buf[0] && info->exe)
        snprintf(buf, n, "%s", info->exe);
}
