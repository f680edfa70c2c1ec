/*
 * `vramtrace export --format folded`: the live set at one instant as folded
 * stacks, one line per allocation site (a stack and thread):
 *
 *     main (train.c:226);eval_generate (train.c:187);grow_kv_cache (train.c:175) 6442450944
 *
 * root frame first, ending at the program's own frame that every view names
 * the site by (the call's runtime frames left off: struct line says why),
 * the bytes that site held then last: what flamegraph.pl,
 * inferno and speedscope read. The lines of a ledger add up to its live
 * bytes at that instant. The instant, per device ledger:
 *   peak      the ledger's peak (the report's peak_breakdown, every row)
 *   --phase   the peak while that phase was open (the phase's breakdown)
 *   oom:N     right after the Nth failed allocation of the process
 *   TIME      the last event at or before TIME seconds after the process
 *             started (as the report counts time)
 * With more than one ledger (several devices or processes) each line starts
 * with a frame naming it ("pid 5662 device 0").
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_input.h" /* vt_export_frame_label */
#include "grow_array.h"
#include "input_tables.h"
#include "run_traces.h"
#include "stack_where.h"
#include "terminal_text.h"

struct site_bytes {
    uint64_t stack, bytes;
};

/* The live set of one ledger at the chosen instant. */
struct capture {
    size_t input;
    char name[96];            /* "pid 5662 device 0" */
    struct site_bytes *sites;
    size_t n;
};

/* What the run stage's read noted of one input, on the thread that
 * replayed it: the failures of its selected ledgers so far, and the live
 * set right after the one --at oom:N asks for. */
struct input_notes {
    uint64_t failures;
    bool taken, out_of_memory;
    struct capture at_oom;
};

struct folded {
    const struct vt_export_options *opt;
    const struct vt_run_result *run;
    struct vt_symbolizer **sym;  /* per input, made when its frames are first named */
    size_t nsym;
    struct input_notes *notes;   /* per trace */
    size_t ntraces;
    struct capture *caps;
    size_t ncaps, caps_cap;
    bool out_of_memory, phase_seen;
    uint64_t most_failures;   /* of one selected input */
};

/* Copies into c the sites of l with bytes then: from a state of it (s),
 * or the ledger now (s NULL). False when memory ran out. */
static bool capture_into(struct capture *c, const struct vt_input *in, const struct vt_ledger *l,
                         const struct vt_peak_state *s)
{
    memset(c, 0, sizeof *c);
    c->input = in->index;
    const struct vt_process_info *p = vt_input_process(in);
    char ledger[64];
    snprintf(c->name, sizeof c->name, "pid %" PRIu64 " %s", p ? p->pid : 0,
             vt_ledger_label(l, ledger, sizeof ledger));
    c->sites = calloc(l->sites.nsites + 1, sizeof *c->sites);
    if (!c->sites)
        return false;
    for (uint32_t i = 0; i < l->sites.nsites; i++) {
        uint64_t bytes = s ? (i < s->cap ? s->bytes[i] : 0) : l->sites.sites[i].bytes;
        if (bytes)
            c->sites[c->n++] = (struct site_bytes){l->sites.sites[i].stack, bytes};
    }
    return true;
}

/* A capture more, in the order they are written. */
static struct capture *next_capture(struct folded *f)
{
    if (!vt_grow_array((void **)&f->caps, &f->caps_cap, f->ncaps + 1, sizeof *f->caps)) {
        f->out_of_memory = true;
        return NULL;
    }
    return &f->caps[f->ncaps++];
}

static void capture(struct folded *f, const struct vt_input *in, const struct vt_ledger *l,
                    const struct vt_peak_state *s)
{
    struct capture *c = next_capture(f);
    if (c && !capture_into(c, in, l, s))
        f->out_of_memory = true;
}

/* --at oom:N: the Nth failure of the process's selected ledgers, as the
 * replay meets them; the ledger's live set right then. */
