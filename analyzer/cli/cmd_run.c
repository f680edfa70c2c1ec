/*
 * `vramtrace run [-o TEMPLATE] [--stack-depth N] [--] CMD ARGS...`
 *
 * Runs CMD with libvramtrace.so preloaded (and as the NVTX injection
 * library), waits for it, and lists the traces it and its descendants
 * wrote, with each one's device peaks: every trace of the session it
 * starts, whatever the process tree (list_traces). The command's own exit
 * status is ours, and if a signal killed it we die of the same signal, so
 * `vramtrace run` can stand in for the command in scripts and schedulers.
 */
#define _GNU_SOURCE
#include "commands.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <getopt.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"
#include "input_tables.h"
#include "cli_options.h"
#include "install_paths.h"
#include "grow_array.h"
#include "report.h"
#include "safe_path.h"

#define DEFAULT_TEMPLATE "vramtrace.%h.%p.vtrace"

static volatile sig_atomic_t child_pid;

/* Signals a terminal sends go to the whole foreground process group, so
 * the child already has them (si_code SI_KERNEL); forwarding those would
 * deliver them twice. Signals sent to us by a process (kill, a job
 * scheduler) are passed on. */
static void forward_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    if (child_pid > 0 && (!info || info->si_code != SI_KERNEL))
        kill(child_pid, sig);
}

static void run_usage(FILE *out)
{
    fputs("usage: vramtrace run [OPTIONS] [--] COMMAND [ARGS...]\n"
          "Run COMMAND with the tracer preloaded, then list the traces it wrote.\n\n"
          "  -o, --output TEMPLATE   trace path template (default " DEFAULT_TEMPLATE ";\n"
          "                          %p pid, %h host, %r rank, %l local rank, %% a\n"
          "                          percent sign; missing directories are made, 0700)\n"
          "  -s, --stack-depth N     native frames recorded per event (0-256, default 64)\n"
          "  -q, --quiet             do not list the traces at the end\n"
          "      --torch-history[=N] PyTorch: record the allocator's history (last N events,\n"
          "                          default 100000) for the OOM snapshots\n"
          "      --no-torch-phases   PyTorch: no phases from the model's hooks\n"
          "      --torch-parts-every N  PyTorch: a census of parameters, gradients and\n"
          "                          optimizer state every N optimizer steps (default 100;\n"
          "                          0: only at the first step and at each OOM)\n"
          "      --no-python-bootstrap  no sitecustomize in front of Python processes\n"
          "                          (no PyTorch OOM snapshots, history or phases)\n"
          "  -h, --help              this help\n\n"
          "Exit status: the command's; if a signal killed it, run dies of the same signal\n"
          "(a shell shows 128 + its number); 2 for bad options; 127 if the command was\n"
          "not found.\n\n"
          "Every process started under run carries the session id VRAMTRACE_SESSION (kept\n"
          "if already set); at the end run lists the session's traces, whichever process\n"
          "wrote them (more than 8: one summary line and the directory).\n\n"
          "examples:\n"
          "  vramtrace run -- python train.py\n"
          "  vramtrace run -o 'traces/%h.rank%r.%p.vtrace' -- torchrun --nproc_per_node 8 train.py\n",
          out);
}

