/* The newest running session of this host; see top_session.h. */
#define _GNU_SOURCE
#include "top_session.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENVIRON_MAX (256 * 1024)
#define DEFAULT_TEMPLATE "vramtrace.%h.%p.vtrace" /* cmd_run.c's */

/* The value of name in an environ block (NUL-separated), NULL if absent. */
static const char *env_in(const char *env, size_t n, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < n; i += strlen(env + i) + 1)
        if (!strncmp(env + i, name, len) && env[i + len] == '=')
            return env + i + len + 1;
    return NULL;
}

static size_t read_environ(const char *pid, char *buf, size_t cap)
{
    char path[320];
    snprintf(path, sizeof path, "/proc/%s/environ", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    close(fd);
    buf[n] = '\0';
    return n;
}

/* The template's directory before its first %-component, made absolute
 * against the process's working directory. */
static bool trace_dir(const char *pid, const char *tmpl, char *out, size_t n)
{
    char dir[PATH_MAX] = ".";
    size_t cut = strcspn(tmpl, "%");
    const char *slash = NULL;
    for (const char *p = tmpl; p < tmpl + cut; p++)
        if (*p == '/')
            slash = p;
    if (slash)
        snprintf(dir, sizeof dir, "%.*s", (int)(slash - tmpl) ? (int)(slash - tmpl) : 1, tmpl);
    if (dir[0] == '/') {
        snprintf(out, n, "%s", dir);
        return true;
    }
    char link[320], cwd[PATH_MAX];
    snprintf(link, sizeof link, "/proc/%s/cwd", pid);
    ssize_t len = readlink(link, cwd, sizeof cwd - 1);
    if (len <= 0)
        return false;
    cwd[len] = '\0';
    return snprintf(out, n, "%s/%s", cwd, dir) < (int)n;
}

bool top_find_session(struct top_session *s)
{
    DIR *d = opendir("/proc");
    if (!d)
        return false;
    char *env = malloc(ENVIRON_MAX);
    unsigned long long newest = 0;
    bool found = false;
    struct dirent *de;
    while (env && (de = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)de->d_name[0]))
            continue;
        size_t n = read_environ(de->d_name, env, ENVIRON_MAX);
        const char *id = n ? env_in(env, n, "VRAMTRACE_SESSION") : NULL;
        if (!id || !*id)
            continue;
        const char *start = env_in(env, n, "VRAMTRACE_SESSION_START");
        unsigned long long when = start ? strtoull(start, NULL, 10) : 0;
        if (found && when <= newest)
            continue;
        const char *tmpl = env_in(env, n, "VRAMTRACE_OUTPUT");
        struct top_session cand = {.pid = strtoul(de->d_name, NULL, 10)};
        snprintf(cand.id, sizeof cand.id, "%s", id);
        if (!trace_dir(de->d_name, tmpl && *tmpl ? tmpl : DEFAULT_TEMPLATE, cand.dir,
                       sizeof cand.dir))
            continue;
        *s = cand;
        newest = when;
        found = true;
    }
    free(env);
    closedir(d);
    return found;
}