static void on_failure(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    (void)o;
    struct folded *f = ctx;
    /* Which input: the replay is the input's, at a fixed offset. */
    const struct vt_input *in =
        (const struct vt_input *)((const char *)rp - offsetof(struct vt_input, replay));
    struct input_notes *nt = &f->notes[in->index];
    if (nt->taken || !vt_export_ledger_selected(f->opt, l))
        return;
    if (++nt->failures == f->opt->oom) {
        nt->taken = true;
        nt->out_of_memory = !capture_into(&nt->at_oom, in, l, NULL);
    }
}

static void watch_failures(void *ctx, struct vt_input *in)
{
    in->replay.on_failure = on_failure;
    in->replay.on_failure_ctx = ctx;
}

/* One input's captures, from the run's result, in the order the file
 * lists them: a failure's, the instant's, or each ledger's peak or phase
 * peak; and what the input lacks, said on err. */
static void take_input(struct folded *f, const struct vt_input *in, FILE *err)
{
    const struct vt_export_options *opt = f->opt;
    const struct vt_replay *rp = &in->replay;
    struct input_notes *nt = &f->notes[in->index];
    if (vt_input_truncated(in))
        fprintf(err, "vramtrace: %s: %s\n", in->path, vt_input_truncation_note(in));
    if (nt->taken) {
        struct capture *c = next_capture(f);
        if (c) {
            *c = nt->at_oom;
            nt->at_oom.sites = NULL;
        }
        f->out_of_memory |= nt->out_of_memory;
    }
    const struct vt_moment_set *at = f->run->has_moment_set ? &f->run->moment_set : NULL;
    bool reached = at && vt_moment_set_reached(at, rp);
    for (size_t i = 0; i < rp->nledgers; i++) {
        const struct vt_ledger *l = &rp->ledgers[i];
        if (!vt_export_ledger_selected(opt, l))
            continue;
        if (opt->phase) {
            for (size_t k = 0; k < l->nphases; k++) {
                const char *name = vt_input_string(in, l->phases[k].name);
                if (name && !strcmp(name, opt->phase)) {
                    capture(f, in, l, &l->phases[k].state);
                    f->phase_seen = true;
                }
            }
        } else if (opt->at == VT_AT_PEAK && l->peak.has_peak) {
            capture(f, in, l, &l->peak);
        } else if (at && reached) {
            /* The live set after the last event at or before the instant
             * (a ledger that had none then has nothing live). */
            const struct vt_peak_state *s = vt_moment_set_ledger(at, in->index, rp, l);
            if (s)
                capture(f, in, l, s);
        }
    }
    if (at && !reached && !opt->phase) {
        fprintf(err,
                "vramtrace export: %s: the trace ends before that time: the live set at its "
                "end\n",
                in->path);
        for (size_t i = 0; i < rp->nledgers; i++)
            if (vt_export_ledger_selected(opt, &rp->ledgers[i]))
                capture(f, in, &rp->ledgers[i], NULL);
    }
    if (opt->at == VT_AT_OOM && !nt->taken && !opt->phase)
        fprintf(err, "vramtrace export: %s: %" PRIu64 " failed allocation%s, no failure %" PRIu64
                     "\n",
                in->path, nt->failures, nt->failures == 1 ? "" : "s", opt->oom);
    if (nt->failures > f->most_failures)
        f->most_failures = nt->failures;
}

/* ---- writing ---- */

/* A site's line keeps its whole stack, root first, as flame graphs want
 * it - libc's start-up, PyTorch's Python, the interpreter between the
 * program's frames - but ends at the frame that names the site in every
 * other view (stack_where.h, vt_stack_site_frame): the frames inside the
 * call that allocated (the CUDA runtime, the driver, the allocator,
 * ctypes/libffi, CPython's native call path) are left off the tip. Every
 * site's tower would otherwise end in the same "cudaMalloc
 * (cudart.cpp:...)" (flamegraph.pl's and speedscope's search would light
 * up all of them), a Python program's in eight frames of ctypes and
 * libffi; memory profilers' flame graphs end at the program's call too
 * (pprof's and jeprof's drop_frames of malloc, memray's, heaptrack's).
 * A stack that is all folded frames (the runtime's own thread) is kept
 * whole. */
struct line {
    struct vt_frame *frames;  /* the stack, innermost first, walked once */
    size_t nframes, frames_cap;
    char *text;               /* the line, written whole */
    size_t len, text_cap;
    bool out_of_memory;
};

