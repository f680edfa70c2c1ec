/* Two runs compared; see diff.h. */
#define _GNU_SOURCE
#include "diff.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "input_tables.h"
#include "export_trace.h"
#include "format.h"
#include "grow_array.h"
#include "json_writer.h"
#include "parts_split.h"
#include "report.h"
#include "snapshot_analysis.h"
#include "snapshot_render.h"
#include "stack_line.h"
#include "stack_where.h"

struct site {
    char *key;                  /* its frames, innermost first, " <- " between */
    char *shown;                /* as the text report names it (stack_where.h), marked
                                 * for a stack-lines stream to fit */
    uint64_t bytes, count;
};

struct phase {
    char *name;
    uint64_t peak;
};

/* A failed request, with the one verdict every view gives it
 * (report_verdict.c: the allocator's where its snapshot is beside the
 * trace). */
struct failure {
    char verdict[24];
    uint64_t requested;
};

/* The rows of the peak's split diff compares (segment level, the same
 * on both sides: parts_split.h). */
static const enum vt_split_row diff_rows[] = {
    VT_SPLIT_PARAMETERS, VT_SPLIT_BUFFERS, VT_SPLIT_GRADIENTS, VT_SPLIT_OPTIMIZER_STATE,
    VT_SPLIT_LIBRARY,    VT_SPLIT_REST,
};
#define DIFF_PARTS (sizeof diff_rows / sizeof diff_rows[0])

struct unit {
    char name[96];
    uint64_t peak;
    bool parts_known;           /* a census: the peak's split below */
    uint64_t parts[DIFF_PARTS];
    struct site *sites;
    size_t nsites, sites_cap;
    struct phase *phases;
    size_t nphases, phases_cap;
    struct failure *failures;
    size_t nfailures, failures_cap;
};

struct vt_diff_profile {
    size_t inputs;
    struct unit *units;
    size_t n, cap;
    bool out_of_memory;
};

static struct unit *add_unit(struct vt_diff_profile *p, const char *name)
{
    if (!vt_grow_array((void **)&p->units, &p->cap, p->n + 1, sizeof *p->units)) {
        p->out_of_memory = true;
        return NULL;
    }
    struct unit *u = &p->units[p->n++];
    memset(u, 0, sizeof *u);
    snprintf(u->name, sizeof u->name, "%s", name);
    return u;
}

static void add_site(struct vt_diff_profile *p, struct unit *u, char *key, char *shown, uint64_t bytes,
                     uint64_t count)
{
    if (!key || !shown ||
        !vt_grow_array((void **)&u->sites, &u->sites_cap, u->nsites + 1, sizeof *u->sites)) {
        free(key);
        free(shown);
        p->out_of_memory = true;
        return;
    }
    u->sites[u->nsites++] = (struct site){key, shown, bytes, count};
}

static void add_phase(struct vt_diff_profile *p, struct unit *u, const char *name, uint64_t peak)
{
    char *copy = strdup(name ? name : "?");
    if (!copy ||
        !vt_grow_array((void **)&u->phases, &u->phases_cap, u->nphases + 1, sizeof *u->phases)) {
        free(copy);
        p->out_of_memory = true;
        return;
    }
    u->phases[u->nphases++] = (struct phase){copy, peak};
}

static void add_failure(struct vt_diff_profile *p, struct unit *u, const char *verdict, uint64_t requested)
{
    if (!vt_grow_array((void **)&u->failures, &u->failures_cap, u->nfailures + 1,
                       sizeof *u->failures)) {
        p->out_of_memory = true;
        return;
    }
    struct failure *f = &u->failures[u->nfailures++];
    snprintf(f->verdict, sizeof f->verdict, "%s", verdict);
    f->requested = requested;
}

static void profile_free(struct vt_diff_profile *p)
{
    for (size_t i = 0; i < p->n; i++) {
        for (size_t k = 0; k < p->units[i].nsites; k++) {
            free(p->units[i].sites[k].key);
            free(p->units[i].sites[k].shown);
        }
        for (size_t k = 0; k < p->units[i].nphases; k++)
            free(p->units[i].phases[k].name);
        free(p->units[i].sites);
        free(p->units[i].phases);
        free(p->units[i].failures);
    }
    free(p->units);
    memset(p, 0, sizeof *p);
}

