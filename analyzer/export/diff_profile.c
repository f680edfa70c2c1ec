/* A side of `diff` reduced to its processes and units; see diff_profile.h. */
#define _GNU_SOURCE
#include "diff_profile.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "export_input.h"
#include "grow_array.h"
#include "input_files.h"
#include "input_tables.h"
#include "process_env.h"
#include "report.h"
#include "snapshot_analysis.h"
#include "snapshot_render.h"
#include "stack_where.h"

const enum vt_split_row vt_diff_part_rows[DIFF_PARTS] = {
    VT_SPLIT_PARAMETERS, VT_SPLIT_BUFFERS, VT_SPLIT_GRADIENTS, VT_SPLIT_OPTIMIZER_STATE,
    VT_SPLIT_LIBRARY,    VT_SPLIT_REST,
};

static struct diff_proc *add_proc(struct vt_diff_profile *p, const char *program, long rank,
                                  bool snapshot, uint64_t start_ns)
{
    if (!vt_grow_array((void **)&p->procs, &p->procs_cap, p->nprocs + 1, sizeof *p->procs)) {
        p->out_of_memory = true;
        return NULL;
    }
    struct diff_proc *pr = &p->procs[p->nprocs++];
    memset(pr, 0, sizeof *pr);
    snprintf(pr->program, sizeof pr->program, "%s", program);
    pr->rank = rank;
    pr->snapshot = snapshot;
    pr->start_ns = start_ns;
    return pr;
}

static struct diff_unit *add_unit(struct vt_diff_profile *p, int64_t device)
{
    if (!vt_grow_array((void **)&p->units, &p->cap, p->n + 1, sizeof *p->units)) {
        p->out_of_memory = true;
        return NULL;
    }
    struct diff_unit *u = &p->units[p->n++];
    memset(u, 0, sizeof *u);
    u->proc = p->nprocs - 1;
    u->device = device;
    p->procs[u->proc].has_units = true;
    return u;
}

static void add_phase(struct vt_diff_profile *p, struct diff_unit *u, const char *name,
                      uint64_t peak)
{
    char *copy = strdup(name ? name : "?");
    if (!copy ||
        !vt_grow_array((void **)&u->phases, &u->phases_cap, u->nphases + 1, sizeof *u->phases)) {
        free(copy);
        p->out_of_memory = true;
        return;
    }
    u->phases[u->nphases++] = (struct diff_phase){copy, peak};
}

static void add_failure(struct vt_diff_profile *p, struct diff_unit *u, const char *verdict,
                        uint64_t requested)
{
    if (!vt_grow_array((void **)&u->failures, &u->failures_cap, u->nfailures + 1,
                       sizeof *u->failures)) {
        p->out_of_memory = true;
        return;
    }
    struct diff_failure *f = &u->failures[u->nfailures++];
    snprintf(f->verdict, sizeof f->verdict, "%s", verdict);
    f->requested = requested;
}

static void site_free(struct diff_site *s)
{
    for (size_t k = 0; k < s->nfr; k++) {
        free(s->fr[k].function);
        free(s->fr[k].file);
    }
    free(s->fr);
    free(s->key);
    free(s->frames);
    free(s->shown);
}

/* ---- a site's frames ---- */

/* Frames collected for one site, innermost first. */
struct frames_of {
    struct diff_frame *fr;
    size_t n, cap;
    bool failed;
};

static void collect(struct frames_of *c, const char *function, const char *file, uint64_t line,
                    bool named)
{
    if (c->failed || !vt_grow_array((void **)&c->fr, &c->cap, c->n + 1, sizeof *c->fr)) {
        c->failed = true;
        return;
    }
    struct diff_frame *f = &c->fr[c->n];
    f->function = strdup(function);
    f->file = file ? strdup(vt_path_base_name(file)) : NULL;
    f->line = line;
    f->named = named;
    c->n++;
    if (!f->function || (file && !f->file))
        c->failed = true;
}

static void collect_trace_frame(void *ctx, const struct vt_frame *fr)
{
    char label[512];
    if (fr->function)
        collect(ctx, fr->function, fr->file, fr->line, true);
    else /* where it is, as the exports label it */
        collect(ctx, vt_export_frame_label(fr, label, sizeof label), NULL, 0, false);
}

static void collect_snap_frame(void *ctx, const char *file, const char *name, int64_t line)
{
    collect(ctx, name, file, line > 0 ? (uint64_t)line : 0, true);
}

