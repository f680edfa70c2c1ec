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
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "export_trace.h"
#include "grow_array.h"
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

struct folded {
    const struct vt_export_options *opt;
    struct vt_export_trace *traces; /* kept open: their frames are symbolized last */
    struct capture *caps;
    size_t ncaps, caps_cap;
    size_t input;
    bool skip, taken, out_of_memory, phase_seen;
    uint64_t failures;        /* of the current input so far */
    uint64_t most_failures;   /* of one selected input */
    uint64_t origin_ns;
};

static bool ledger_selected(const struct vt_export_options *opt, const struct vt_ledger *l)
{
    return l->category == VT_CAT_DEVICE && (!opt->has_device || l->device == opt->device);
}

/* Copies the sites of l with bytes then: from a snapshot of it (s), or its
 * live state now (s NULL). */
static void capture(struct folded *f, struct vt_export_trace *t, const struct vt_ledger *l,
                    const struct vt_peak_snapshot *s)
{
    if (!vt_grow_array((void **)&f->caps, &f->caps_cap, f->ncaps + 1, sizeof *f->caps)) {
        f->out_of_memory = true;
        return;
    }
    struct capture *c = &f->caps[f->ncaps++];
    memset(c, 0, sizeof *c);
    c->input = f->input;
    char ledger[64];
    snprintf(c->name, sizeof c->name, "pid %" PRIu64 " %s", vt_export_pid(t->reader),
             vt_ledger_label(l, ledger, sizeof ledger));
    c->sites = calloc(l->sites.nsites + 1, sizeof *c->sites);
    if (!c->sites) {
        f->out_of_memory = true;
        return;
    }
    for (uint32_t i = 0; i < l->sites.nsites; i++) {
        uint64_t bytes = s ? (i < s->cap ? s->bytes[i] : 0) : l->sites.sites[i].bytes;
        if (bytes)
            c->sites[c->n++] = (struct site_bytes){l->sites.sites[i].stack, bytes};
    }
}

static void capture_all(struct folded *f, struct vt_export_trace *t)
{
    for (size_t i = 0; i < t->replay.nledgers; i++)
        if (ledger_selected(f->opt, &t->replay.ledgers[i]))
            capture(f, t, &t->replay.ledgers[i], NULL);
    f->taken = true;
}

static bool on_record(void *ctx, struct vt_export_trace *t, const struct vt_record *rec)
{
    struct folded *f = ctx;
    if (rec->type == VT_REC_PROCESS) {
        if (f->opt->has_pid && rec->u.process->pid != f->opt->pid) {
            f->skip = true;
            return false;
        }
        f->origin_ns = rec->u.process->start_mono_ns;
    }
    if (f->taken)
        return false; /* oom:N was taken on the record before */
    if (f->opt->at == VT_AT_TIME && vt_record_is_timed(rec->type)) {
        /* The report's origin: the process start when known, else its
         * first event. */
        if (!f->origin_ns || f->origin_ns > rec->time_ns)
            f->origin_ns = rec->time_ns;
        if (rec->time_ns - f->origin_ns > f->opt->time_ns) {
            capture_all(f, t);
            return false;
        }
    }
    return true;
}

static void on_oom(void *ctx, struct vt_export_trace *t, struct vt_ledger *l, struct vt_oom *o)
{
    (void)o;
    struct folded *f = ctx;
    if (f->opt->at != VT_AT_OOM || f->taken || !ledger_selected(f->opt, l))
        return;
    if (++f->failures == f->opt->oom) {
        capture(f, t, l, NULL);
        f->taken = true;
    }
}

static void after_replay(struct folded *f, struct vt_export_trace *t, FILE *err)
{
    const struct vt_export_options *opt = f->opt;
    for (size_t i = 0; i < t->replay.nledgers; i++) {
        const struct vt_ledger *l = &t->replay.ledgers[i];
        if (!ledger_selected(opt, l))
            continue;
        if (opt->phase) {
            for (size_t k = 0; k < l->nphases; k++) {
                const char *name = vt_reader_string(t->reader, l->phases[k].name);
                if (name && !strcmp(name, opt->phase)) {
                    capture(f, t, l, &l->phases[k].snap);
                    f->phase_seen = true;
                }
            }
        } else if (opt->at == VT_AT_PEAK && l->peak.has_peak) {
            capture(f, t, l, &l->peak);
        }
    }
    if (opt->at == VT_AT_TIME && !f->taken && !opt->phase) {
        fprintf(err,
                "vramtrace export: %s: the trace ends before that time: the live set at its "
                "end\n",
                t->path);
        capture_all(f, t);
    }
    if (opt->at == VT_AT_OOM && !f->taken && !opt->phase)
        fprintf(err, "vramtrace export: %s: %" PRIu64 " failed allocation%s, no failure %" PRIu64
                     "\n",
                t->path, f->failures, f->failures == 1 ? "" : "s", opt->oom);
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
    char **frames;            /* innermost first */
    size_t nframes, frames_cap;
    size_t site_at;           /* the frame naming the site, if site_found */
    bool site_found;
    struct vt_frame_classifier cls;
    bool python;              /* the stack has Python frames */
    bool out_of_memory;
};

