/* `vramtrace diff [options] BEFORE AFTER`: options and exit status (the
 * comparison: analyzer/export/diff.c). */
#include "commands.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"
#include "diff.h"
#include "input_files.h"
#include "snapshot.h"

static void diff_usage(FILE *out)
{
    fputs("usage: vramtrace diff [OPTIONS] BEFORE AFTER\n"
          "Compare two runs: each a trace, a directory (its *.vtrace and *.pickle files) or a\n"
          "PyTorch memory snapshot. Per process (paired by program and rank; an OOM\n"
          "snapshot beside its trace is its process's) and device: the peak's change, each\n"
          "phase's, and per call site at the peak (paired by function and file: a moved\n"
          "line is the same site, a renamed one is said so) what is new, grew, shrank or\n"
          "is gone, biggest change first.\n\n"
          "      --fail-above X   exit status 1 when any peak shown (a process's on a\n"
          "                       device, a phase's) grew by more than X: a share of its\n"
          "                       BEFORE peak (5%) or a size with its unit (256MiB)\n"
          "  -n, --top N          call sites per device (default 10, 0: all)\n"
          VT_CLI_STACK_HELP
          "  -d, --device N       only device ordinal N\n"
          "  -j, --json           JSON instead of text (docs/user/REPORT.md, \"Exports and\n"
          "                       diff\")\n"
          VT_CLI_SYMBOL_HELP
          "                       (without symbols, sites are known by address: the runs\n"
          "                       of different builds do not match)\n"
          "  -h, --help           this help\n\n"
          "Exit status: 0; 1 when --fail-above was exceeded; 2 on bad usage or an input that\n"
          "is not a readable trace or snapshot.\n\n"
          "examples:\n"
          "  vramtrace diff main/ branch/                     two runs' traces, per rank and GPU\n"
          "  vramtrace diff --fail-above 5% base.vtrace new.vtrace   a CI memory-regression gate\n"
          "  vramtrace diff --json --fail-above 256MiB before.pickle after.pickle\n",
          out);
}

/* The traces and snapshots one argument stands for. */
static bool side_inputs(const char *arg, struct vt_input_files *traces,
                        struct vt_input_files *snaps)
{
    static const char *const suffixes[] = {".vtrace", ".pickle", NULL};
    struct vt_input_files files = {0};
    bool ok = vt_input_files_add(&files, arg, suffixes, "*.vtrace or *.pickle", stderr);
    for (size_t i = 0; ok && i < files.n; i++) {
        ok = vt_input_files_take(vt_snap_is_pickle(files.paths[i]) ? snaps : traces,
                                 files.paths[i]);
        files.paths[i] = NULL;
    }
    vt_input_files_free(&files);
    return ok;
}

/* One side read and reduced: its traces by the run stage, held only
 * until the profile has what it needs of them, so that one side's traces
 * are in memory at a time. */
static int profile_side(struct vt_diff_profile **out, const struct vt_diff_side *side,
                        const struct vt_diff_options *opt)
{
    if (!side->ntraces)
        return vt_diff_profile_build(out, side, NULL, opt, stderr);
    struct vt_run_result run;
    vt_run_traces(side->traces, side->ntraces, NULL, &run, stderr);
    int status = vt_diff_profile_build(out, side, &run, opt, stderr);
    vt_run_result_free(&run);
    return status;
}

int vt_cmd_diff(int argc, char **argv)
{
    enum { OPT_FAIL_ABOVE = 256 };
    static const struct option opts[] = {
        {"fail-above", required_argument, NULL, OPT_FAIL_ABOVE},
        {"top", required_argument, NULL, 'n'},
        VT_CLI_STACK_OPTIONS,
        {"device", required_argument, NULL, 'd'},
        {"json", no_argument, NULL, 'j'},
        VT_CLI_SYMBOL_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct vt_diff_options opt = {.top = 10};
    struct vt_cli_stacks stacks;
    vt_cli_stacks_init(&stacks, stdout);
    struct vt_cli_symbols sym;
    vt_cli_symbols_init(&sym);
    uint64_t v;
    int c;
    optind = 1;
    static const char shortopts[] = "n:f:d:jh";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        int taken = vt_cli_symbol_option("diff", c, optarg, &sym);
        if (!taken)
            taken = vt_cli_stack_option("diff", c, optarg, &stacks);
        if (taken < 0)
            return 2;
        if (taken)
            continue;
        switch (c) {
        case OPT_FAIL_ABOVE:
            if (!vt_cli_size_or_percent("diff", "fail-above", optarg, &opt.limit_is_percent,
                                        &opt.limit_percent, &opt.limit_bytes))
                return 2;
            opt.has_limit = true;
            opt.limit_text = optarg;
            break;
        case 'n':
            if (!vt_cli_uint("diff", "top", NULL, optarg, 0, 1000000, &v))
                return 2;
            opt.top = (size_t)v;
            break;
        case 'd':
            if (!vt_cli_uint("diff", "device", "a device ordinal", optarg, 0, INT32_MAX, &v))
                return 2;
            opt.has_device = true;
            opt.device = (int64_t)v;
            break;
        case 'j':
            opt.json = true;
            break;
        case 'h':
            diff_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("diff", argv, shortopts);
        }
    }
    if (argc - optind != 2) {
        fputs("vramtrace diff: wants two runs, BEFORE and AFTER\n", stderr);
        diff_usage(stderr);
        return 2;
    }
    opt.sym = sym.sym;
    opt.frames = stacks.frames;
    opt.width = stacks.width;
    opt.full_stacks = stacks.full;
    struct vt_input_files t[2] = {{0}}, s[2] = {{0}};
    int status = 2;
    if (side_inputs(argv[optind], &t[0], &s[0]) && side_inputs(argv[optind + 1], &t[1], &s[1])) {
        struct vt_diff_side before = {argv[optind], t[0].paths, t[0].n, s[0].paths, s[0].n};
        struct vt_diff_side after = {argv[optind + 1], t[1].paths, t[1].n, s[1].paths, s[1].n};
        struct vt_diff_profile *pb = NULL, *pa = NULL;
        status = profile_side(&pb, &before, &opt);
        if (status == 0)
            status = profile_side(&pa, &after, &opt);
        if (status == 0)
            status = vt_diff_write(pb, pa, &before, &after, &opt, stdout, stderr);
        vt_diff_profile_free(pb);
        vt_diff_profile_free(pa);
    }
    for (int k = 0; k < 2; k++) {
        vt_input_files_free(&t[k]);
        vt_input_files_free(&s[k]);
    }
    return status;
}
