/* `vramtrace fit [OPTIONS] NAME=VALUE:TRACES ...`: options, the runs'
 * arguments and exit status (the work: analyzer/fit/). */
#define _GNU_SOURCE
#include "commands.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"
#include "fit.h"
#include "input_files.h"

#define MAX_RUNS 64

static void fit_usage(FILE *out)
{
    fputs("usage: vramtrace fit [OPTIONS] NAME=VALUE:TRACES NAME=VALUE:TRACES ...\n"
          "The largest value of one parameter (batch, sequence length, layers) that fits,\n"
          "from two or more short runs of the same program that differ only in it. TRACES:\n"
          "a run's trace directory or trace files (several joined by commas). Each call\n"
          "site's bytes are fitted as a constant, linear or quadratic law of the value; the\n"
          "largest run, scaled by those laws, is replayed at each value tried.\n\n"
          "  -c, --capacity SIZE    the memory the process may use (default: the device's\n"
          "                         total less its contexts, as the trace recorded them)\n"
          "  -a, --allocator SPEC   replay through the model of PyTorch's caching allocator\n"
          "                         (for traces taken at tensor level): 'recorded' (the\n"
          "                         run's PYTORCH_CUDA_ALLOC_CONF) or pytorch[:OPTIONS];\n"
          "                         'none': the bytes asked for. Default: 'recorded' for\n"
          "                         runs traced with PYTORCH_NO_CUDA_MEMORY_CACHING=1,\n"
          "                         else 'none'\n"
          "      --at VALUE         the predicted peak and its parts at one value\n"
          "  -j, --json             JSON instead of text (docs/user/FIT.md)\n"
          "  -h, --help             this help\n\n"
          "Exit status: 0; 2 on bad usage or runs that cannot be matched (one run, runs\n"
          "that do not differ in one parameter, different programs).\n\n"
          "example:\n"
          "  vramtrace fit batch=1:run1/ batch=2:run2/ batch=4:run4/\n",
          out);
}

/* "batch=4:traces/b4" or "batch=4:a.vtrace,b.vtrace" */
static bool parse_run(const char *arg, struct vt_fit_run *run, struct vt_input_files *files)
{
    static const char *const suffixes[] = {".vtrace", NULL};
    const char *eq = strchr(arg, '=');
    const char *colon = eq ? strchr(eq, ':') : NULL;
    if (!eq || eq == arg || !colon || colon[1] == 0) {
        fprintf(stderr, "vramtrace fit: a run is NAME=VALUE:TRACES, not '%s'\n", arg);
        return false;
    }
    char *end;
    errno = 0;
    long long v = strtoll(eq + 1, &end, 10);
    if (errno || end != colon || end == eq + 1 || v < 0) {
        fprintf(stderr, "vramtrace fit: '%s': the value is a whole number >= 0\n", arg);
        return false;
    }
    run->name = strndup(arg, (size_t)(eq - arg));
    run->value = v;
    run->arg = arg;
    char *list = strdup(colon + 1);
    bool ok = run->name && list;
    for (char *save = NULL, *p = list ? strtok_r(list, ",", &save) : NULL; ok && p;
         p = strtok_r(NULL, ",", &save))
        ok = vt_input_files_add(files, p, suffixes, "*.vtrace", stderr);
    free(list);
    return ok;
}

static bool pick_allocator(const char *spec, const struct vt_fit_run *tpl,
                           struct vt_alloc_config *cfg)
{
    char err[256];
    vt_alloc_config_default(cfg);
    if (!strcmp(spec, "recorded")) {
        if (tpl->alloc_conf && !vt_alloc_config_parse(cfg, tpl->alloc_conf, err, sizeof err)) {
            fprintf(stderr, "vramtrace fit: the run's PYTORCH_CUDA_ALLOC_CONF: %s\n", err);
            return false;
        }
        return true;
    }
    if (!strncmp(spec, "pytorch", 7) && (spec[7] == 0 || spec[7] == ':')) {
        if (vt_alloc_config_parse(cfg, spec[7] ? spec + 8 : "", err, sizeof err))
            return true;
        fprintf(stderr, "vramtrace fit: --allocator: %s\n", err);
        return false;
    }
    fprintf(stderr,
            "vramtrace fit: --allocator wants 'recorded', pytorch[:OPTIONS] or 'none', not '%s'\n",
            spec);
    return false;
}

