/* The process record's facts. See process_info.h. */
#define _GNU_SOURCE
#include "process_info.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modules.h"

#ifndef VT_TOOL_VERSION
#define VT_TOOL_VERSION "unknown"
#endif

static const char *const env_names[] = {
#define VT_ENV_NAME(n) #n,
    VT_PROCESS_ENV_LIST(VT_ENV_NAME)
#undef VT_ENV_NAME
};

/* Reads a whole small /proc file; NUL-terminated, *len excludes the NUL. */
static char *read_proc_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        ssize_t r = read(fd, buf + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == cap) {
            if (cap >= (1u << 24))
                break;
            char *b = realloc(buf, cap * 2 + 1);
            if (!b)
                break;
            buf = b;
            cap *= 2;
        }
    }
    close(fd);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

void vt_process_info_collect(struct vt_process_info_buf *info, uint64_t start_realtime_ns,
                             uint64_t start_mono_ns, uint64_t stack_depth,
                             uint64_t flush_interval_ms)
{
    memset(info, 0, sizeof *info);
    struct vt_process_info *f = &info->facts;
    f->pid = (uint64_t)getpid();
    f->ppid = (uint64_t)getppid();
    f->start_realtime_ns = start_realtime_ns;
    f->start_mono_ns = start_mono_ns;
    if (gethostname(info->hostname, sizeof info->hostname - 1) != 0)
        info->hostname[0] = '\0';
    f->hostname = info->hostname;
    vt_main_exe_path(info->exe, sizeof info->exe);
    f->exe = info->exe;

    size_t len = 0;
    info->cmdline = read_proc_file("/proc/self/cmdline", &len);
    size_t argc = 0;
    for (size_t i = 0; info->cmdline && i < len; i++)
        if (info->cmdline[i] == '\0')
            argc++;
    if (info->cmdline && len && info->cmdline[len - 1] != '\0')
        argc++; /* the last argument was cut short */
    info->argv = argc ? calloc(argc, sizeof *info->argv) : NULL;
    if (info->argv) {
        const char *p = info->cmdline;
        for (size_t i = 0; i < argc; i++) {
            info->argv[i] = p;
            p += strlen(p) + 1;
        }
        f->argc = argc;
        f->argv = info->argv;
    }

    for (size_t i = 0; i < sizeof env_names / sizeof env_names[0] && f->nenv < 64; i++) {
        const char *v = getenv(env_names[i]);
        if (v) {
            info->env[f->nenv].name = env_names[i];
            info->env[f->nenv].value = v;
            f->nenv++;
        }
    }
    f->env = info->env;
    f->tool_version = VT_TOOL_VERSION;
    f->stack_depth = stack_depth;
    f->flush_interval_ms = flush_interval_ms;
}

void vt_process_info_free(struct vt_process_info_buf *info)
{
    free(info->cmdline);
    free(info->argv);
    memset(info, 0, sizeof *info);
}
