#define _GNU_SOURCE /* fileno, TIOCGWINSZ */
#include "cli_options.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <unistd.h>

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    if (!*s || *s == '-')
        return false;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

bool vt_cli_uint(const char *cmd, const char *name, const char *what, const char *arg, uint64_t min,
                 uint64_t max, uint64_t *out)
{
    uint64_t v;
    if (parse_u64(arg, &v) && v >= min && v <= max) {
        *out = v;
        return true;
    }
    if (what)
        fprintf(stderr, "vramtrace %s: --%s wants %s, not '%s'\n", cmd, name, what, arg);
    else
        fprintf(stderr,
                "vramtrace %s: --%s wants a number from %" PRIu64 " to %" PRIu64 ", not '%s'\n",
                cmd, name, min, max, arg);
    return false;
}

static bool parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || !(v > 0))
        return false;
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {
        {"", 1},
        {"B", 1},
        {"K", 1024.0},
        {"KiB", 1024.0},
        {"KB", 1e3},
        {"M", 1048576.0},
        {"MiB", 1048576.0},
        {"MB", 1e6},
        {"G", 1073741824.0},
        {"GiB", 1073741824.0},
        {"GB", 1e9},
        {"T", 1099511627776.0},
        {"TiB", 1099511627776.0},
        {"TB", 1e12},
    };
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (!strcasecmp(end, units[k].suffix)) {
            double b = floor(v * units[k].mult);
            if (b < 1 || b > 1.8e19)
                return false;
            *out = (uint64_t)b;
            return true;
        }
    return false;
}

bool vt_cli_size(const char *cmd, const char *name, const char *arg, uint64_t *out)
{
    if (parse_size(arg, out))
        return true;
    fprintf(stderr, "vramtrace %s: --%s wants a size like 24GiB, not '%s'\n", cmd, name, arg);
    return false;
}

bool vt_cli_duration(const char *cmd, const char *name, const char *arg, uint64_t min_ns,
                     uint64_t max_ns, uint64_t *out)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}};
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    double scale = end != arg && !*end ? 1e9 : 0; /* a bare number: seconds */
    for (size_t k = 0; !scale && k < sizeof units / sizeof units[0]; k++)
        if (end != arg && !strcmp(end, units[k].unit))
            scale = units[k].ns;
    double ns = v * scale;
    if (!errno && scale && isfinite(ns) && ns >= (double)min_ns && ns <= (double)max_ns) {
        *out = (uint64_t)ns;
        return true;
    }
    fprintf(stderr, "vramtrace %s: --%s wants a duration like 1s, 100ms or 5m (from %.3g to %.3g s), not '%s'\n",
            cmd, name, (double)min_ns / 1e9, (double)max_ns / 1e9, arg);
    return false;
}

size_t vt_cli_text_width(FILE *out)
{
    int fd = fileno(out);
    if (fd < 0 || !isatty(fd))
        return VT_CLI_PIPE_WIDTH;
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    uint64_t v;
    const char *env = getenv("COLUMNS");
    if (env && parse_u64(env, &v) && v > 0 && v <= 100000)
        return (size_t)v;
    return VT_CLI_PIPE_WIDTH;
}

bool vt_cli_size_or_percent(const char *cmd, const char *name, const char *arg, bool *is_percent,
                            double *percent, uint64_t *bytes)
{
    size_t n = strlen(arg);
    if (n > 1 && arg[n - 1] == '%') {
        char *end;
        errno = 0;
        double v = strtod(arg, &end);
        if (!errno && end == arg + n - 1 && isfinite(v) && v >= 0) {
            *is_percent = true;
            *percent = v;
            return true;
        }
    } else {
        /* A bare number is refused: "5" could mean 5% as well as 5 bytes. */
        char *end;
        (void)strtod(arg, &end);
        if (end != arg && !*end) {
            fprintf(stderr,
                    "vramtrace %s: --%s %s: a share or a size? write %s%% for a share, or a "
                    "size with its unit (%sMiB, %sGiB, %sB)\n",
                    cmd, name, arg, arg, arg, arg, arg);
            return false;
        }
        if (parse_size(arg, bytes)) {
            *is_percent = false;
            return true;
        }
    }
    fprintf(stderr, "vramtrace %s: --%s wants a share like 5%% or a size like 256MiB, not '%s'\n",
            cmd, name, arg);
    return false;
}

/* A time since the process started: seconds ("1.5", "+1.5s") or "250ms",
 * "40us", "7ns". */
