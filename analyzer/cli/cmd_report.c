/* `vramtrace report [options] TRACE... | DIR`: options and exit status. */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli_options.h"
#include "report.h"
#include "input_files.h"
#include "job_summary.h"
#include "report_document.h"
#include "report_html.h"
#include "run_traces.h"
#include "snapshot.h"


static void report_usage(FILE *out)
{
    fputs("usage: vramtrace report [OPTIONS] TRACE... | SNAPSHOT... | SUMMARY... | DIR...\n"
          "Explain the peaks and allocation failures of traces and PyTorch memory snapshots, in\n"
          "any mix (a directory stands for its *.vtrace, *.pickle and *.summary.json files), or\n"
          "the job of the summaries written by --summary on each node.\n\n"
          "  -n, --top N          rows per table of stacks (default 10)\n"
          VT_CLI_STACK_HELP
          "  -p, --phase NAME     only this phase, with its top stacks\n"
          "      --at WHEN        text: each device's live set at TIME (seconds after the\n"
          "                       process started: 1.5, 1.5s, 250ms) or right after the\n"
          "                       Nth failed allocation (oom:N), instead of the peak; a\n"
          "                       phase's name is --phase NAME, peak the default\n"
          "  -d, --device N       only device ordinal N\n"
          "  -P, --pid PID        only this process\n"
          "  -r, --rank N         only the processes of rank N (RANK, OMPI_COMM_WORLD_RANK,\n"
          "                       PMI_RANK or SLURM_PROCID)\n"
          "  -j, --json           JSON instead of text (see docs/user/REPORT.md)\n"
          "      --html FILE      write an interactive page to FILE (one file, opens offline;\n"
          "                       - for stdout)\n"
          "      --summary FILE   write this node's part of the job as a small JSON summary to\n"
          "                       FILE (- for stdout); `vramtrace report` over the summaries of\n"
          "                       every node prints the job as over all its traces\n"
          "      --resolution T   the summary's timeline column (default 10s; 1s, 5m...)\n"
          VT_CLI_SYMBOL_HELP
          "  -h, --help           this help\n\n"
          "Traces of different `vramtrace run` sessions are reported as separate jobs.\n\n"
          "Exit status: 0; 3 if the report was written but some trace files were skipped or\n"
          "cut short by an error (the first 5 named on stderr with the reason, the rest\n"
          "counted; every one in --json's \"input_errors\"); 2 on bad usage, a\n"
          "filter that selects nothing, no readable trace, or a snapshot that is not readable.\n\n"
          "examples:\n"
          "  vramtrace report traces/                      every trace of a job: ranks, GPUs, failures\n"
          "  vramtrace report --phase eval --top 5 run.vtrace\n"
          "  vramtrace report --at 1.5s run.vtrace          what was live 1.5 s after it started\n"
          "  vramtrace report --json snapshot.pickle > report.json\n"
          "  vramtrace report --html report.html traces/\n"
          "  vramtrace report --summary node7.summary.json /local/traces    on each node\n"
          "  vramtrace report summaries/                  the job, from every node's summary\n",
          out);
}

/* The page went to a file: one line says where (nothing on stdout, which
 * a `--html -` page or a pipe may be reading). */
static void said_page(const char *path)
{
    struct stat st;
    char size[32];
    if (stat(path, &st) == 0)
        fprintf(stderr, "vramtrace report: wrote %s (%s); open it in a browser\n", path,
                vt_format_bytes((uint64_t)st.st_size, size, sizeof size));
}

/* The traces read once by the run stage, with what the chosen report
 * needs riding along (the live sets at --at TIME for text, the job
 * timelines for JSON, the page and a summary), then rendered. */