static void keep_frame(void *ctx, const struct vt_frame *fr)
{
    struct line *ln = ctx;
    /* A copy: its strings live as long as the symbolizer (symbolize.h). */
    if (!vt_grow_array((void **)&ln->frames, &ln->frames_cap, ln->nframes + 1,
                       sizeof *ln->frames)) {
        ln->out_of_memory = true;
        return;
    }
    ln->frames[ln->nframes++] = *fr;
}

/* The kept frames walked again, for stack_where.h's questions. */
static size_t kept_frames_walk(void *src, vt_frame_fn fn, void *ctx)
{
    const struct line *ln = src;
    for (size_t k = 0; k < ln->nframes; k++)
        fn(ctx, &ln->frames[k]);
    return ln->nframes;
}

/* Room for n more bytes of the line; NULL when memory ran out. */
static char *line_room(struct line *ln, size_t n)
{
    if (!vt_grow_array((void **)&ln->text, &ln->text_cap, ln->len + n, 1)) {
        ln->out_of_memory = true;
        return NULL;
    }
    return ln->text + ln->len;
}

static void line_put(struct line *ln, const char *s, size_t n)
{
    char *p = line_room(ln, n);
    if (p) {
        memcpy(p, s, n);
        ln->len += n;
    }
}

/* A frame's label: ';' separates frames and the last blank the count, so
 * neither may be inside it; a trace's strings (Python frames) are shown
 * without control characters, as the terminal's text is. */