/* The site's key (no lines) and frames (with them), from its frames;
 * `none` when it has none. */
static bool name_site(struct diff_site *s, const char *none)
{
    char *kb = NULL, *fb = NULL;
    size_t kl = 0, fl = 0;
    FILE *k = open_memstream(&kb, &kl), *f = open_memstream(&fb, &fl);
    if (k && f) {
        for (size_t i = 0; i < s->nfr; i++) {
            const struct diff_frame *fr = &s->fr[i];
            const char *sep = i ? " <- " : "";
            fprintf(k, "%s%s", sep, fr->function);
            if (fr->file)
                fprintf(k, " (%s)", fr->file);
            if (fr->file && fr->line)
                fprintf(f, "%s%s (%s:%" PRIu64 ")", sep, fr->function, fr->file, fr->line);
            else
                fprintf(f, "%s%s", sep, fr->function);
        }
        if (!s->nfr) {
            fputs(none, k);
            fputs(none, f);
        }
    }
    bool ok = k && f;
    ok &= !k || fclose(k) == 0;
    ok &= !f || fclose(f) == 0;
    s->key = kb;
    s->frames = fb;
    return ok;
}

static void add_site(struct vt_diff_profile *p, struct diff_unit *u, struct frames_of *c,
                     const char *none, char *shown, uint64_t bytes, uint64_t count)
{
    struct diff_site s = {.fr = c->fr, .nfr = c->n, .shown = shown, .bytes = bytes,
                          .count = count};
    bool ok = !c->failed && shown && name_site(&s, none) &&
              vt_grow_array((void **)&u->sites, &u->sites_cap, u->nsites + 1, sizeof *u->sites);
    if (!ok) {
        site_free(&s);
        p->out_of_memory = true;
        return;
    }
    u->sites[u->nsites++] = s;
}

/* ---- a side's traces ---- */