/* ---- a side's traces ---- */

struct key_writer {
    FILE *f;
    size_t frames;
};

static void key_frame(void *ctx, const struct vt_frame *fr)
{
    struct key_writer *kw = ctx;
    char label[512];
    fprintf(kw->f, "%s%s", kw->frames++ ? " <- " : "", vt_export_frame_label(fr, label, sizeof label));
}

static char *trace_site_key(const struct vt_input *r, struct vt_symbolizer *sym, uint64_t stack)
{
    char *buf = NULL;
    size_t len = 0;
    struct key_writer kw = {open_memstream(&buf, &len), 0};
    if (!kw.f)
        return NULL;
    vt_input_stack_frames(r, sym, stack, 0, key_frame, &kw);
    if (!kw.frames)
        fputs("(no stack)", kw.f);
    if (fclose(kw.f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* A trace's stack as the text report names it, marked for fitting. */
struct trace_stack {
    const struct vt_input *r;
    struct vt_symbolizer *sym;
    uint64_t stack;
};

static size_t trace_stack_frames(void *src, vt_frame_fn fn, void *ctx)
{
    struct trace_stack *t = src;
    return vt_input_stack_frames(t->r, t->sym, t->stack, 0, fn, ctx);
}

static char *trace_site_shown(const struct vt_input *r, struct vt_symbolizer *sym,
                              uint64_t stack, const struct vt_diff_options *opt)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    struct trace_stack t = {r, sym, stack};
    vt_stack_where(f, opt->full_stacks, opt->frames, trace_stack_frames, &t);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* How a unit is named: "device 0" for a lone process, else by rank (which
 * a rerun keeps) or by its place among the side's inputs. */
static void unit_name(char *buf, size_t n, size_t ninputs, size_t input, long rank,
                      const char *what, int64_t device)
{
    if (ninputs == 1)
        snprintf(buf, n, "device %" PRId64, device);
    else if (rank >= 0)
        snprintf(buf, n, "rank %ld device %" PRId64, rank, device);
    else
        snprintf(buf, n, "%s %zu device %" PRId64, what, input + 1, device);
}

static int profile_traces(struct vt_diff_profile *p, const struct vt_diff_side *s,
                          const struct vt_run_result *run, const struct vt_diff_options *opt,
                          FILE *err)
{
    const struct vt_analysis *analysis = &run->a;
    int status = run->status;
    size_t ninputs = s->ntraces + s->nsnapshots;
    /* The failures' verdicts are the report's own (vt_report_verdict). */
    struct vt_report_options ropt = {.top = 1, .sym = opt->sym};
    struct vt_report rep;
    if (status == 0)
        vt_report_init(&rep, analysis, &ropt);
    for (size_t i = 0; i < analysis->ninputs && status == 0; i++) {
        const struct vt_input *r = &analysis->inputs[i];
        const struct vt_replay *rp = &analysis->inputs[i].replay;
        struct vt_symbolizer *sym = vt_input_symbolizer_new(r, &opt->sym);
        for (size_t li = 0; li < rp->nledgers; li++) {
            const struct vt_ledger *l = &rp->ledgers[li];
            if (l->category != VT_CAT_DEVICE || (opt->has_device && l->device != opt->device))
                continue;
            char name[96];
            unit_name(name, sizeof name, ninputs, i, vt_process_rank(vt_input_process(r)), "process", l->device);
            struct unit *u = add_unit(p, name);
            if (!u)
                break;
            u->peak = l->peak.peak_bytes;
            struct vt_split split;
            vt_split_at_peak(&rep, i, l, &split);
            u->parts_known = split.known;
            for (size_t k = 0; k < DIFF_PARTS; k++)
                u->parts[k] = split.rows[diff_rows[k]];
            const struct vt_peak_snapshot *snap = &l->peak;
            for (uint32_t k = 0; k < l->sites.nsites && k < snap->cap; k++)
                if (snap->bytes[k])
                    add_site(p, u, trace_site_key(r, sym, l->sites.sites[k].stack),
                             trace_site_shown(r, sym, l->sites.sites[k].stack, opt),
                             snap->bytes[k], snap->count[k]);
            for (size_t k = 0; k < l->nphases; k++)
                add_phase(p, u, vt_input_string(r, l->phases[k].name),
                          l->phases[k].snap.peak_bytes);
            for (size_t m = 0, end; m < l->nooms; m = end) {
                end = vt_oom_request_end(l, m);
                if (!vt_oom_request_failed(l, m))
                    continue;
                struct vt_verdict_told told;
                vt_report_verdict(&rep, i, l, m, end, &told);
                add_failure(p, u, told.verdict, l->ooms[m].requested_bytes);
            }
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

static void snap_key_frame(void *ctx, const char *file, const char *name, int64_t line)
{
    struct key_writer *kw = ctx;
    const char *base = strrchr(file, '/');
    fprintf(kw->f, "%s%s (%s:%" PRId64 ")", kw->frames++ ? " <- " : "", name,
            base ? base + 1 : file, line);
}

static char *snap_site_key(const struct vt_snap_site *site)
{
    char *buf = NULL;
    size_t len = 0;
    struct key_writer kw = {open_memstream(&buf, &len), 0};
    if (!kw.f)
        return NULL;
    if (site->before_window)
        fputs("(allocated before the trace)", kw.f);
    else if (!vt_snap_explaining_frames(site->frames, snap_key_frame, &kw))
        fputs("(no Python frames)", kw.f);
    if (fclose(kw.f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

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
    struct vt_report_options ropt = {.text_frames = opt->frames, .full_stacks = opt->full_stacks};
    vt_snap_print_where(f, site->frames, &ropt);
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
    size_t ninputs = s->ntraces + s->nsnapshots;
    for (size_t d = 0; d < a.ndevices; d++) {
        const struct vt_snap_device *dev = &a.devices[d];
        if (opt->has_device && dev->device != opt->device)
            continue;
        if (!dev->tl.nev && !dev->final_state.nsegs)
            continue;
        char name[96];
        unit_name(name, sizeof name, ninputs, s->ntraces + k, -1, "input", dev->device);
        struct unit *u = add_unit(p, name);
        if (!u)
            break;
        u->peak = dev->peak_allocated;
        for (size_t i = 0; i < dev->nsites; i++)
            add_site(p, u, snap_site_key(&dev->sites[i]), snap_site_shown(&dev->sites[i], opt),
                     dev->sites[i].bytes, dev->sites[i].count);
        for (size_t i = 0; i < dev->nphases; i++)
            add_phase(p, u, dev->phases[i].name, dev->phases[i].peak_bytes);
    }
    vt_snap_analysis_free(&a);
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct site *)a)->key, ((const struct site *)b)->key);
}

/* Sites with the same frames (other threads) become one. */
static void merge_sites(struct unit *u)
{
    qsort(u->sites, u->nsites, sizeof *u->sites, by_key);
    size_t out = 0;
    for (size_t i = 0; i < u->nsites; i++) {
        if (out && !strcmp(u->sites[out - 1].key, u->sites[i].key)) {
            u->sites[out - 1].bytes += u->sites[i].bytes;
            u->sites[out - 1].count += u->sites[i].count;
            free(u->sites[i].key);
            free(u->sites[i].shown);
        } else {
            u->sites[out++] = u->sites[i];
        }
    }
    u->nsites = out;
}

int vt_diff_profile_build(struct vt_diff_profile **out, const struct vt_diff_side *s,
                          const struct vt_run_result *traces, const struct vt_diff_options *opt,
                          FILE *err)
{
    struct vt_diff_profile *p = calloc(1, sizeof *p);
    *out = p;
    if (!p) {
        fputs("vramtrace diff: out of memory\n", err);
        return 2;
    }
    p->inputs = s->ntraces + s->nsnapshots;
    int status = s->ntraces ? profile_traces(p, s, traces, opt, err) : 0;
    for (size_t k = 0; k < s->nsnapshots && status == 0; k++)
        status = profile_snapshot(p, s, k, opt, err);
    if (p->out_of_memory) {
        fputs("vramtrace diff: out of memory\n", err);
        status = 2;
    }
    for (size_t i = 0; i < p->n; i++)
        merge_sites(&p->units[i]);
    return status;
}

/* ---- comparing ---- */

struct change {
    const char *key;
    const char *shown; /* the after side's where both have it */
    uint64_t before, after, before_count, after_count;
};

static int64_t delta(uint64_t before, uint64_t after)
{
    return after >= before ? (int64_t)(after - before) : -(int64_t)(before - after);
}

static const char *status_of(const struct change *c)
{
    return !c->before ? "new" : !c->after ? "gone" : c->after > c->before ? "grew"
           : c->after < c->before                                         ? "shrank"
                                                                          : "same";
}

static int by_change_desc(const void *a, const void *b)
{
    const struct change *x = a, *y = b;
    int64_t dx = llabs(delta(x->before, x->after)), dy = llabs(delta(y->before, y->after));
    if (dx != dy)
        return dx < dy ? 1 : -1;
    uint64_t mx = x->after > x->before ? x->after : x->before;
    uint64_t my = y->after > y->before ? y->after : y->before;
    return mx < my ? 1 : mx > my ? -1 : strcmp(x->key, y->key);
}

/* The sites of two units side by side, biggest change first. */
static struct change *compare_sites(const struct unit *b, const struct unit *a, size_t *n)
{
    size_t nb = b ? b->nsites : 0, na = a ? a->nsites : 0, i = 0, k = 0;
    struct change *c = calloc(nb + na + 1, sizeof *c);
    *n = 0;
    if (!c)
        return NULL;
    while (i < nb || k < na) {
        int cmp = i == nb ? 1 : k == na ? -1 : strcmp(b->sites[i].key, a->sites[k].key);
        struct change *x = &c[(*n)++];
        if (cmp <= 0) {
            x->key = b->sites[i].key;
            x->shown = b->sites[i].shown;
            x->before = b->sites[i].bytes;
            x->before_count = b->sites[i++].count;
        }
        if (cmp >= 0) {
            x->key = a->sites[k].key;
            x->shown = a->sites[k].shown;
            x->after = a->sites[k].bytes;
            x->after_count = a->sites[k++].count;
        }
    }
    qsort(c, *n, sizeof *c, by_change_desc);
    return c;
}

static const struct unit *find_unit(const struct vt_diff_profile *p, const char *name)
{
    for (size_t i = 0; i < p->n; i++)
        if (!strcmp(p->units[i].name, name))
            return &p->units[i];
    return NULL;
}

static uint64_t phase_peak(const struct unit *u, const char *name, bool *found)
{
    for (size_t i = 0; u && i < u->nphases; i++)
        if (!strcmp(u->phases[i].name, name)) {
            *found = true;
            return u->phases[i].peak;
        }
    return 0;
}

/* A phase of either side, with its peak on each (found: the side has it). */
struct phase_row {
    const char *name;
    bool in_before, in_after;
    uint64_t before, after;
};

/* The phases of a pair: the after side's in its order, then those only the
 * before side has. Returns how many were written to rows (room for both
 * sides' counts), NULL rows: out of memory. */
static struct phase_row *phase_rows(const struct unit *before, const struct unit *after,
                                    size_t *n)
{
    size_t cap = (before ? before->nphases : 0) + (after ? after->nphases : 0);
    struct phase_row *rows = calloc(cap + 1, sizeof *rows);
    *n = 0;
    const struct unit *sides[2] = {after, before};
    for (int s = 0; rows && s < 2; s++)
        for (size_t i = 0; sides[s] && i < sides[s]->nphases; i++) {
            struct phase_row r = {.name = sides[s]->phases[i].name};
            r.before = phase_peak(before, r.name, &r.in_before);
            r.after = phase_peak(after, r.name, &r.in_after);
            if (s == 1 && r.in_after)
                continue; /* listed with the after side's */
            rows[(*n)++] = r;
        }
    return rows;
}

/* A unit's peak grew more than --fail-above allows. */
static bool exceeds(const struct vt_diff_options *opt, uint64_t before, uint64_t after)
{
    if (!opt->has_limit || after <= before)
        return false;
    if (!opt->limit_is_percent)
        return after - before > opt->limit_bytes;
    return !before || (double)(after - before) * 100.0 / (double)before > opt->limit_percent;
}

/* ---- writing ---- */

static const char *signed_bytes(int64_t d, char *buf, size_t n)
{
    char b[32];
    snprintf(buf, n, "%s%s", d < 0 ? "-" : d > 0 ? "+" : " ",
             vt_format_bytes((uint64_t)llabs(d), b, sizeof b));
    return buf;
}

static const char *percent(uint64_t before, uint64_t after, char *buf, size_t n)
{
    if (!before)
        snprintf(buf, n, "%s", after ? "new" : "");
    else
        snprintf(buf, n, "%+.1f%%", (double)delta(before, after) * 100.0 / (double)before);
    return buf;
}

struct pair {
    const struct unit *before, *after;
    const char *name;
};

/* "2 (fragmented 40.00 MiB, exhausted 1.00 GiB)", "none", "absent". */
static void text_side_failures(FILE *out, const struct unit *u)
{
    char b[32];
    if (!u) {
        fputs("absent", out);
        return;
    }
    if (!u->nfailures) {
        fputs("none", out);
        return;
    }
    fprintf(out, "%zu (", u->nfailures);
    for (size_t k = 0; k < u->nfailures && k < 4; k++)
        fprintf(out, "%s%s %s", k ? ", " : "", u->failures[k].verdict,
                vt_format_bytes(u->failures[k].requested, b, sizeof b));
    if (u->nfailures > 4)
        fprintf(out, ", and %zu more", u->nfailures - 4);
    fputc(')', out);
}

static void text_failures(FILE *out, const struct pair *pr)
{
    if ((!pr->before || !pr->before->nfailures) && (!pr->after || !pr->after->nfailures))
        return;
    fputs("  failed requests: ", out);
    text_side_failures(out, pr->before);
    fputs(" -> ", out);
    text_side_failures(out, pr->after);
    fputc('\n', out);
}

static void json_side_failures(struct vt_json *j, const char *key, const struct unit *u)
{
    vt_json_key(j, key);
    if (!u) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_array(j);
    for (size_t k = 0; k < u->nfailures; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "verdict", u->failures[k].verdict);
        vt_json_kv_uint(j, "requested_bytes", u->failures[k].requested);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

/* Which part grew: the peak's split on both sides (a side without a
 * census has none: the table is left out). */
static bool parts_both(const struct pair *pr)
{
    return pr->before && pr->after && pr->before->parts_known && pr->after->parts_known;
}

static void text_parts(FILE *out, const struct pair *pr)
{
    if (!parts_both(pr))
        return;
    char sb[32], sa[32], sd[40], pc[32];
    size_t grew = DIFF_PARTS;
    int64_t most = 0;
    fprintf(out, "  parts at the peak (segment level):\n    %-36s %12s %12s %12s %8s\n", "part",
            "before", "after", "change", "");
    for (size_t k = 0; k < DIFF_PARTS; k++) {
        uint64_t b = pr->before->parts[k], a = pr->after->parts[k];
        int64_t d = delta(b, a);
        if (d > most)
            most = d, grew = k;
        fprintf(out, "    %-36s %12s %12s %12s %8s\n", vt_split_row_name(diff_rows[k]),
                vt_format_bytes(b, sb, sizeof sb), vt_format_bytes(a, sa, sizeof sa),
                signed_bytes(d, sd, sizeof sd), percent(b, a, pc, sizeof pc));
    }
    if (grew < DIFF_PARTS)
        fprintf(out, "  the part that grew most: %s, %s\n", vt_split_row_name(diff_rows[grew]),
                signed_bytes(most, sd, sizeof sd));
}

static void json_parts(struct vt_json *j, const struct pair *pr)
{
    vt_json_key(j, "parts");
    if (!parts_both(pr)) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_array(j);
    for (size_t k = 0; k < DIFF_PARTS; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "part", vt_split_row_key(diff_rows[k]));
        vt_json_kv_uint(j, "before_bytes", pr->before->parts[k]);
        vt_json_kv_uint(j, "after_bytes", pr->after->parts[k]);
        vt_json_kv_int(j, "change_bytes", delta(pr->before->parts[k], pr->after->parts[k]));
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

static void text_unit(FILE *out, const struct pair *pr, const struct vt_diff_options *opt)
{
    uint64_t b = pr->before ? pr->before->peak : 0, a = pr->after ? pr->after->peak : 0;
    char sb[32], sa[32], sd[40], pc[32];
    fprintf(out, "\n%s: peak %s -> %s (%s, %s)%s\n", pr->name,
            pr->before ? vt_format_bytes(b, sb, sizeof sb) : "absent",
            pr->after ? vt_format_bytes(a, sa, sizeof sa) : "absent",
            signed_bytes(delta(b, a), sd, sizeof sd), percent(b, a, pc, sizeof pc),
            exceeds(opt, b, a) ? "  ** above --fail-above **" : "");
    text_failures(out, pr);
    text_parts(out, pr);
    size_t nrows;
    struct phase_row *rows = phase_rows(pr->before, pr->after, &nrows);
    for (size_t i = 0; rows && i < nrows; i++) {
        const struct phase_row *r = &rows[i];
        if (!i)
            fprintf(out, "  phases (peak while open):\n    %-24s %12s %12s %12s %8s\n", "phase",
                    "before", "after", "change", "");
        fprintf(out, "    %-24s %12s %12s %12s %8s\n", r->name,
                r->in_before ? vt_format_bytes(r->before, sb, sizeof sb) : "-",
                r->in_after ? vt_format_bytes(r->after, sa, sizeof sa) : "-",
                signed_bytes(delta(r->before, r->after), sd, sizeof sd),
                percent(r->before, r->after, pc, sizeof pc));
    }
    free(rows);
    size_t n;
    struct change *c = compare_sites(pr->before, pr->after, &n);
    size_t shown = 0;
    for (size_t i = 0; c && i < n && (!opt->top || shown < opt->top); i++) {
        if (c[i].before == c[i].after)
            continue;
        if (!shown++)
            fprintf(out, "  call sites at the peak, biggest change first:\n    %12s %12s %12s  "
                         "%-6s  %s\n",
                    "change", "before", "after", "", "allocated at");
        fprintf(out, "    %12s %12s %12s  %-6s  ", signed_bytes(delta(c[i].before, c[i].after), sd, sizeof sd),
                vt_format_bytes(c[i].before, sb, sizeof sb),
                vt_format_bytes(c[i].after, sa, sizeof sa), status_of(&c[i]));
        fputs(c[i].shown, out); /* the stack-lines stream fits it */
        fputc('\n', out);
    }
    if (c && !shown)
        fputs("  call sites at the peak: no change\n", out);
    free(c);
}

static void json_bytes_change(struct vt_json *j, bool has_b, uint64_t b, bool has_a, uint64_t a)
{
    vt_json_kv_uint_or_null(j, "before_peak_bytes", has_b, b);
    vt_json_kv_uint_or_null(j, "after_peak_bytes", has_a, a);
    vt_json_kv_int(j, "change_bytes", delta(b, a));
    vt_json_key(j, "change_percent");
    if (b)
        vt_json_double(j, (double)delta(b, a) * 100.0 / (double)b);
    else
        vt_json_null(j);
}

static void json_unit(struct vt_json *j, const struct pair *pr, const struct vt_diff_options *opt)
{
    uint64_t b = pr->before ? pr->before->peak : 0, a = pr->after ? pr->after->peak : 0;
    vt_json_begin_object(j);
    vt_json_kv_string(j, "name", pr->name);
    json_bytes_change(j, pr->before, b, pr->after, a);
    vt_json_kv_bool(j, "above_limit", exceeds(opt, b, a));
    json_side_failures(j, "failures_before", pr->before);
    json_side_failures(j, "failures_after", pr->after);
    json_parts(j, pr);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    size_t nrows;
    struct phase_row *rows = phase_rows(pr->before, pr->after, &nrows);
    for (size_t i = 0; rows && i < nrows; i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", rows[i].name);
        json_bytes_change(j, rows[i].in_before, rows[i].before, rows[i].in_after, rows[i].after);
        vt_json_end_object(j);
    }
    free(rows);
    vt_json_end_array(j);
    vt_json_key(j, "sites");
    vt_json_begin_array(j);
    size_t n;
    struct change *c = compare_sites(pr->before, pr->after, &n);
    for (size_t i = 0; c && i < n && (!opt->top || i < opt->top); i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "status", status_of(&c[i]));
        vt_json_kv_int(j, "change_bytes", delta(c[i].before, c[i].after));
        vt_json_kv_uint(j, "before_bytes", c[i].before);
        vt_json_kv_uint(j, "after_bytes", c[i].after);
        vt_json_kv_uint(j, "before_count", c[i].before_count);
        vt_json_kv_uint(j, "after_count", c[i].after_count);
        vt_json_kv_string(j, "frames", c[i].key);
        vt_json_end_object(j);
    }
    free(c);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void json_side(struct vt_json *j, const char *key, const struct vt_diff_side *s)
{
    vt_json_key(j, key);
    vt_json_begin_object(j);
    vt_json_kv_string(j, "argument", s->arg);
    vt_json_key(j, "inputs");
    vt_json_begin_array(j);
    for (size_t i = 0; i < s->ntraces; i++)
        vt_json_string(j, s->traces[i]);
    for (size_t i = 0; i < s->nsnapshots; i++)
        vt_json_string(j, s->snapshots[i]);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

void vt_diff_profile_free(struct vt_diff_profile *p)
{
    if (!p)
        return;
    profile_free(p);
    free(p);
}

int vt_diff_write(const struct vt_diff_profile *before_profile,
                  const struct vt_diff_profile *after_profile, const struct vt_diff_side *before,
                  const struct vt_diff_side *after, const struct vt_diff_options *opt, FILE *out,
                  FILE *err)
{
    const struct vt_diff_profile *pb = before_profile, *pa = after_profile;
    int status = 0;
    struct pair *pairs = calloc(pb->n + pa->n + 1, sizeof *pairs);
    size_t np = 0;
    if (status == 0 && !pairs) {
        fputs("vramtrace diff: out of memory\n", err);
        status = 2;
    }
    if (status == 0) {
        for (size_t i = 0; i < pb->n; i++)
            pairs[np++] = (struct pair){&pb->units[i], find_unit(pa, pb->units[i].name),
                                        pb->units[i].name};
        for (size_t i = 0; i < pa->n; i++)
            if (!find_unit(pb, pa->units[i].name))
                pairs[np++] = (struct pair){NULL, &pa->units[i], pa->units[i].name};
        if (!np) {
            fprintf(err, "vramtrace diff: no device memory on either side%s: nothing to "
                         "compare\n",
                    opt->has_device ? " (on that device)" : "");
            status = 2;
        }
    }
    bool above = false;
    for (size_t i = 0; i < np; i++)
        above |= exceeds(opt, pairs[i].before ? pairs[i].before->peak : 0,
                         pairs[i].after ? pairs[i].after->peak : 0);
    if (status == 0 && opt->json) {
        struct vt_json j;
        vt_json_init(&j, out, true);
        vt_json_begin_object(&j);
        vt_json_kv_uint(&j, "vramtrace_diff", 1);
        json_side(&j, "before", before);
        json_side(&j, "after", after);
        vt_json_key(&j, "units");
        vt_json_begin_array(&j);
        for (size_t i = 0; i < np; i++)
            json_unit(&j, &pairs[i], opt);
        vt_json_end_array(&j);
        vt_json_key(&j, "fail_above");
        if (opt->has_limit) {
            vt_json_begin_object(&j);
            vt_json_kv_string(&j, "limit", opt->limit_text);
            vt_json_kv_bool(&j, "exceeded", above);
            vt_json_end_object(&j);
        } else {
            vt_json_null(&j);
        }
        vt_json_end_object(&j);
        vt_json_newline(&j);
    } else if (status == 0) {
        /* Stack lines fitted to the width as the text report fits them. */
        FILE *lines = vt_stack_lines_open(out, opt->full_stacks ? 0 : opt->width);
        if (!lines) {
            fputs("vramtrace diff: out of memory\n", err);
            status = 2;
        } else {
            fprintf(lines, "vramtrace diff: before %s (%zu input%s), after %s (%zu input%s)\n",
                    before->arg, pb->inputs, pb->inputs == 1 ? "" : "s", after->arg, pa->inputs,
                    pa->inputs == 1 ? "" : "s");
            for (size_t i = 0; i < np; i++)
                text_unit(lines, &pairs[i], opt);
            if (opt->has_limit)
                fprintf(lines, "\n--fail-above %s: %s\n", opt->limit_text,
                        above ? "a peak grew more: exit status 1" : "no peak grew more");
            if (vt_stack_lines_close(lines) != 0)
                status = 2;
        }
    }
    if (status == 0 && ferror(out))
        status = 2;
    if (status == 0 && above)
        status = 1;
    free(pairs);
    return status;
}
