/*
 * `vramtrace top [OPTIONS] [DIR|TRACE...]`: the processes of a running job
 * as their traces are written - device bytes now, peak, the last minute,
 * phase, growth per step, failures - refreshed every second (docs/user/TOP.md).
 * Options and the choice of view here; the model is analyzer/follow/, the
 * frame top_frame.c, the views top_batch.c and top_screen.c.
 */
#include "commands.h"

#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli_options.h"
#include "top_run.h"
#include "top_session.h"

#define TOP_BATCH_WIDTH 200 /* a log's lines: room for the COMMAND column */

/* -b on a terminal: its width, as the full screen takes it; a log or a
 * pipe (or a terminal that says none): TOP_BATCH_WIDTH. */
static size_t batch_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return TOP_BATCH_WIDTH;
}

static void top_usage(FILE *out)
{
    fputs("usage: vramtrace top [OPTIONS] [DIR|TRACE...]\n"
          "Watch the GPU memory of running processes as their traces are written: a row per\n"
          "process (device bytes now, peak, the last minute, phase, growth per step,\n"
          "failures), each GPU against its capacity, the job's first failure.\n"
          "Without arguments: the newest `vramtrace run` session of this host that still runs.\n\n"
          "  -d, --delay SECONDS  between frames (default 1; 0.5, 250ms...)\n"
          "  -n, --iterations N   this many frames, then exit\n"
          "  -b, --batch          frames of plain text on stdout (the default when stdout is\n"
          "                       not a terminal)\n"
          "  -s, --sort KEY       now (default), peak, growth or rank\n"
          "  -p, --pid PID        open this process: its live call sites, phase, last failure\n"
          "  -w, --width N        columns of a batch line (default: the terminal's, else 200)\n"
          VT_CLI_SYMBOL_HELP
          "  -h, --help           this help\n\n"
          "Keys (full screen): b, p, g, r sort by bytes now, peak, growth, rank; up/down choose\n"
          "a process, Enter opens it, Enter or Esc closes it; ? help; q quits.\n\n"
          "One host per view: on a job of many nodes run one top per node, and\n"
          "`vramtrace report --summary` on each for the whole job afterwards.\n\n"
          "Exit status: 0; 2 on bad usage or when there is nothing to watch.\n\n"
          "examples:\n"
          "  vramtrace top                          the job started last by `vramtrace run`\n"
          "  vramtrace top traces/                  every trace under traces/, as they come\n"
          "  vramtrace top -b -n 10 -d 5 traces/ > top.log\n",
          out);
}

static bool sort_key(const char *arg, enum vt_follow_sort *out)
{
    static const struct {
        const char *name;
        enum vt_follow_sort key;
    } keys[] = {{"now", VT_FOLLOW_SORT_NOW}, {"bytes", VT_FOLLOW_SORT_NOW},
                {"peak", VT_FOLLOW_SORT_PEAK}, {"growth", VT_FOLLOW_SORT_GROWTH},
                {"rank", VT_FOLLOW_SORT_RANK}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        if (!strcmp(arg, keys[k].name)) {
            *out = keys[k].key;
            return true;
        }
    fprintf(stderr, "vramtrace top: --sort wants now, peak, growth or rank, not '%s'\n", arg);
    return false;
}

int vt_cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"delay", required_argument, NULL, 'd'},
        {"iterations", required_argument, NULL, 'n'},
        {"batch", no_argument, NULL, 'b'},
        {"sort", required_argument, NULL, 's'},
        {"pid", required_argument, NULL, 'p'},
        {"width", required_argument, NULL, 'w'},
        VT_CLI_SYMBOL_OPTIONS,
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct vt_cli_symbols symbols;
    vt_cli_symbols_init(&symbols);
    struct top_symbols opened_symbols = {.options = &symbols.sym};
    struct top_divergence divergence = {.options = &symbols.sym};
    struct top_run_options o = {
        .frame = {.sort = VT_FOLLOW_SORT_NOW, .width = TOP_BATCH_WIDTH, .delay_ns = 1000000000u,
                  .opened = -1, .sites = 10, .symbols = &opened_symbols,
                  .divergence = &divergence},
        .open_pid = -1,
    };
    bool batch = !isatty(STDOUT_FILENO), width_given = false;
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+d:n:bs:p:w:h", opts, NULL)) != -1) {
        int sym = vt_cli_symbol_option("top", c, optarg, &symbols);
        if (sym < 0)
            return 2;
        if (sym > 0)
            continue;
        switch (c) {
        case 'd':
            if (!vt_cli_duration("top", "delay", optarg, 10000000u, 3600000000000u,
                                 &o.frame.delay_ns))
                return 2;
            break;
        case 'n':
            if (!vt_cli_uint("top", "iterations", NULL, optarg, 1, 1000000000u, &o.frames))
                return 2;
            break;
        case 'b': batch = true; break;
        case 's':
            if (!sort_key(optarg, &o.frame.sort))
                return 2;
            break;
        case 'p':
            if (!vt_cli_uint("top", "pid", "a process id", optarg, 1, 4194304, &v))
                return 2;
            o.open_pid = (long)v;
            break;
        case 'w':
            if (!vt_cli_uint("top", "width", NULL, optarg, 40, 100000, &v))
                return 2;
            o.frame.width = (size_t)v;
            width_given = true;
            break;
        case 'h': top_usage(stdout); return 0;
        default: top_usage(stderr); return 2;
        }
    }
    struct vt_follow_view view;
    struct top_session session;
    bool ok;
    if (optind < argc) {
        ok = vt_follow_view_init(&view, argv + optind, (size_t)(argc - optind), NULL);
    } else if (top_find_session(&session)) {
        char *dirs[1] = {session.dir};
        ok = vt_follow_view_init(&view, dirs, 1, session.id);
        if (batch)
            fprintf(stderr, "vramtrace top: session %s (pid %lu among its processes), traces under %s\n",
                    session.id, session.pid, session.dir);
    } else {
        fputs("vramtrace top: no `vramtrace run` session runs on this host (that this user can "
              "see); name the traces' directory: vramtrace top DIR\n",
              stderr);
        return 2;
    }
    int status = 2;
    if (!ok) {
        fputs("vramtrace top: out of memory\n", stderr);
    } else if (batch) {
        if (!width_given)
            o.frame.width = batch_width();
        status = top_batch_run(&view, &o);
    } else {
        setlocale(LC_ALL, "");
        o.frame.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
        status = top_screen_run(&view, &o);
    }
    top_symbols_free(&opened_symbols);
    top_divergence_free(&divergence);
    vt_follow_view_free(&view);
    return status;
}