/* A trace's stack as the text report names it, marked for fitting. */
static char *trace_site_shown(struct vt_input_stack *t, const struct vt_diff_options *opt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    vt_stack_where(f, opt->full_stacks, opt->frames, vt_input_stack_walk, t);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* What a process is paired by across runs: its program's name, not where
 * the build put it, nor its arguments (the runs compared may differ in
 * both); for Python the script's or module's name. */
static void program_name(const struct vt_process_info *info, const char *path, char *buf,
                         size_t n)
{
    size_t arg = info ? vt_process_program_arg(info) : 0;
    const char *prog = info && info->argc && info->argv[arg] ? info->argv[arg]
                       : info && info->exe                   ? info->exe
                                                             : path;
    snprintf(buf, n, "%s", vt_path_base_name(prog));
}

/* Whether snapshot is one of the OOM snapshots the Python bootstrap wrote
 * for input i: named after its trace (TRACE.oomN.pickle), or the one its
 * marks name for one of its devices. */
static bool owned_by(struct vt_report *rep, size_t i, const char *snapshot)
{
    const struct vt_input *in = &rep->a->inputs[i];
    char snap[PATH_MAX], trace[PATH_MAX], named[PATH_MAX], path[PATH_MAX];
    if (!realpath(snapshot, snap) || !realpath(in->path, trace))
        return false;
    size_t tl = strlen(trace), sl = strlen(snap);
    if (!strncmp(snap, trace, tl) && !strncmp(snap + tl, ".oom", 4) && sl > tl + 11 &&
        !strcmp(snap + sl - 7, ".pickle"))
        return true;
    const struct vt_replay *rp = &in->replay;
    for (size_t li = 0; li < rp->nledgers; li++)
        if (rp->ledgers[li].category == VT_CAT_DEVICE &&
            vt_report_torch_last_snapshot(rep, i, rp->ledgers[li].device, path, sizeof path) &&
            realpath(path, named) && !strcmp(named, snap))
            return true;
    return false;
}

static void profile_ledger(struct vt_diff_profile *p, struct vt_report *rep, size_t i,
                           struct vt_symbolizer *sym, const struct vt_ledger *l,
                           const struct vt_diff_options *opt)
{
    const struct vt_input *r = &rep->a->inputs[i];
    struct diff_unit *u = add_unit(p, l->device);
    if (!u)
        return;
    u->peak = l->peak.peak_bytes;
    struct vt_split split;
    vt_split_at_peak(rep, i, l, &split);
    u->parts_known = split.known;
    for (size_t k = 0; k < DIFF_PARTS; k++)
        u->parts[k] = split.rows[vt_diff_part_rows[k]];
    const struct vt_peak_state *peak = &l->peak;
    for (uint32_t k = 0; k < l->sites.nsites && k < peak->cap; k++) {
        if (!peak->bytes[k])
            continue;
        struct vt_input_stack t = {r, sym, l->sites.sites[k].stack};
        struct frames_of c = {0};
        vt_input_stack_walk(&t, collect_trace_frame, &c);
        add_site(p, u, &c, "(no stack)", trace_site_shown(&t, opt), peak->bytes[k],
                 peak->count[k]);
    }
    for (size_t k = 0; k < l->nphases; k++)
        add_phase(p, u, vt_input_string(r, l->phases[k].name), l->phases[k].state.peak_bytes);
    for (size_t m = 0, end; m < l->nooms; m = end) {
        end = vt_oom_request_end(l, m);
        if (!vt_oom_request_failed(l, m))
            continue;
        struct vt_verdict_told told;
        vt_report_verdict(rep, i, l, m, end, &told);
        add_failure(p, u, told.verdict, l->ooms[m].requested_bytes);
    }
}

static int profile_traces(struct vt_diff_profile *p, const struct vt_diff_side *s,
                          const struct vt_run_result *run, const struct vt_diff_options *opt,
                          FILE *err)
{
    const struct vt_analysis *analysis = &run->a;
    int status = run->status;
    /* The failures' verdicts are the report's own (vt_report_verdict). */
    struct vt_report_options ropt = {.layout.top = 1, .sym = opt->sym};
    struct vt_report rep;
    if (status == 0)
        vt_report_init(&rep, analysis, &ropt);
    for (size_t i = 0; i < analysis->ninputs && status == 0 && !p->out_of_memory; i++) {
        const struct vt_input *r = &analysis->inputs[i];
        const struct vt_process_info *info = vt_input_process(r);
        char program[128];
        program_name(info, r->path, program, sizeof program);
        if (!add_proc(p, program, vt_process_rank(info), false,
                      info ? info->start_realtime_ns : 0))
            break;
        for (size_t k = 0; k < s->nsnapshots; k++)
            if (!p->snapshot_owned[k] && owned_by(&rep, i, s->snapshots[k])) {
                p->snapshot_owned[k] = true;
                p->oom_snapshots++;
            }
        struct vt_symbolizer *sym = vt_input_symbolizer_new(r, &opt->sym);
        const struct vt_replay *rp = &r->replay;
        for (size_t li = 0; li < rp->nledgers && !p->out_of_memory; li++) {
            const struct vt_ledger *l = &rp->ledgers[li];
            if (l->category == VT_CAT_DEVICE && (!opt->has_device || l->device == opt->device))
                profile_ledger(p, &rep, i, sym, l, opt);
        }
        vt_symbolizer_free(sym);
    }
    if (status == 0)
        vt_report_free(&rep);
    for (size_t i = 0; i < analysis->ninputs; i++)
        if (vt_input_truncated(&analysis->inputs[i]))
            fprintf(err, "vramtrace: %s: %s\n", analysis->inputs[i].path,
                    vt_input_truncation_note(&analysis->inputs[i]));
    return status;
}

/* ---- a side's snapshots ---- */

/* A snapshot site as the snapshot report names it. */
static char *snap_site_shown(const struct vt_snap_site *site, const struct vt_diff_options *opt)
{
    if (site->before_window)
        return strdup("(allocated before the trace)");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    struct vt_report_layout layout = {.text_frames = opt->frames, .full_stacks = opt->full_stacks};
    vt_snap_print_where(f, site->frames, &layout);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int profile_snapshot(struct vt_diff_profile *p, const struct vt_diff_side *s, size_t k,
                            const struct vt_diff_options *opt, FILE *err)
{
    struct vt_snap_analysis a;
    char msg[512];
    if (vt_snap_analysis_run(&a, s->snapshots[k], msg, sizeof msg)) {
        fprintf(err, "vramtrace: %s\n", msg);
        vt_snap_analysis_free(&a);
        return 2;
    }
    if (!add_proc(p, "snapshot", -1, true, 0))
        goto out;
    for (size_t d = 0; d < a.ndevices && !p->out_of_memory; d++) {
        const struct vt_snap_device *dev = &a.devices[d];
        if (opt->has_device && dev->device != opt->device)
            continue;
        if (!dev->tl.nev && !dev->final_state.nsegs)
            continue;
        struct diff_unit *u = add_unit(p, dev->device);
        if (!u)
            break;
        u->peak = dev->peak_allocated;
        for (size_t i = 0; i < dev->nsites; i++) {
            const struct vt_snap_site *site = &dev->sites[i];
            struct frames_of c = {0};
            const char *none = site->before_window ? "(allocated before the trace)"
                                                   : "(no Python frames)";
            if (!site->before_window)
                vt_snap_explaining_frames(site->frames, collect_snap_frame, &c);
            add_site(p, u, &c, none, snap_site_shown(site, opt), site->bytes, site->count);
        }
        for (size_t i = 0; i < dev->nphases; i++)
            add_phase(p, u, dev->phases[i].name, dev->phases[i].peak_bytes);
    }
out:
    vt_snap_analysis_free(&a);
    return 0;
}

/* ---- the whole side ---- */

static int lines_cmp(const struct diff_site *x, const struct diff_site *y)
{
    for (size_t k = 0; k < x->nfr && k < y->nfr; k++)
        if (x->fr[k].line != y->fr[k].line)
            return x->fr[k].line < y->fr[k].line ? -1 : 1;
    return 0;
}

static int by_key_then_lines(const void *a, const void *b)
{
    const struct diff_site *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : lines_cmp(x, y);
}

/* Sites with the same frames, lines and all (other threads), become one. */
static void merge_sites(struct diff_unit *u)
{
    qsort(u->sites, u->nsites, sizeof *u->sites, by_key_then_lines);
    size_t out = 0;
    for (size_t i = 0; i < u->nsites; i++) {
        struct diff_site *last = out ? &u->sites[out - 1] : NULL;
        if (last && !by_key_then_lines(last, &u->sites[i])) {
            last->bytes += u->sites[i].bytes;
            last->count += u->sites[i].count;
            site_free(&u->sites[i]);
        } else {
            u->sites[out++] = u->sites[i];
        }
    }
    u->nsites = out;
}

/* Each process's place among the side's of its program and rank, by
 * start (then input order). */
static void number_procs(struct vt_diff_profile *p)
{
    for (size_t i = 0; i < p->nprocs; i++) {
        struct diff_proc *x = &p->procs[i];
        x->ordinal = 1;
        x->nsame = 0;
        for (size_t j = 0; j < p->nprocs; j++) {
            const struct diff_proc *y = &p->procs[j];
            if (!y->has_units || y->rank != x->rank || y->snapshot != x->snapshot ||
                strcmp(y->program, x->program))
                continue;
            x->nsame++;
            if (j != i && (y->start_ns < x->start_ns || (y->start_ns == x->start_ns && j < i)))
                x->ordinal++;
        }
    }
}

int vt_diff_profile_build(struct vt_diff_profile **out, const struct vt_diff_side *s,
                          const struct vt_run_result *traces, const struct vt_diff_options *opt,
                          FILE *err)
{
    struct vt_diff_profile *p = calloc(1, sizeof *p);
    *out = p;
    if (p)
        p->snapshot_owned = calloc(s->nsnapshots + 1, sizeof *p->snapshot_owned);
    if (!p || !p->snapshot_owned) {
        fputs("vramtrace diff: out of memory\n", err);
        return 2;
    }
    p->inputs = s->ntraces + s->nsnapshots;
    int status = s->ntraces ? profile_traces(p, s, traces, opt, err) : 0;
    for (size_t k = 0; k < s->nsnapshots && status == 0 && !p->out_of_memory; k++)
        if (!p->snapshot_owned[k])
            status = profile_snapshot(p, s, k, opt, err);
    if (p->out_of_memory) {
        fputs("vramtrace diff: out of memory\n", err);
        status = 2;
    }
    for (size_t i = 0; i < p->n; i++)
        merge_sites(&p->units[i]);
    number_procs(p);
    return status;
}

void vt_diff_profile_free(struct vt_diff_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n; i++) {
        struct diff_unit *u = &p->units[i];
        for (size_t k = 0; k < u->nsites; k++)
            site_free(&u->sites[k]);
        for (size_t k = 0; k < u->nphases; k++)
            free(u->phases[k].name);
        free(u->sites);
        free(u->phases);
        free(u->failures);
    }
    free(p->units);
    free(p->procs);
    free(p->snapshot_owned);
    free(p);
}