/* The template as a pattern for fnmatch: each %x expands to anything. */
static void template_pattern(const char *tmpl, char *out, size_t n)
{
    size_t o = 0;
    for (const char *p = tmpl; *p && o + 2 < n; p++) {
        if (*p == '%' && p[1] == '%') {
            out[o++] = '%';
            p++;
        } else if (*p == '%' && p[1]) {
            out[o++] = '*';
            p++;
        } else if (*p == '*' || *p == '?' || *p == '[' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = *p;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

/* The directories the template names before its first %: walked and made
 * now (safe_path.h: 0700; never through another user's link or directory
 * in a world-writable one), so that a mistake (no permission, a file in
 * the way, an unsafe directory) is said once, before the job runs, rather
 * than by every rank. The command then runs untraced (VRAMTRACE_DISABLE):
 * run never changes what the command does. The rest (a directory per host,
 * %h) is made by the tracer, by the same walk (preload/record/file/trace_file.c). */
static bool make_output_dirs(const char *tmpl)
{
    char dir[PATH_MAX];
    size_t cut = strcspn(tmpl, "%");
    if (cut >= sizeof dir)
        cut = sizeof dir - 1;
    memcpy(dir, tmpl, cut);
    dir[cut] = '\0';
    char *slash = strrchr(dir, '/');
    if (!slash)
        return true;
    slash[1] = '\0';
    struct vt_safe_path_refusal refusal;
    int fd = vt_safe_path_open_whole_dir(dir, true, &refusal);
    if (fd < 0) {
        fprintf(stderr, "vramtrace run: cannot make the trace directory %s: %s; the command "
                        "runs untraced\n", dir, refusal.text[0] ? refusal.text : strerror(errno));
        return false;
    }
    close(fd);
    return true;
}

/* ---- the session ---- */

#define SESSION_COMMAND_MAX 1024

/* Every process started under `run` carries VRAMTRACE_SESSION (and when,
 * where and what started it) in its environment, and the tracer records
 * them in the trace's process record (docs/internals/FORMAT.md, "Sessions"). At exit
 * the traces of the session are the ones that say so, whoever started them:
 * a grandchild, a daemon that left the process tree, a multiprocessing
 * worker. An id already in the environment is kept (the user joins a
 * session, e.g. ranks on other nodes given the same id). */
static const char *start_session(int argc, char **argv, char *id, size_t n)
{
    const char *have = getenv("VRAMTRACE_SESSION");
    if (have && *have) {
        snprintf(id, n, "%s", have);
        return id;
    }
    uint8_t rnd[8];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, rnd, sizeof rnd) : -1;
    if (fd >= 0)
        close(fd);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    if (got != (ssize_t)sizeof rnd) { /* no urandom: time and pid, still unique enough */
        uint64_t x = (uint64_t)now.tv_nsec ^ (uint64_t)now.tv_sec << 30 ^ (uint64_t)getpid() << 16;
        for (size_t i = 0; i < sizeof rnd; i++)
            rnd[i] = (uint8_t)(x >> (8 * i));
    }
    size_t o = 0;
    for (size_t i = 0; i < sizeof rnd && o + 3 <= n; i++)
        o += (size_t)snprintf(id + o, n - o, "%02x", rnd[i]);
    char start[32], host[256] = "", cmd[SESSION_COMMAND_MAX] = "";
    snprintf(start, sizeof start, "%" PRIu64,
             (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec);
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < argc && used + 1 < sizeof cmd; i++) {
        int k = snprintf(cmd + used, sizeof cmd - used, "%s%s", i ? " " : "", argv[i]);
        if (k < 0)
            break;
        used += (size_t)k;
    }
    if (setenv("VRAMTRACE_SESSION", id, 1) || setenv("VRAMTRACE_SESSION_START", start, 1) ||
        setenv("VRAMTRACE_SESSION_HOST", host, 1) || setenv("VRAMTRACE_SESSION_COMMAND", cmd, 1))
        return NULL;
    return id;
}

struct listed {
    char *path;
    uint64_t pid;
    long rank;
};

static long env_number(const struct vt_process_info *p, const char *name)
{
    const char *v = vt_process_env(p, name);
    char *end;
    long x = v && *v ? strtol(v, &end, 10) : -1;
    return v && *v && !*end && x >= 0 ? x : -1;
}

static int by_rank(const void *x, const void *y)
{
    const struct listed *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < 0 ? 1 : b->rank < 0 ? -1 : a->rank < b->rank ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* The session's traces under one directory whose names fit the template
 * (a forked child without %p gets ".<pid>" appended, hence the trailing
 * '*'; a taken name sends a trace to "<stem>.<n>.vtrace", see
 * preload/record/file/trace_file.h). */
static void scan_dir(const char *dir, const char *pattern, const char *numbered,
                     const char *session, struct listed **out, size_t *n, size_t *cap)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (fnmatch(pattern, de->d_name, 0) != 0 &&
            (!numbered[0] || fnmatch(numbered, de->d_name, 0) != 0))
            continue;
        char *path;
        if (asprintf(&path, "%s/%s", dir, de->d_name) < 0)
            continue;
        struct stat st;
        struct vt_reader *r;
        struct vt_read_error err;
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || vt_reader_open(path, &r, &err) != 0) {
            free(path);
            continue;
        }
        struct vt_record rec;
        const struct vt_process_info *p = NULL;
        if (vt_reader_next(r, &rec) > 0 && rec.type == VT_REC_PROCESS)
            p = rec.u.process;
        const char *sid = vt_process_env(p, "VRAMTRACE_SESSION");
        if (sid && !strcmp(sid, session) && vt_grow_array((void **)out, cap, *n + 1, sizeof **out)) {
            long rank = env_number(p, "RANK");
            static const char *const others[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
            for (size_t k = 0; rank < 0 && k < 3; k++)
                rank = env_number(p, others[k]);
            (*out)[(*n)++] = (struct listed){path, p->pid, rank};
            path = NULL;
        }
        free(path);
        vt_reader_close(r);
    }
    closedir(d);
}

/* One line per trace: its device peaks and failures. */
static void describe(const struct listed *t)
{
    struct vt_analysis a;
    char *paths[1] = {t->path};
    int st = vt_analysis_run(&a, paths, 1, stderr);
    fprintf(stderr, "vramtrace: trace %s (pid %" PRIu64, t->path, t->pid);
    if (t->rank >= 0)
        fprintf(stderr, ", rank %ld", t->rank);
    fputc(')', stderr);
    if (st == 0 && a.ninputs == 1) {
        const struct vt_replay *rp = &a.inputs[0].replay;
        char b[32], lab[48];
        for (size_t k = 0; k < rp->nledgers; k++) {
            const struct vt_ledger *l = &rp->ledgers[k];
            fprintf(stderr, "%s %s peak %s", k ? ";" : ":", vt_ledger_label(l, lab, sizeof lab),
                    vt_format_bytes(l->peak.peak_bytes, b, sizeof b));
            size_t failed = vt_ledger_failed_requests(l);
            if (failed)
                fprintf(stderr, " (%zu failed allocation%s)", failed, failed == 1 ? "" : "s");
        }
        if (!rp->nledgers)
            fputs(": no GPU memory allocated", stderr);
        if (vt_input_truncated(&a.inputs[0]))
            fputs(" [truncated]", stderr);
    }
    fputc('\n', stderr);
    vt_analysis_free(&a);
}

/* Past this many traces, `run` says one line for them all. */
#define LIST_EACH_MAX 8

/* Many traces: how many, which ranks, the largest and smallest device
 * peak, the failures, and where to look. */
static void summarize(const struct listed *t, size_t n, const char *dirs, const char *session)
{
    uint64_t max = 0, min = UINT64_MAX;
    size_t max_i = 0, min_i = 0, failed = 0, failing = 0, truncated = 0, ranked = 0;
    for (size_t i = 0; i < n; i++) {
        struct vt_analysis a;
        char *paths[1] = {t[i].path};
        if (vt_analysis_run(&a, paths, 1, stderr) == 0 && a.ninputs == 1) {
            const struct vt_replay *rp = &a.inputs[0].replay;
            uint64_t peak = 0;
            size_t f = 0;
            for (size_t k = 0; k < rp->nledgers; k++) {
                if (rp->ledgers[k].category == VT_CAT_DEVICE && rp->ledgers[k].peak.peak_bytes > peak)
                    peak = rp->ledgers[k].peak.peak_bytes;
                f += vt_ledger_failed_requests(&rp->ledgers[k]);
            }
            if (i == 0 || peak > max) {
                max = peak;
                max_i = i;
            }
            if (peak < min) {
                min = peak;
                min_i = i;
            }
            failed += f;
            failing += f > 0;
            truncated += vt_input_truncated(&a.inputs[0]);
        }
        vt_analysis_free(&a);
        ranked += t[i].rank >= 0;
    }
    char b1[32], b2[32];
    fprintf(stderr, "vramtrace: session %s: %zu traces", session, n);
    if (ranked)
        fprintf(stderr, " (%zu with a rank, %ld to %ld)", ranked, t[0].rank, t[ranked - 1].rank);
    fprintf(stderr, "; device peaks from %s (pid %" PRIu64 ") to %s (pid %" PRIu64 ")",
            vt_format_bytes(min == UINT64_MAX ? 0 : min, b1, sizeof b1), t[min_i].pid,
            vt_format_bytes(max, b2, sizeof b2), t[max_i].pid);
    if (failed)
        fprintf(stderr, "; %zu failed allocation%s in %zu process%s", failed, failed == 1 ? "" : "s",
                failing, failing == 1 ? "" : "es");
    if (truncated)
        fprintf(stderr, "; %zu truncated", truncated);
    fprintf(stderr, "\nvramtrace: traces in %s: vramtrace report %s\n", dirs, dirs);
}

/* Lists the traces of the session: every file whose name fits the template,
 * in every directory the template's directory part can expand to, whose
 * process record carries the session id. Not by process ancestry: a
 * daemonised agent, a setsid'ed rank or a multiprocessing worker is the
 * session's as much as a child is. */
static void list_traces(const char *tmpl, const char *session, bool quiet)
{
    char dirtmpl[PATH_MAX] = ".", dirpat[2 * PATH_MAX], base[PATH_MAX], pattern[2 * PATH_MAX];
    const char *slash = strrchr(tmpl, '/');
    if (slash) {
        snprintf(dirtmpl, sizeof dirtmpl, "%.*s", (int)(slash - tmpl), tmpl);
        if (!dirtmpl[0])
            snprintf(dirtmpl, sizeof dirtmpl, "/");
    }
    template_pattern(dirtmpl, dirpat, sizeof dirpat);
    template_pattern(slash ? slash + 1 : tmpl, base, sizeof base);
    snprintf(pattern, sizeof pattern, "%s*", base);
    char numbered[2 * PATH_MAX] = "";
    size_t blen = strlen(base), slen = strlen(".vtrace");
    if (blen > slen && !strcmp(base + blen - slen, ".vtrace"))
        snprintf(numbered, sizeof numbered, "%.*s.*.vtrace*", (int)(blen - slen), base);
    struct listed *t = NULL;
    size_t n = 0, cap = 0;
    glob_t g;
    if (glob(dirpat, GLOB_ONLYDIR | GLOB_NOCHECK, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
            scan_dir(g.gl_pathv[i], pattern, numbered, session, &t, &n, &cap);
        globfree(&g);
    }
    if (n)
        qsort(t, n, sizeof *t, by_rank);
    if (!quiet && n > LIST_EACH_MAX)
        summarize(t, n, dirtmpl, session);
    else if (!quiet)
        for (size_t i = 0; i < n; i++)
            describe(&t[i]);
    if (!n && !quiet)
        fprintf(stderr, "vramtrace: no trace was written (pattern %s/%s): did the command use CUDA?\n",
                dirtmpl, pattern);
    for (size_t i = 0; i < n; i++)
        free(t[i].path);
    free(t);
}

/* Dies of the signal that killed the command, so that whoever started
 * `run` sees what it would have seen without it (a shell prints 128 + the
 * signal either way). No core file of ours: the command's is the one. */
static int die_like(int sig)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    fflush(NULL);
    raise(sig);
    return 128 + sig; /* a signal that does not kill (SIGCHLD, SIGWINCH...) */
}

static bool is_sanitizer_runtime(const char *entry, size_t len)
{
    static const char *const names[] = {"libasan", "libubsan", "libtsan", "liblsan", "libhwasan"};
    const char *base = entry;
    for (size_t i = 0; i < len; i++)
        if (entry[i] == '/')
            base = entry + i + 1;
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!strncmp(base, names[k], strlen(names[k])))
            return true;
    return false;
}

