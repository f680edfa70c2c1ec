/* `vramtrace export --format FORMAT [options] TRACE... | DIR`: options,
 * the run stage's one read of the traces, the output file and exit status
 * (the exporters, which render the read's result: analyzer/export/). */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"
#include "export.h"
#include "output_file.h"
#include "input_files.h"
#include "run_traces.h"
#include "snapshot.h"

static void export_usage(FILE *out)
{
    fputs("usage: vramtrace export --format FORMAT [OPTIONS] TRACE... | DIR\n"
          "Write the traces' allocations in a file another viewer opens (a directory stands\n"
          "for every *.vtrace file in it).\n\n"
          "      --format FORMAT  one of:\n",
          out);
    for (int f = 0; f < VT_EXPORT_FORMAT_COUNT_; f++)
        fprintf(out, "                         %-11s %s\n",
                vt_export_format_name((enum vt_export_format)f),
                vt_export_format_help((enum vt_export_format)f));
    fputs("  -o, --output FILE    write FILE (whole or not at all; default: standard output)\n"
          "      --at WHEN        folded: peak (default), oom:N (right after the Nth failed\n"
          "                       allocation) or TIME (seconds after the process started:\n"
          "                       1.5, 1.5s, 250ms); memory-viz: the trace up to then, the\n"
          "                       segments then\n"
          "      --since TIME     memory-viz: the trace from TIME after the process started\n"
          "      --until TIME     memory-viz: the trace up to TIME; the segments then\n"
          "      --max-entries N  memory-viz: the latest N trace entries (default 100000,\n"
          "                       PyTorch's own default)\n"
          "      --all            everything: perfetto every counter sample (default: at a\n"
          "                       screen's resolution past 200000), memory-viz every entry;\n"
          "                       the size is said first\n"
          "  -p, --phase NAME     folded: the live set at this phase's peak\n"
          "  -d, --device N       only device ordinal N\n"
          "  -P, --pid PID        only this process (memory-viz: the one process of the file)\n"
          VT_CLI_SYMBOL_HELP
          "  -h, --help           this help\n\n"
          "Exit status: 0, or 2 on bad usage, an unreadable input, --at oom:N when no process\n"
          "failed N times, or an output that cannot be written (nothing is left behind then).\n"
          "An input without device memory gives a valid empty file and a note on stderr.\n\n"
          "examples:\n"
          "  vramtrace export --format perfetto -o job.json traces/      open in ui.perfetto.dev\n"
          "  vramtrace export --format memory-viz -o run.pickle run.vtrace   pytorch.org/memory_viz\n"
          "  vramtrace export --format folded run.vtrace | flamegraph.pl > peak.svg\n",
          out);
}

/* --at as every command takes it (cli_options.h), in the exporters' terms. */
static bool parse_at(const char *arg, struct vt_export_options *opt)
{
    struct vt_cli_at at;
    if (!vt_cli_at("export", arg, false, &at))
        return false;
    opt->at = at.kind == VT_CLI_AT_OOM ? VT_AT_OOM : at.kind == VT_CLI_AT_TIME ? VT_AT_TIME
                                                                               : VT_AT_PEAK;
    opt->oom = at.oom;
    opt->time_ns = at.time_ns;
    return true;
}

/* The traces the arguments stand for; a snapshot is refused by name. */
static bool export_inputs(char *const *args, size_t n, struct vt_input_files *files)
{
    static const char *const suffixes[] = {".vtrace", NULL};
    for (size_t i = 0; i < n; i++)
        if (!vt_input_files_add(files, args[i], suffixes, "*.vtrace", stderr))
            return false;
    for (size_t i = 0; i < files->n; i++)
        if (vt_snap_is_pickle(files->paths[i])) {
            fprintf(stderr,
                    "vramtrace export: %s is a PyTorch memory snapshot, not a trace: "
                    "memory_viz opens it as it is, and `vramtrace report` reports it\n",
                    files->paths[i]);
            return false;
        }
    return true;
}

/* The exporter's plan, the run stage's one read with the observers it
 * asks for, and the file from the result. */
static int export_traces(enum vt_export_format fmt, const struct vt_input_files *files,
                         const struct vt_export_options *opt, FILE *out)
{
    struct vt_run_observers obs = {0};
    FILE *said;
    struct vt_export *x = vt_export_plan(fmt, files->paths, files->n, opt, &obs, &said, stderr);
    if (!x)
        return 2;
    struct vt_run_result run;
    vt_run_traces(files->paths, files->n, &obs, &run, said);
    int status = vt_export_write(x, &run, out, stderr);
    vt_export_free(x);
    vt_run_result_free(&run);
    return status;
}

