/* `vramtrace simulate [OPTIONS] INPUT`: replay a tensor-level stream through
 * the caching allocator model under several settings and capacities. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_options.h"
#include "commands.h"
#include "sim_report.h"

#define MAX_ALLOCATORS 16
#define MAX_CAPACITIES 16

static void simulate_usage(FILE *out)
{
    fputs("usage: vramtrace simulate [OPTIONS] INPUT\n"
          "Replay the allocations of INPUT (a PyTorch memory snapshot, or a tensor-level vramtrace\n"
          "trace) through a model of PyTorch's CUDA caching allocator.\n\n"
          "  -a, --allocator SPEC   'recorded' (the snapshot's own settings; the default), or\n"
          "                         pytorch[:OPTIONS] with PYTORCH_CUDA_ALLOC_CONF syntax, e.g.\n"
          "                         pytorch:max_split_size_mb:128,expandable_segments:True\n"
          "                         (repeatable: runs side by side)\n"
          "  -c, --capacity SIZE    device memory for the process, e.g. 24GiB, 16000MiB, 80GB\n"
          "                         (repeatable; default unlimited)\n"
          "  -m, --min-capacity     also search the smallest capacity that runs without failure\n"
          "  -d, --device N         device of the input (default: the first with events)\n"
          "      --samples N        rows of the timeline (default 12, 0: none, max 200)\n"
          "  -f, --frames N         Python frames shown per stack (default 6, 0: all)\n"
          "  -j, --json             JSON instead of text (see docs/user/SNAPSHOTS.md)\n"
          "      --model-addresses  snapshot input: new segments get the model's own addresses\n"
          "                         (default: where the recorded segment_alloc put them)\n"
          "  -h, --help             this help\n\n"
          "Exit status: 0 (also when a run fails: that is a result), 2 on bad usage or input.\n\n"
          "example: would it fit in 24 GiB with expandable segments?\n"
          "  vramtrace simulate -a recorded -a pytorch:expandable_segments:True -c 24GiB -m \\\n"
          "                     snapshot.pickle\n",
          out);
}

static bool parse_allocator(const char *spec, const struct vt_sim_input *in, struct vt_sim_case *c,
                            char *err, size_t errlen)
{
    snprintf(c->label, sizeof c->label, "%s", spec);
    vt_alloc_config_default(&c->cfg);
    if (!strcmp(spec, "recorded")) {
        if (in->has_recorded_cfg)
            c->cfg = in->recorded_cfg;
        return true;
    }
    if (!strncmp(spec, "pytorch", 7) && (spec[7] == 0 || spec[7] == ':'))
        return vt_alloc_config_parse(&c->cfg, spec[7] ? spec + 8 : "", err, errlen);
    snprintf(err, errlen, "'%s': expected 'recorded' or pytorch[:OPTIONS]", spec);
    return false;
}

int vt_cmd_simulate(int argc, char **argv)
{
    enum { OPT_SAMPLES = 256, OPT_MODEL_ADDRESSES };
    static const struct option opts[] = {
        {"allocator", required_argument, NULL, 'a'},
        {"capacity", required_argument, NULL, 'c'},
        {"min-capacity", no_argument, NULL, 'm'},
        {"device", required_argument, NULL, 'd'},
        {"samples", required_argument, NULL, OPT_SAMPLES},
        {"frames", required_argument, NULL, 'f'},
        {"json", no_argument, NULL, 'j'},
        {"model-addresses", no_argument, NULL, OPT_MODEL_ADDRESSES},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *allocators[MAX_ALLOCATORS];
    uint64_t capacities[MAX_CAPACITIES];
    size_t nalloc = 0, ncap = 0;
    bool min_capacity = false;
    long device = -1;
    struct vt_sim_report_options ro = {.text_frames = 6};
    size_t samples = 12;
    int c;
    optind = 1;
    static const char shortopts[] = "a:c:md:f:jh";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    uint64_t v;
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            if (nalloc == MAX_ALLOCATORS) {
                fprintf(stderr, "vramtrace simulate: at most %d --allocator\n", MAX_ALLOCATORS);
                return 2;
            }
            allocators[nalloc++] = optarg;
            break;
        case 'c':
            if (ncap == MAX_CAPACITIES) {
                fprintf(stderr, "vramtrace simulate: at most %d --capacity\n", MAX_CAPACITIES);
                return 2;
            }
            if (!vt_cli_size("simulate", "capacity", optarg, &capacities[ncap]))
                return 2;
            ncap++;
            break;
        case 'm':
            min_capacity = true;
            break;
        case 'd':
            if (!vt_cli_uint("simulate", "device", "a device ordinal", optarg, 0, 1023, &v))
                return 2;
            device = (long)v;
            break;
        case OPT_SAMPLES:
            if (!vt_cli_uint("simulate", "samples", NULL, optarg, 0, 200, &v))
                return 2;
            samples = (size_t)v;
            break;
        case 'f':
            if (!vt_cli_uint("simulate", "frames", NULL, optarg, 0, 1000, &v))
                return 2;
            ro.text_frames = (size_t)v;
            break;
        case 'j':
            ro.json = true;
            break;
        case OPT_MODEL_ADDRESSES:
            vt_sim_use_recorded_addresses = false;
            break;
        case 'h':
            simulate_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("simulate", argv, shortopts);
        }
    }
    if (optind != argc - 1) {
        fputs(optind >= argc ? "vramtrace simulate: no input given\n"
                             : "vramtrace simulate: one input at a time\n",
              stderr);
        simulate_usage(stderr);
        return 2;
    }
    struct vt_sim_input in;
    char err[512];
    if (vt_sim_input_load(&in, argv[optind], device, err, sizeof err)) {
        fprintf(stderr, "vramtrace: %s\n", err);
        vt_sim_input_free(&in);
        return 2;
    }
    if (nalloc == 0)
        allocators[nalloc++] = "recorded";
    if (ncap == 0)
        capacities[ncap++] = 0;
    size_t ncases = nalloc * ncap;
    struct vt_sim_case *cases = calloc(ncases, sizeof *cases);
    int status = cases ? 0 : 2;
    for (size_t a = 0; a < nalloc && status == 0; a++) {
        struct vt_sim_case proto;
        if (!parse_allocator(allocators[a], &in, &proto, err, sizeof err)) {
            fprintf(stderr, "vramtrace simulate: --allocator %s\n", err);
            status = 2;
            break;
        }
        for (size_t k = 0; k < ncap && status == 0; k++) {
            struct vt_sim_case *sc = &cases[a * ncap + k];
            *sc = proto;
            sc->capacity = capacities[k];
            if (!vt_sim_run(&in, &sc->cfg, sc->capacity, samples, &sc->res)) {
                fprintf(stderr, "vramtrace simulate: %s\n", sc->res.error);
                status = 2;
            }
            if (min_capacity && k == 0) {
                sc->has_min_capacity = true;
                sc->min_capacity = vt_sim_min_capacity(&in, &sc->cfg);
            }
        }
    }
    if (status == 0) {
        if (ro.json)
            vt_sim_report_json(&in, cases, ncases, stdout);
        else
            vt_sim_report_text(&in, cases, ncases, &ro, stdout);
    }
    free(cases);
    vt_sim_input_free(&in);
    return status;
}