static int report_traces(const struct vt_input_files *traces, const struct vt_input_files *snapshots,
                         const struct vt_report_options *opt, bool json, const char *html,
                         const char *summary, uint64_t resolution_ns)
{
    if (html && !vt_report_html_available(stderr))
        return 2; /* before reading anything */
    bool text = !html && !json && !summary;
    struct vt_run_observers obs = {
        .job_timelines = !text,
        .job_resolution_ns = summary ? resolution_ns : VT_SUMMARY_RESOLUTION_NS,
        .moment_set = text && opt->moment.at == VT_REPORT_AT_TIME,
        .moment_ns = opt->moment.time_ns,
        .timeline_notes = html != NULL,
    };
    struct vt_run_result run;
    bool ran = traces->n > 0;
    if (ran && (vt_run_traces(traces->paths, traces->n, &obs, &run, stderr), run.unread)) {
        vt_run_result_free(&run);
        return 2;
    }
    struct vt_report_inputs in = {traces->paths, traces->n, snapshots->paths, snapshots->n};
    int status = summary ? vt_report_write_summary(&run, opt, summary, stderr)
                 : html  ? vt_report_document_html(ran ? &run : NULL, &in, opt, html, stderr)
                         : vt_report_document(ran ? &run : NULL, &in, opt, json, stdout, stderr);
    if (ran)
        vt_run_result_free(&run);
    return status;
}

/* The arguments' files, each a trace, a PyTorch memory snapshot or a
 * summary by its content (a pickle starts with the PROTO opcode 0x80, a
 * summary with {"vramtrace_summary"), never by its name; a directory
 * stands for its *.vtrace, *.pickle and *.summary.json files. */
static int report_inputs(char *const *args, size_t n, const struct vt_report_options *opt,
                         bool json, const char *html, const char *summary,
                         uint64_t resolution_ns)
{
    static const char *const suffixes[] = {".vtrace", ".pickle", ".summary.json", NULL};
    struct vt_input_files files = {0}, traces = {0}, snapshots = {0}, summaries = {0};
    int status = 0;
    for (size_t i = 0; i < n; i++)
        if (!vt_input_files_add(&files, args[i], suffixes, "*.vtrace, *.pickle or *.summary.json",
                                stderr))
            status = 2;
    for (size_t i = 0; i < files.n && status == 0; i++) {
        /* one look at the file tells all three kinds apart */
        char head[VT_JOB_SUMMARY_HEAD + 1] = {0};
        size_t n = vt_input_file_head(files.paths[i], head, VT_JOB_SUMMARY_HEAD);
        struct vt_input_files *kind = vt_snap_head_is_pickle(head, n)      ? &snapshots
                                      : vt_job_summary_head_is(head, n) ? &summaries
                                                                        : &traces;
        if (!vt_input_files_take(kind, files.paths[i]))
            status = 2;
        files.paths[i] = NULL;
    }
    if (status == 0 && summaries.n && (traces.n || snapshots.n || summary)) {
        fprintf(stderr, "vramtrace report: %s is a summary: summaries are reported on their own "
                        "(text, --json or --html), not with traces, snapshots or --summary\n",
                summaries.paths[0]);
        status = 2;
    }
    if (status == 0 && summary && (snapshots.n || html || json || !traces.n)) {
        fputs(traces.n ? "vramtrace report: --summary takes traces only (no snapshots, --html or --json)\n"
                       : "vramtrace report: --summary: no trace given\n",
              stderr);
        status = 2;
    }
    if (status == 0 && summaries.n)
        status = vt_report_summaries(summaries.paths, summaries.n, opt, json, html, stdout, stderr);
    else if (status == 0)
        status = report_traces(&traces, &snapshots, opt, json, html, summary, resolution_ns);
    if (html && strcmp(html, "-") && (status == 0 || status == 3))
        said_page(html);
    vt_input_files_free(&files);
    vt_input_files_free(&traces);
    vt_input_files_free(&snapshots);
    vt_input_files_free(&summaries);
    return status;
}