static void collect_frame(void *ctx, const struct vt_frame *fr)
{
    struct line *ln = ctx;
    /* Every frame is classified (a static runtime is known by its callee). */
    if (vt_stack_frame_names_site(&ln->cls, fr, ln->python) && !ln->site_found) {
        ln->site_found = true;
        ln->site_at = ln->nframes;
    }
    char label[512];
    vt_export_frame_label(fr, label, sizeof label);
    /* ';' separates frames and the last blank the count: neither may be
     * inside a frame's name. */
    for (char *c = label; *c; c++)
        if (*c == ';' || *c == '\n' || *c == '\r')
            *c = ':';
    char *copy = strdup(label);
    if (!copy || !vt_grow_array((void **)&ln->frames, &ln->frames_cap, ln->nframes + 1,
                                sizeof *ln->frames)) {
        free(copy);
        ln->out_of_memory = true;
        return;
    }
    ln->frames[ln->nframes++] = copy;
}

static int by_bytes_desc(const void *a, const void *b)
{
    const struct site_bytes *x = a, *y = b;
    return x->bytes < y->bytes ? 1 : x->bytes > y->bytes ? -1 : 0;
}

static bool write_capture(struct folded *f, const struct capture *c, bool prefix, FILE *out)
{
    struct vt_export_trace *t = &f->traces[c->input];
    qsort(c->sites, c->n, sizeof *c->sites, by_bytes_desc);
    struct line ln = {0};
    for (size_t i = 0; i < c->n && !ln.out_of_memory; i++) {
        struct vt_export_stack src = {t, c->sites[i].stack};
        ln.nframes = 0;
        ln.site_found = false;
        ln.cls = (struct vt_frame_classifier){0};
        ln.python = vt_stack_has_python(vt_export_stack_walk, &src);
        vt_export_frames(t, c->sites[i].stack, collect_frame, &ln);
        if (prefix)
            fprintf(out, "%s;", c->name);
        if (ln.nframes == 0)
            fputs("[no stack]", out);
        size_t tip = ln.site_found ? ln.site_at : 0;
        for (size_t k = ln.nframes; k-- > 0;) {
            if (k >= tip) {
                vt_terminal_put(out, ln.frames[k]); /* a trace's Python frames */
                fputs(k > tip ? ";" : "", out);
            }
            free(ln.frames[k]);
        }
        fprintf(out, " %" PRIu64 "\n", c->sites[i].bytes);
    }
    free(ln.frames);
    return !ln.out_of_memory;
}

int vt_export_folded(char *const *traces, size_t n, const struct vt_export_options *opt,
                     FILE *out, FILE *err)
{
    struct folded f = {.opt = opt};
    f.traces = calloc(n + 1, sizeof *f.traces);
    if (!f.traces) {
        fputs("vramtrace export: out of memory\n", err);
        return 2;
    }
    int status = 0;
    size_t opened = 0, selected = 0;
    for (size_t i = 0; i < n && status == 0; i++) {
        struct vt_export_hooks hooks = {.on_record = on_record, .on_oom = on_oom, .ctx = &f};
        f.input = i;
        f.skip = f.taken = false;
        f.failures = f.origin_ns = 0;
        status = vt_export_trace_run(&f.traces[i], traces[i], &hooks, &opt->sym, err);
        opened++;
        if (status == 0 && !f.skip) {
            selected++;
            after_replay(&f, &f.traces[i], err);
            if (f.failures > f.most_failures)
                f.most_failures = f.failures;
        }
        if (f.out_of_memory) {
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
    if (status == 0 && opt->at == VT_AT_OOM && !opt->phase && f.most_failures < opt->oom) {
        if (f.most_failures)
            fprintf(err, "vramtrace export: no failure %" PRIu64 "; the most of one process: %"
                         PRIu64 "\n", opt->oom, f.most_failures);
        else
            fprintf(err, "vramtrace export: no failure %" PRIu64 "; no allocation failed\n",
                    opt->oom);
        status = 2;
    }
    if (status == 0 && opt->phase && !f.phase_seen) {
        fprintf(err, "vramtrace export: no phase \"%s\" in the traces\n", opt->phase);
        status = 2;
    }
    size_t lines = 0;
    for (size_t k = 0; k < f.ncaps; k++)
        lines += f.caps[k].n;
    for (size_t k = 0; k < f.ncaps && status == 0; k++)
        if (!write_capture(&f, &f.caps[k], f.ncaps > 1, out))
            status = 2;
    if (status == 0 && lines == 0)
        fputs("vramtrace export: no device memory was live then: the file is empty\n", err);
    for (size_t k = 0; k < f.ncaps; k++)
        free(f.caps[k].sites);
    free(f.caps);
    for (size_t i = 0; i < opened; i++)
        vt_export_trace_free(&f.traces[i]);
    free(f.traces);
    return status;
}