/* lib goes in front of any LD_PRELOAD the user has, except sanitizer
 * runtimes: they refuse to start unless they are loaded first. */
static int set_preload(const char *lib)
{
    const char *old = getenv("LD_PRELOAD");
    if (!old)
        old = "";
    size_t n = strlen(old) + strlen(lib) + 2;
    char *san = calloc(1, n), *rest = calloc(1, n), *val = calloc(1, n + 1);
    if (!san || !rest || !val) {
        free(san);
        free(rest);
        free(val);
        return -1;
    }
    for (const char *p = old; *p;) {
        size_t len = strcspn(p, ": ");
        if (len) {
            char *dst = is_sanitizer_runtime(p, len) ? san : rest;
            if (*dst)
                strcat(dst, ":");
            strncat(dst, p, len);
        }
        p += len;
        if (*p)
            p++;
    }
    snprintf(val, n + 1, "%s%s%s%s%s", san, *san ? ":" : "", lib, *rest ? ":" : "", rest);
    int rc = setenv("LD_PRELOAD", val, 1);
    free(san);
    free(rest);
    free(val);
    return rc;
}

/* The bootstrap's directory goes first on PYTHONPATH (the user's entries
 * follow in their order; an empty PYTHONPATH stays without an empty entry,
 * which would mean the current directory), and its settings into the
 * environment. Quietly nothing if it is not installed. */