int vt_cmd_report(int argc, char **argv)
{
    enum { OPT_HTML = 256, OPT_SUMMARY, OPT_RESOLUTION, OPT_AT };
    static const struct option opts[] = {
        {"top", required_argument, NULL, 'n'},
        VT_CLI_STACK_OPTIONS,
        {"phase", required_argument, NULL, 'p'},
        {"at", required_argument, NULL, OPT_AT},
        {"device", required_argument, NULL, 'd'},
        {"pid", required_argument, NULL, 'P'},
        {"rank", required_argument, NULL, 'r'},
        {"json", no_argument, NULL, 'j'},
        {"html", required_argument, NULL, OPT_HTML},
        {"summary", required_argument, NULL, OPT_SUMMARY},
        {"resolution", required_argument, NULL, OPT_RESOLUTION},
        VT_CLI_SYMBOL_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct vt_report_options opt = {.layout.top = 10};
    struct vt_cli_stacks stacks;
    vt_cli_stacks_init(&stacks, stdout);
    struct vt_cli_symbols symbols;
    vt_cli_symbols_init(&symbols);
    bool json = false;
    const char *html = NULL, *summary = NULL;
    uint64_t resolution_ns = VT_SUMMARY_RESOLUTION_NS;
    struct vt_cli_at at = {.kind = VT_CLI_AT_PEAK};
    bool at_given = false;
    uint64_t v;
    int c;
    optind = 1;
    static const char shortopts[] = "n:f:p:d:P:r:jh";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 'n':
            if (!vt_cli_uint("report", "top", NULL, optarg, 1, VT_REPORT_MAX_TOP, &v))
                return 2;
            opt.layout.top = (size_t)v;
            break;
        case 'p':
            opt.select.phase = optarg;
            break;
        case 'd':
            if (!vt_cli_uint("report", "device", "a device ordinal", optarg, 0, INT32_MAX, &v))
                return 2;
            opt.select.has_device = true;
            opt.select.device = (int64_t)v;
            break;
        case 'P':
            if (!vt_cli_uint("report", "pid", "a process id", optarg, 0, UINT64_MAX, &v))
                return 2;
            opt.select.has_pid = true;
            opt.select.pid = v;
            break;
        case 'r':
            if (!vt_cli_uint("report", "rank", "a rank", optarg, 0, INT32_MAX, &v))
                return 2;
            opt.select.has_rank = true;
            opt.select.rank = v;
            break;
        case 'j':
            json = true;
            break;
        case OPT_HTML:
            html = optarg;
            break;
        case OPT_SUMMARY:
            summary = optarg;
            break;
        case OPT_AT:
            if (!vt_cli_at("report", optarg, true, &at))
                return 2;
            at_given = true;
            break;
        case OPT_RESOLUTION:
            if (!vt_cli_duration("report", "resolution", optarg, 1000000, 86400000000000ull,
                                 &resolution_ns))
                return 2;
            break;
        case 'h':
            report_usage(stdout);
            return 0;
        default: {
            int taken = vt_cli_stack_option("report", c, optarg, &stacks);
            if (!taken)
                taken = vt_cli_symbol_option("report", c, optarg, &symbols);
            switch (taken) {
            case 1:
                break;
            case 0:
                return vt_cli_bad_option("report", argv, shortopts);
            default:
                return 2;
            }
        }
        }
    }
    if (optind >= argc) {
        fputs("vramtrace report: no trace given\n", stderr);
        report_usage(stderr);
        return 2;
    }
    opt.sym = symbols.sym;
    opt.layout.text_frames = stacks.frames;
    opt.layout.width = stacks.width;
    opt.layout.full_stacks = stacks.full;
    if (html && json) {
        fputs("vramtrace report: --html and --json: choose one\n", stderr);
        return 2;
    }
    if (at_given && opt.select.phase) {
        fputs("vramtrace report: --at or --phase, not both\n", stderr);
        return 2;
    }
    if (at_given && (at.kind == VT_CLI_AT_TIME || at.kind == VT_CLI_AT_OOM) &&
        (json || html || summary)) {
        fputs("vramtrace report: --at TIME and --at oom:N are for the text report (--json has "
              "every failure's top_stacks; export --format folded --at takes any instant)\n",
              stderr);
        return 2;
    }
    if (at.kind == VT_CLI_AT_PHASE)
        opt.select.phase = at.phase; /* a phase's instant is its peak: --phase */
    opt.moment.at = at.kind == VT_CLI_AT_TIME ? VT_REPORT_AT_TIME
             : at.kind == VT_CLI_AT_OOM ? VT_REPORT_AT_OOM
                                        : VT_REPORT_AT_PEAK;
    opt.moment.time_ns = at.time_ns;
    opt.moment.oom = at.oom;
    return report_inputs(argv + optind, (size_t)(argc - optind), &opt, json, html, summary,
                         resolution_ns);
}
