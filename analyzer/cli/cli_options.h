/*
 * Option values, parsed and checked the same way by every command. A bad
 * value is reported once on stderr as
 *   vramtrace CMD: --NAME wants WHAT, not 'VALUE'
 * and the caller exits 2.
 */
#ifndef VRAMTRACE_CLI_CLI_OPTIONS_H
#define VRAMTRACE_CLI_CLI_OPTIONS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "symbolize.h"

/* A decimal number in [min, max]. what describes it in the message (NULL:
 * "a number from MIN to MAX"). */
bool vt_cli_uint(const char *cmd, const char *name, const char *what, const char *arg, uint64_t min,
                 uint64_t max, uint64_t *out);

/* A size: plain bytes or B, or with a unit in any case: K, M, G, T and
 * KiB, MiB, GiB, TiB are binary (1024: "24G" = "24GiB" = "24gib", as
 * nvidia-smi and PyTorch count), KB, MB, GB, TB decimal (1000). Fractions
 * are allowed ("1.5GiB"). */
bool vt_cli_size(const char *cmd, const char *name, const char *arg, uint64_t *out);

/* A duration in [min_ns, max_ns]: a number with a unit, ns, us, ms, s, m
 * or h ("100ms", "1.5s"); a bare number is seconds. */
bool vt_cli_duration(const char *cmd, const char *name, const char *arg, uint64_t min_ns,
                     uint64_t max_ns, uint64_t *out);

/* Columns a line of text written to out may use: a terminal's width
 * (TIOCGWINSZ, else $COLUMNS), or VT_CLI_PIPE_WIDTH when out is not a
 * terminal (a file, a pipe: the same output wherever it runs). */
#define VT_CLI_PIPE_WIDTH 100
size_t vt_cli_text_width(FILE *out);

/* A share or a size: "5%" (any non-negative number before the %, sets
 * *is_percent and *percent) or a size with its unit as vt_cli_size takes
 * it (*bytes); a bare number is refused (a share or bytes?). */
bool vt_cli_size_or_percent(const char *cmd, const char *name, const char *arg, bool *is_percent,
                            double *percent, uint64_t *bytes);

/* --at, the same in `export` and `report`: "peak", "oom:N" (right after
 * the Nth failed allocation, N from 1), a time since the process started
 * ("1.5", "+1.5s", "250ms", "40us", "7ns") or, where phases is true, a
 * phase's name (the live set at its peak). */
enum vt_cli_at_kind { VT_CLI_AT_PEAK, VT_CLI_AT_OOM, VT_CLI_AT_TIME, VT_CLI_AT_PHASE };
struct vt_cli_at {
    enum vt_cli_at_kind kind;
    uint64_t oom, time_ns;
    const char *phase;
};
bool vt_cli_at(const char *cmd, const char *arg, bool phases, struct vt_cli_at *out);
/* Says the option getopt_long just refused (opterr = 0: getopt says
 * nothing itself) in one line with where to look, e.g. "vramtrace report:
 * unknown option '--x' (vramtrace report --help)", instead of the whole
 * usage. shortopts: the string given to getopt_long. Returns 2,
 * the exit status of bad usage. */
int vt_cli_bad_option(const char *cmd, char *const *argv, const char *shortopts);

/* The options of every command that writes stack lines in text (report,
 * diff): --frames, --width, --full-stacks; their getopt rows, help lines
 * and handling into a struct vt_cli_stacks. */
enum { VT_CLI_OPT_WIDTH = 0x1100, VT_CLI_OPT_FULL_STACKS };
#define VT_CLI_STACK_OPTIONS                                                 \
    {"frames", required_argument, NULL, 'f'},                                \
        {"width", required_argument, NULL, VT_CLI_OPT_WIDTH},                \
        {"full-stacks", no_argument, NULL, VT_CLI_OPT_FULL_STACKS}
#define VT_CLI_STACK_HELP                                                                   \
    "  -f, --frames N       frames shown per stack in text (default 6, 0: all)\n"           \
    "      --width N        columns a text stack line may use (default: the terminal's,\n" \
    "                       100 when not a terminal; 0: no limit)\n"                       \
    "      --full-stacks    text: every frame of every stack, as recorded (runtime,\n"     \
    "                       allocator and libc start-up frames too), whole lines\n"

struct vt_cli_stacks {
    size_t frames, width;
    bool full;
};

/* The defaults: 6 frames, the width of out (vt_cli_text_width). */
void vt_cli_stacks_init(struct vt_cli_stacks *s, FILE *out);
/* Takes option c if it is one of VT_CLI_STACK_OPTIONS: 1 taken, 0 not one
 * of them, -1 a bad value (said on stderr). */
int vt_cli_stack_option(const char *cmd, int c, const char *arg, struct vt_cli_stacks *s);

/* The options every command that shows frames takes (--debug-dir,
 * --sysroot, --no-symbols): their getopt rows, their help lines, and their
 * handling into a struct vt_symbolize_options. */
#define VT_CLI_MAX_DEBUG_DIRS 16
enum { VT_CLI_OPT_DEBUG_DIR = 0x1000, VT_CLI_OPT_SYSROOT, VT_CLI_OPT_NO_SYMBOLS };
#define VT_CLI_SYMBOL_OPTIONS                                                \
    {"debug-dir", required_argument, NULL, VT_CLI_OPT_DEBUG_DIR},           \
        {"sysroot", required_argument, NULL, VT_CLI_OPT_SYSROOT},           \
        {"no-symbols", no_argument, NULL, VT_CLI_OPT_NO_SYMBOLS}
#define VT_CLI_SYMBOL_HELP                                                                  \
    "      --debug-dir DIR  also look for binaries and debug info in DIR (repeatable)\n"    \
    "      --sysroot DIR    look for recorded binary paths under DIR first\n"              \
    "      --no-symbols     do not symbolize (addresses only)\n"

struct vt_cli_symbols {
    struct vt_symbolize_options sym;        /* debug_dirs points into dirs */
    const char *dirs[VT_CLI_MAX_DEBUG_DIRS + 1];
    size_t ndirs;
};

void vt_cli_symbols_init(struct vt_cli_symbols *s);
/* Takes option c if it is one of VT_CLI_SYMBOL_OPTIONS: 1 taken, 0 not one
 * of them, -1 a bad value (said on stderr). */
int vt_cli_symbol_option(const char *cmd, int c, const char *arg, struct vt_cli_symbols *s);

#endif