int vt_cmd_export(int argc, char **argv)
{
    /* --format has no short flag: -f is --frames in report and simulate */
    enum { OPT_AT = 256, OPT_FORMAT, OPT_ALL, OPT_SINCE, OPT_UNTIL, OPT_MAX_ENTRIES };
    static const struct option opts[] = {
        {"format", required_argument, NULL, OPT_FORMAT},
        {"output", required_argument, NULL, 'o'},
        {"at", required_argument, NULL, OPT_AT},
        {"all", no_argument, NULL, OPT_ALL},
        {"since", required_argument, NULL, OPT_SINCE},
        {"until", required_argument, NULL, OPT_UNTIL},
        {"max-entries", required_argument, NULL, OPT_MAX_ENTRIES},
        {"phase", required_argument, NULL, 'p'},
        {"device", required_argument, NULL, 'd'},
        {"pid", required_argument, NULL, 'P'},
        VT_CLI_SYMBOL_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct vt_export_options opt = {.at = VT_AT_PEAK};
    struct vt_cli_symbols sym;
    vt_cli_symbols_init(&sym);
    const char *output = NULL, *format = NULL;
    bool at_given = false;
    uint64_t v;
    int c;
    optind = 1;
    static const char shortopts[] = "o:p:d:P:h";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        int taken = vt_cli_symbol_option("export", c, optarg, &sym);
        if (taken < 0)
            return 2;
        if (taken)
            continue;
        switch (c) {
        case OPT_FORMAT:
            format = optarg;
            break;
        case 'o':
            output = optarg;
            break;
        case OPT_AT:
            if (!parse_at(optarg, &opt))
                return 2;
            at_given = true;
            break;
        case OPT_ALL:
            opt.all = true;
            break;
        case OPT_SINCE:
            if (!vt_cli_duration("export", "since", optarg, 0, UINT64_MAX / 2, &opt.since_ns))
                return 2;
            opt.has_since = true;
            break;
        case OPT_UNTIL:
            if (!vt_cli_duration("export", "until", optarg, 0, UINT64_MAX / 2, &opt.until_ns))
                return 2;
            opt.has_until = true;
            break;
        case OPT_MAX_ENTRIES:
            if (!vt_cli_uint("export", "max-entries", NULL, optarg, 1, UINT32_MAX, &v))
                return 2;
            opt.max_entries = v;
            break;
        case 'p':
            opt.phase = optarg;
            break;
        case 'd':
            if (!vt_cli_uint("export", "device", "a device ordinal", optarg, 0, INT32_MAX, &v))
                return 2;
            opt.has_device = true;
            opt.device = (int64_t)v;
            break;
        case 'P':
            if (!vt_cli_uint("export", "pid", "a process id", optarg, 0, UINT64_MAX, &v))
                return 2;
            opt.has_pid = true;
            opt.pid = v;
            break;
        case 'h':
            export_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("export", argv, shortopts);
        }
    }
    enum vt_export_format fmt;
    if (!format) {
        fputs("vramtrace export: --format is required\n", stderr);
        export_usage(stderr);
        return 2;
    }
    if (!vt_export_format_parse(format, &fmt)) {
        fprintf(stderr, "vramtrace export: unknown format '%s'; formats:", format);
        for (int f = 0; f < VT_EXPORT_FORMAT_COUNT_; f++)
            fprintf(stderr, "%s %s", f ? "," : "", vt_export_format_name((enum vt_export_format)f));
        fputc('\n', stderr);
        return 2;
    }
    if (fmt == VT_EXPORT_MEMORY_VIZ && at_given) {
        /* memory-viz: --at is the window's end */
        if (opt.has_until) {
            fputs("vramtrace export: --at or --until, not both\n", stderr);
            return 2;
        }
        if (opt.at == VT_AT_TIME) {
            opt.has_until = true;
            opt.until_ns = opt.time_ns;
        } else {
            opt.until_at = true;
        }
        at_given = false;
    }
    if ((at_given || opt.phase) && fmt != VT_EXPORT_FOLDED) {
        fprintf(stderr, "vramtrace export: --at is for --format folded and memory-viz, "
                        "--phase for folded\n");
        return 2;
    }
    if ((opt.has_since || opt.has_until || opt.max_entries) && fmt != VT_EXPORT_MEMORY_VIZ) {
        fputs("vramtrace export: --since, --until and --max-entries are for --format "
              "memory-viz\n", stderr);
        return 2;
    }
    if (opt.all && opt.max_entries) {
        fputs("vramtrace export: --all or --max-entries, not both\n", stderr);
        return 2;
    }
    if (opt.has_since && opt.has_until && opt.until_ns < opt.since_ns) {
        fputs("vramtrace export: --until is before --since\n", stderr);
        return 2;
    }
    if (at_given && opt.phase) {
        fputs("vramtrace export: --at or --phase, not both\n", stderr);
        return 2;
    }
    if (optind >= argc) {
        fputs("vramtrace export: no trace given\n", stderr);
        export_usage(stderr);
        return 2;
    }
    opt.sym = sym.sym;
    struct vt_input_files files = {0};
    int status = 2;
    struct vt_output_file out;
    if (export_inputs(argv + optind, (size_t)(argc - optind), &files) &&
        vt_output_file_open(&out, output, "export", stderr)) {
        status = export_traces(fmt, &files, &opt, out.f);
        if (status == 0 && !vt_output_file_commit(&out, "export", stderr))
            status = 2;
        else if (status != 0)
            vt_output_file_abort(&out);
    }
    vt_input_files_free(&files);
    return status;
}