static void line_frame(struct line *ln, const struct vt_frame *fr)
{
    enum { LABEL_MAX = 512 };
    char *p = line_room(ln, LABEL_MAX);
    if (!p)
        return;
    vt_export_frame_label(fr, p, LABEL_MAX);
    size_t n = strlen(p);
    for (size_t i = 0; i < n; i++) {
        if (p[i] == ';' || p[i] == '\n' || p[i] == '\r')
            p[i] = ':';
        else if (vt_terminal_control((unsigned char)p[i]))
            p[i] = '?';
    }
    ln->len += n;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct site_bytes *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

/* A stack of an input of the result, walked as stack_where.h walks one. */
struct input_stack {
    struct folded *f;
    const struct vt_input *in;
    uint64_t stack;
};

static size_t input_stack_walk(void *src, vt_frame_fn fn, void *ctx)
{
    struct input_stack *s = src;
    struct vt_symbolizer **sym = &s->f->sym[s->in->index];
    if (!*sym)
        *sym = vt_input_symbolizer_new(s->in, &s->f->opt->sym);
    return vt_input_stack_frames(s->in, *sym, s->stack, 0, fn, ctx);
}

static bool write_capture(struct folded *f, const struct capture *c, bool prefix, FILE *out)
{
    const struct vt_input *in = &f->run->a.inputs[c->input];
    qsort(c->sites, c->n, sizeof *c->sites, by_bytes_desc);
    struct line ln = {0};
    for (size_t i = 0; i < c->n && !ln.out_of_memory; i++) {
        struct input_stack src = {f, in, c->sites[i].stack};
        ln.nframes = 0;
        input_stack_walk(&src, keep_frame, &ln);
        bool python = vt_stack_has_python(kept_frames_walk, &ln);
        /* Every frame is classified (a static runtime is known by its
         * callee); the first that names the site is the tip. */
        struct vt_frame_classifier cls = {0};
        size_t tip = 0;
        bool site_found = false;
        for (size_t k = 0; k < ln.nframes; k++)
            if (vt_stack_frame_names_site(&cls, &ln.frames[k], python) && !site_found) {
                site_found = true;
                tip = k;
            }
        ln.len = 0;
        if (prefix) {
            line_put(&ln, c->name, strlen(c->name));
            line_put(&ln, ";", 1);
        }
        if (ln.nframes == 0)
            line_put(&ln, "[no stack]", 10);
        for (size_t k = ln.nframes; k-- > tip;) {
            line_frame(&ln, &ln.frames[k]);
            if (k > tip)
                line_put(&ln, ";", 1);
        }
        char count[32];
        int n = snprintf(count, sizeof count, " %" PRIu64 "\n", c->sites[i].bytes);
        line_put(&ln, count, (size_t)n);
        if (!ln.out_of_memory)
            fwrite(ln.text, 1, ln.len, out);
    }
    free(ln.frames);
    free(ln.text);
    return !ln.out_of_memory;
}

/* The traces are read once by the run stage, as the report reads them:
 * the peaks and phase peaks are its result's, the live sets at --at TIME
 * its observer's (run/moment_set.h, the report's --at), the one after the
 * Nth failure this exporter's, noted as the replay meets it. */
void *vt_export_folded_plan(char *const *traces, size_t n, const struct vt_export_options *opt,
                            struct vt_run_observers *obs, FILE **said, FILE *err)
{
    (void)traces;
    (void)said;
    struct folded *f = calloc(1, sizeof *f);
    if (f)
        f->notes = calloc(n + 1, sizeof *f->notes);
    if (!f || !f->notes) {
        free(f);
        fputs("vramtrace export: out of memory\n", err);
        return NULL;
    }
    f->opt = opt;
    f->ntraces = n;
    obs->moment_set = opt->at == VT_AT_TIME && !opt->phase;
    obs->moment_ns = opt->time_ns;
    obs->prepare = opt->at == VT_AT_OOM && !opt->phase ? watch_failures : NULL;
    obs->prepare_ctx = f;
    return f;
}

int vt_export_folded_write(void *state, const struct vt_run_result *run, FILE *out, FILE *err)
{
    struct folded *f = state;
    const struct vt_export_options *opt = f->opt;
    int status = run->status;
    f->run = run;
    const struct vt_analysis *a = &run->a;
    f->sym = calloc(a->ninputs + 1, sizeof *f->sym);
    f->nsym = f->sym ? a->ninputs : 0;
    if (status == 0 && (!f->sym || a->out_of_memory)) {
        fputs("vramtrace export: out of memory\n", err);
        status = 2;
    }
    size_t selected = 0;
    for (size_t i = 0; i < a->ninputs && status == 0; i++) {
        const struct vt_process_info *p = vt_input_process(&a->inputs[i]);
        if (opt->has_pid && p && p->pid != opt->pid)
            continue;
        selected++;
        take_input(f, &a->inputs[i], err);
        if (f->out_of_memory) {
            fputs("vramtrace export: out of memory\n", err);
            status = 2;
        }
    }
    if (status == 0 && opt->has_pid && !selected) {
        fprintf(err, "vramtrace export: no pid %" PRIu64 " in the traces\n", opt->pid);
        status = 2;
    }
    /* As the report's --at oom:N: an error when no process failed N times
     * (those that failed fewer are noted above), not an empty file. */
    if (status == 0 && opt->at == VT_AT_OOM && !opt->phase && f->most_failures < opt->oom) {
        if (f->most_failures)
            fprintf(err, "vramtrace export: no failure %" PRIu64 "; the most of one process: %"
                         PRIu64 "\n", opt->oom, f->most_failures);
        else
            fprintf(err, "vramtrace export: no failure %" PRIu64 "; no allocation failed\n",
                    opt->oom);
        status = 2;
    }
    if (status == 0 && opt->phase && !f->phase_seen) {
        fprintf(err, "vramtrace export: no phase \"%s\" in the traces\n", opt->phase);
        status = 2;
    }
    size_t lines = 0;
    for (size_t k = 0; k < f->ncaps; k++)
        lines += f->caps[k].n;
    for (size_t k = 0; k < f->ncaps && status == 0; k++)
        if (!write_capture(f, &f->caps[k], f->ncaps > 1, out))
            status = 2;
    if (status == 0 && lines == 0)
        fputs("vramtrace export: no device memory was live then: the file is empty\n", err);
    return status;
}

void vt_export_folded_free(void *state)
{
    struct folded *f = state;
    if (!f)
        return;
    for (size_t k = 0; k < f->ncaps; k++)
        free(f->caps[k].sites);
    free(f->caps);
    for (size_t i = 0; i < f->ntraces; i++)
        free(f->notes[i].at_oom.sites);
    free(f->notes);
    for (size_t i = 0; i < f->nsym; i++)
        vt_symbolizer_free(f->sym[i]);
    free(f->sym);
    free(f);
}