static int fit_runs(struct vt_fit_run *runs, size_t nruns, const char *allocator,
                    struct vt_fit_output *o, uint64_t capacity)
{
    struct vt_fit_model m;
    char err[512];
    if (vt_fit_model_build(&m, runs, nruns, err, sizeof err)) {
        fprintf(stderr, "vramtrace fit: %s\n", err);
        vt_fit_model_free(&m);
        return 2;
    }
    struct vt_fit_replay_options opt = {.capacity = capacity};
    if (!o->capacity_given)
        opt.capacity = vt_fit_default_capacity(m.tpl);
    int status = 0;
    /* PyTorch traced with its cache off: the tensors, which the real run
     * puts in the cache's segments. */
    if (!allocator && m.tpl->torch_tensors)
        allocator = "recorded";
    if (allocator && strcmp(allocator, "none") != 0) {
        opt.model = true;
        o->allocator = allocator;
        if (!pick_allocator(allocator, m.tpl, &opt.cfg))
            status = 2;
    }
    if (!status && opt.capacity == 0) {
        fputs("vramtrace fit: the trace does not say the device's memory: give --capacity\n",
              stderr);
        status = 2;
    }
    struct vt_fit_answer a = {0};
    struct vt_fit_eval at = {0};
    bool ok = true;
    if (!status) {
        ok = o->has_at ? vt_fit_eval_at(&m, &opt, o->at, &at)
                       : vt_fit_search(&m, &opt, &a, err, sizeof err);
        if (!ok) {
            fprintf(stderr, "vramtrace fit: %s\n", o->has_at ? at.error : err);
            status = 2;
        }
    }
    if (!status) {
        if (o->json)
            vt_fit_write_json(stdout, &m, &opt, o, &a, o->has_at ? &at : NULL);
        else
            vt_fit_write_text(stdout, &m, &opt, o, &a, o->has_at ? &at : NULL);
    }
    vt_fit_eval_free(&at);
    vt_fit_answer_free(&a);
    vt_fit_model_free(&m);
    return status;
}

int vt_cmd_fit(int argc, char **argv)
{
    enum { OPT_AT = 256 };
    static const struct option opts[] = {
        {"capacity", required_argument, NULL, 'c'},
        {"allocator", required_argument, NULL, 'a'},
        {"at", required_argument, NULL, OPT_AT},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct vt_fit_output o = {0};
    uint64_t capacity = 0, v;
    const char *allocator = NULL;
    int c;
    optind = 1;
    static const char shortopts[] = "c:a:jh";
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            if (!vt_cli_size("fit", "capacity", optarg, &capacity))
                return 2;
            o.capacity_given = true;
            break;
        case 'a':
            allocator = optarg;
            break;
        case OPT_AT:
            if (!vt_cli_uint("fit", "at", "a whole number >= 1", optarg, 1,
                             (uint64_t)VT_FIT_VALUE_MAX, &v))
                return 2;
            o.has_at = true;
            o.at = (long long)v;
            break;
        case 'j':
            o.json = true;
            break;
        case 'h':
            fit_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("fit", argv, shortopts);
        }
    }
    size_t nruns = (size_t)(argc - optind);
    if (nruns < 2) {
        fputs("vramtrace fit: wants two or more runs, NAME=VALUE:TRACES, that differ in one "
              "parameter\n",
              stderr);
        return 2;
    }
    if (nruns > MAX_RUNS) {
        fputs("vramtrace fit: at most 64 runs\n", stderr);
        return 2;
    }
    struct vt_fit_run *runs = calloc(nruns, sizeof *runs);
    if (!runs)
        return 2;
    int status = 0;
    size_t loaded = 0;
    for (; loaded < nruns && !status; loaded++) {
        struct vt_input_files files = {0};
        char err[512];
        if (!parse_run(argv[optind + (int)loaded], &runs[loaded], &files)) {
            status = 2;
        } else if (vt_fit_run_load(&runs[loaded], files.paths, files.n, err, sizeof err)) {
            fprintf(stderr, "vramtrace fit: %s\n", err);
            status = 2;
        }
        vt_input_files_free(&files);
    }
    if (status) {
        for (size_t r = 0; r < nruns; r++)
            vt_fit_run_free(&runs[r]);
        free(runs);
        return status;
    }
    status = fit_runs(runs, nruns, allocator, &o, capacity);
    free(runs);
    return status;
}
