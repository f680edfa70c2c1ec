/* `vramtrace`: dispatch to the subcommands (run, report, dump, simulate, export, diff, fit, top). */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "heap_pages.h"
#include "report_html.h"
#include "version.h"
#include "vramtrace/trace_format.h"

#ifndef VT_VERSION
#define VT_VERSION "unknown"
#endif

#define VT_COMMANDS(X)                                                          \
    X("run", vt_cmd_run, "run a command under the tracer and list its traces") \
    X("report", vt_cmd_report, "explain peaks and out-of-memory failures")    \
    X("dump", vt_cmd_dump, "print every record of a trace")                   \
    X("simulate", vt_cmd_simulate, "replay allocations through PyTorch's caching allocator model") \
    X("export", vt_cmd_export, "write a trace for Perfetto, memory_viz or flame graphs") \
    X("diff", vt_cmd_diff, "compare two runs: peaks, phases, call sites")          \
    X("fit", vt_cmd_fit, "the largest batch or sequence length that fits, from short runs") \
    X("top", vt_cmd_top, "watch running processes' GPU memory as their traces are written")

static void usage(FILE *out)
{
    fputs("usage: vramtrace COMMAND [OPTIONS] [ARGS]\n"
          "Record and explain GPU memory use of unmodified CUDA programs.\n\n"
          "commands:\n",
          out);
#define AS_HELP(name, fn, help) fprintf(out, "  %-8s %s\n", name, help);
    VT_COMMANDS(AS_HELP)
    fputs("\n  vramtrace COMMAND --help    options of one command\n"
          "  vramtrace --version\n\n"
          "example:\n"
          "  vramtrace run -- python train.py\n"
          "  vramtrace report vramtrace.12345.vtrace\n",
          out);
}

/* The analyzer's memory comes and goes by the group: a job's group of 64
 * traces allocates its chunk buffers and note queues (about 150 MB at
 * 100,000 events a trace) and frees them when it ends. glibc gave them back
 * to the kernel at each end and faulted them in again at the next start
 * (360,000 minor faults, 0.9 s of system time in 7.7 s for 1024x100k),
 * and a second thread's arena kept a second heap (470 MiB with two threads,
 * 425 with one). One arena (no allocation is on a per-event path), blocks
 * up to 32 MiB from the heap, and up to 64 MiB kept free at its top. */
static void tune_allocator(void)
{
    mallopt(M_ARENA_MAX, 1);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 64 << 20);
    vt_heap_pages_init();
}

int main(int argc, char **argv)
{
    tune_allocator();
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("vramtrace %s (commit %s, trace format %d)\n", VT_VERSION, VT_COMMIT,
               VT_FORMAT_VERSION);
        printf("HTML report (report --html): %s\n",
               vt_report_html_built() ? "built in" : "not built (configured without it: -Dhtml)");
        return 0;
    }
#define AS_DISPATCH(name, fn, help) \
    if (!strcmp(cmd, name))         \
        return fn(argc - 1, argv + 1);
    VT_COMMANDS(AS_DISPATCH)
    fprintf(stderr, "vramtrace: unknown command '%s' (vramtrace --help)\n", cmd);
    return 2;
}