static bool parse_instant(const char *arg, uint64_t *ns)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}};
    const char *num = arg[0] == '+' ? arg + 1 : arg;
    char *end;
    errno = 0;
    double v = strtod(num, &end);
    if (errno || end == num || !isfinite(v) || v < 0)
        return false;
    for (size_t k = 0; k < sizeof units / sizeof units[0]; k++)
        if (!strcmp(end, units[k].unit) && v * units[k].ns < 1.8e19) {
            *ns = (uint64_t)(v * units[k].ns);
            return true;
        }
    return false;
}

bool vt_cli_at(const char *cmd, const char *arg, bool phases, struct vt_cli_at *out)
{
    const char *what = phases ? "peak, oom:N (N from 1), a time like 1.5s or a phase's name"
                              : "peak, oom:N (N from 1) or a time like 1.5s";
    memset(out, 0, sizeof *out);
    if (!strcmp(arg, "peak")) {
        out->kind = VT_CLI_AT_PEAK;
        return true;
    }
    if (!strncmp(arg, "oom:", 4)) {
        out->kind = VT_CLI_AT_OOM;
        return vt_cli_uint(cmd, "at", what, arg + 4, 1, UINT32_MAX, &out->oom);
    }
    if (parse_instant(arg, &out->time_ns)) {
        out->kind = VT_CLI_AT_TIME;
        return true;
    }
    if (phases && *arg) {
        out->kind = VT_CLI_AT_PHASE;
        out->phase = arg;
        return true;
    }
    fprintf(stderr, "vramtrace %s: --at wants %s, not '%s'\n", cmd, what, arg);
    return false;
}

void vt_cli_stacks_init(struct vt_cli_stacks *s, FILE *out)
{
    *s = (struct vt_cli_stacks){.frames = 6, .width = vt_cli_text_width(out)};
}

int vt_cli_stack_option(const char *cmd, int c, const char *arg, struct vt_cli_stacks *s)
{
    uint64_t v;
    switch (c) {
    case 'f':
        if (!vt_cli_uint(cmd, "frames", NULL, arg, 0, 1000, &v))
            return -1;
        s->frames = (size_t)v;
        return 1;
    case VT_CLI_OPT_WIDTH:
        if (!vt_cli_uint(cmd, "width", NULL, arg, 0, 100000, &v))
            return -1;
        s->width = (size_t)v;
        return 1;
    case VT_CLI_OPT_FULL_STACKS:
        s->full = true;
        return 1;
    default:
        return 0;
    }
}

void vt_cli_symbols_init(struct vt_cli_symbols *s)
{
    memset(s, 0, sizeof *s);
    s->sym.debug_dirs = s->dirs;
}

int vt_cli_symbol_option(const char *cmd, int c, const char *arg, struct vt_cli_symbols *s)
{
    switch (c) {
    case VT_CLI_OPT_DEBUG_DIR:
        if (s->ndirs == VT_CLI_MAX_DEBUG_DIRS) {
            fprintf(stderr, "vramtrace %s: at most %d --debug-dir\n", cmd, VT_CLI_MAX_DEBUG_DIRS);
            return -1;
        }
        s->dirs[s->ndirs++] = arg;
        return 1;
    case VT_CLI_OPT_SYSROOT:
        s->sym.sysroot = arg;
        return 1;
    case VT_CLI_OPT_NO_SYMBOLS:
        s->sym.disabled = true;
        return 1;
    default:
        return 0;
    }
}

int vt_cli_bad_option(const char *cmd, char *const *argv, const char *shortopts)
{
    /* getopt_long has stepped past the offending word, unless a short
     * option inside a cluster ("-qz") was refused. */
    const char *word = optind > 0 ? argv[optind - 1] : "";
    bool is_short = optopt > 0 && optopt < 256 && strchr(shortopts, optopt) != NULL;
    char name[64];
    const char *lead = "unknown option", *tail = "";
    if (!strncmp(word, "--", 2)) {
        size_t len = strcspn(word, "=");
        snprintf(name, sizeof name, "%.*s", (int)len, word);
        if (optopt != 0)
            lead = "option", tail = word[len] == '=' ? " takes no value" : " needs a value";
    } else {
        snprintf(name, sizeof name, "-%c", optopt > 0 && optopt < 256 ? optopt : '?');
        if (is_short)
            lead = "option", tail = " needs a value";
    }
    fprintf(stderr, "vramtrace %s: %s '%s'%s (vramtrace %s --help)\n", cmd, lead, name, tail, cmd);
    return 2;
}