static void set_python_bootstrap(bool on, const char *history, bool phases,
                                 const char *parts_every)
{
    char dir[PATH_MAX];
    if (!on || !vt_find_python_bootstrap(dir, sizeof dir))
        return;
    const char *old = getenv("PYTHONPATH");
    size_t dlen = strlen(dir);
    if (old && !strncmp(old, dir, dlen) && (old[dlen] == ':' || !old[dlen])) {
        /* already first: vramtrace run inside vramtrace run */
    } else if (old && *old) {
        char *val;
        if (asprintf(&val, "%s:%s", dir, old) < 0)
            return;
        setenv("PYTHONPATH", val, 1);
        free(val);
    } else
        setenv("PYTHONPATH", dir, 1);
    if (history)
        setenv("VRAMTRACE_TORCH_HISTORY", history, 1);
    if (!phases)
        setenv("VRAMTRACE_TORCH_PHASES", "0", 1);
    if (parts_every)
        setenv("VRAMTRACE_TORCH_PARTS_EVERY", parts_every, 1);
}

int vt_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"output", required_argument, NULL, 'o'},
        {"stack-depth", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},
        {"torch-history", optional_argument, NULL, 'H'},
        {"no-torch-phases", no_argument, NULL, 'P'},
        {"torch-parts-every", required_argument, NULL, 'N'},
        {"no-python-bootstrap", no_argument, NULL, 'B'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    const char *tmpl = getenv("VRAMTRACE_OUTPUT");
    const char *depth = NULL;
    bool quiet = false, bootstrap = true, torch_phases = true;
    const char *torch_history = NULL, *parts_every = NULL;
    int c;
    optind = 1;
    static const char shortopts[] = "+o:s:qh";
    opterr = 0; /* a refused option is said in one line: vt_cli_bad_option */
    /* '+': stop at the first non-option, so the command's own options are
     * left alone even without "--". */
    while ((c = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            tmpl = optarg;
            break;
        case 's': {
            uint64_t v;
            if (!vt_cli_uint("run", "stack-depth", NULL, optarg, 0, 256, &v))
                return 2;
            depth = optarg;
            break;
        }
        case 'q':
            quiet = true;
            break;
        case 'H': {
            uint64_t v;
            if (optarg && !vt_cli_uint("run", "torch-history", NULL, optarg, 1, 100000000, &v))
                return 2;
            torch_history = optarg ? optarg : "100000";
            break;
        }
        case 'P':
            torch_phases = false;
            break;
        case 'N': {
            uint64_t v;
            if (!vt_cli_uint("run", "torch-parts-every", NULL, optarg, 0, 1000000000, &v))
                return 2;
            parts_every = optarg;
            break;
        }
        case 'B':
            bootstrap = false;
            break;
        case 'h':
            run_usage(stdout);
            return 0;
        default:
            return vt_cli_bad_option("run", argv, shortopts);
        }
    }
    if (optind >= argc) {
        fputs("vramtrace run: no command given\n", stderr);
        run_usage(stderr);
        return 2;
    }
    if (!tmpl || !*tmpl)
        tmpl = DEFAULT_TEMPLATE;
    char lib[PATH_MAX];
    if (!vt_find_tracer(lib, sizeof lib)) {
        fprintf(stderr, "vramtrace run: cannot find libvramtrace.so (looked %s)\n",
                vt_install_places);
        return 2;
    }
    /* The loader splits LD_PRELOAD at both, and has no way to quote them. */
    if (strpbrk(lib, ": ")) {
        fprintf(stderr, "vramtrace run: the tracer's path has a space or a colon, which "
                        "LD_PRELOAD cannot carry: %s (install vramtrace under a path without "
                        "them)\n", lib);
        return 2;
    }
    if (set_preload(lib) != 0 || setenv("VRAMTRACE_OUTPUT", tmpl, 1) != 0 ||
        (depth && setenv("VRAMTRACE_STACK_DEPTH", depth, 1) != 0)) {
        fputs("vramtrace run: cannot set the environment\n", stderr);
        return 2;
    }
    set_python_bootstrap(bootstrap, torch_history, torch_phases, parts_every);
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (nvtx && *nvtx && strcmp(nvtx, lib) != 0)
        fprintf(stderr, "vramtrace run: warning: NVTX_INJECTION64_PATH is already set (%s): NVTX "
                        "ranges go there, so phases will only come from the vramtrace API\n", nvtx);
    else
        setenv("NVTX_INJECTION64_PATH", lib, 1);

    char session[128];
    bool traced = make_output_dirs(tmpl);
    if (!traced)
        setenv("VRAMTRACE_DISABLE", "1", 1); /* said once, here: the ranks stay quiet */
    if (!start_session(argc - optind, argv + optind, session, sizeof session)) {
        fputs("vramtrace run: cannot set the environment\n", stderr);
        return 2;
    }
    struct sigaction sa = {0}, old[4];
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], &sa, &old[i]);
    fflush(NULL);
    /* Closed by a successful exec: a byte before EOF means the command never
     * ran, and then there is nothing to list and no hint to give. */
    int ran[2];
    if (pipe2(ran, O_CLOEXEC) != 0) {
        perror("vramtrace run: pipe");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("vramtrace run: fork");
        return 2;
    }
    if (pid == 0) {
        close(ran[0]);
        for (int i = 0; i < 4; i++)
            sigaction(sigs[i], &old[i], NULL);
        execvp(argv[optind], argv + optind);
        int e = errno;
        fprintf(stderr, "vramtrace run: cannot run %s: %s\n", argv[optind], strerror(e));
        ssize_t ignored = write(ran[1], "x", 1);
        (void)ignored;
        _exit(e == ENOENT ? 127 : 126);
    }
    close(ran[1]);
    char failed;
    ssize_t got;
    while ((got = read(ran[0], &failed, 1)) < 0 && errno == EINTR)
        ;
    close(ran[0]);
    child_pid = pid;
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            perror("vramtrace run: waitpid");
            return 2;
        }
    }
    child_pid = 0;
    for (int i = 0; i < 4; i++)
        sigaction(sigs[i], &old[i], NULL);
    if (got != 1 && traced)
        list_traces(tmpl, session, quiet);
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return die_like(WTERMSIG(status));
    return 2;
}
