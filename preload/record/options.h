/*
 * Every environment option of libvramtrace.so, in one table.
 *
 * Parsed once at start; a bad value costs one line on stderr and the default
 * is used. VRAMTRACE_VERBOSE=1 prints the table with the values in effect.
 */
#ifndef VRAMTRACE_PRELOAD_OPTIONS_H
#define VRAMTRACE_PRELOAD_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vramtrace/trace_format.h"

#define VT_OPT_STR_(x) #x
#define VT_OPT_STR(x) VT_OPT_STR_(x)

enum vt_option_kind { VT_OPT_STRING, VT_OPT_UINT, VT_OPT_BOOL };

/* X(NAME, kind, default, min, max, description): the variable is
 * VRAMTRACE_<NAME>; min/max bound numeric values. */
#define VT_OPTION_LIST(X)                                                        \
    X(OUTPUT, VT_OPT_STRING, "vramtrace.%h.%p.vtrace", 0, 0,                     \
      "trace path template: %p pid, %h host, %r rank, %l local rank, %% %")  \
    X(STACK_DEPTH, VT_OPT_UINT, "64", 0, 256,                                    \
      "native stack frames recorded per event (0: none)")                        \
    X(FAST_UNWIND, VT_OPT_BOOL, "1", 0, 1,                                       \
      "walk stacks with the tracer's cached unwind rules (0: libunwind for all)") \
    X(FLUSH_MS, VT_OPT_UINT, "100", 1, 60000,                                    \
      "how often the writer thread writes a chunk, in milliseconds")            \
    X(TIME_UNIT_NS, VT_OPT_UINT, VT_OPT_STR(VT_TIME_UNIT_NS_DEFAULT), 1, 1000000000, \
      "recorded times are rounded down to this many nanoseconds (1: exact)")     \
    X(TIME_SLACK_US, VT_OPT_UINT, VT_OPT_STR(VT_TIME_SLACK_US_DEFAULT), 0, 1000000, \
      "in a dense run of events, times may be written up to this many microseconds early (0: none)") \
    X(CLOCK, VT_OPT_STRING, "auto", 0, 0,                                        \
      "event clock: auto (the TSC when it is the kernel's clocksource), tsc, monotonic") \
    X(BUFFER_KB, VT_OPT_UINT, "128", 16, 65536,                                  \
      "size of one per-thread event buffer block, in KiB")                       \
    X(VERBOSE, VT_OPT_BOOL, "0", 0, 1, "print the options and the trace path")   \
    X(QUIET, VT_OPT_BOOL, "0", 0, 1,                                             \
      "no line at exit (said only on a terminal, by the first traced process)")  \
    X(DISABLE, VT_OPT_BOOL, "0", 0, 1, "do nothing at all")

enum vt_option_id {
#define VT_OPTION_ENUM(name, kind, def, min, max, desc) VT_OPTION_##name,
    VT_OPTION_LIST(VT_OPTION_ENUM)
#undef VT_OPTION_ENUM
    VT_OPTION_COUNT_
};

struct vt_options {
    const char *str[VT_OPTION_COUNT_]; /* the text in effect (env or default) */
    uint64_t num[VT_OPTION_COUNT_];    /* its value for UINT/BOOL options */
};

/* Looks a variable up; getenv in the library, a table in tests. */
typedef const char *(*vt_env_lookup)(const char *name, void *ctx);

/* Fills o from the environment. Each bad value writes one line to errfd
 * (-1: none) and keeps the default. Returns the number of bad values. */
int vt_options_parse(struct vt_options *o, vt_env_lookup lookup, void *ctx, int errfd);

/* Writes one line per option ("vramtrace: VRAMTRACE_X=value (description)"). */
void vt_options_print(const struct vt_options *o, int fd);

/* The facts a path template can use. */
struct vt_path_facts {
    long pid;
    const char *host;
    const char *rank;  /* NULL or "": "norank" */
    const char *local_rank; /* NULL or "": "nolocal" */
};

/* Expands %p %h %r %l %% in tmpl into out (unknown %x are kept as they are;
 * '/' in host and ranks become '_'). Returns 0, or -1 if out is too small. */
int vt_expand_path(const char *tmpl, const struct vt_path_facts *f, char *out, size_t outlen);

/* The rank a launcher gave this process (RANK, OMPI_COMM_WORLD_RANK,
 * PMI_RANK, SLURM_PROCID, first set wins), or NULL. */
const char *vt_rank_from_env(vt_env_lookup lookup, void *ctx);
/* Its rank on this node (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, SLURM_LOCALID, first set wins), or NULL. */
const char *vt_local_rank_from_env(vt_env_lookup lookup, void *ctx);

/* vt_say, the tracer's one-line output, is defined in say.c and declared
 * in recorder.h (the hooks use it too). */

#endif
