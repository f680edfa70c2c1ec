/* Two runs compared and written, text or JSON; see diff.h. What a side
 * is reduced to: diff_profile.c; how the sides are paired: diff_match.c. */
#define _GNU_SOURCE
#include "diff.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "diff_match.h"
#include "diff_profile.h"
#include "format.h"
#include "grow_array.h"
#include "json_writer.h"
#include "parts_split.h"
#include "stack_line.h"

static int64_t delta(uint64_t before, uint64_t after)
{
    return after >= before ? (int64_t)(after - before) : -(int64_t)(before - after);
}

static const char *status_of(const struct diff_change *c)
{
    return !c->b ? "new" : !c->a ? "gone" : c->after > c->before ? "grew"
           : c->after < c->before                                 ? "shrank"
                                                                  : "same";
}

static uint64_t phase_peak(const struct diff_unit *u, const char *name, bool *found)
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
static struct phase_row *phase_rows(const struct diff_unit *before, const struct diff_unit *after,
                                    size_t *n)
{
    size_t cap = (before ? before->nphases : 0) + (after ? after->nphases : 0);
    struct phase_row *rows = calloc(cap + 1, sizeof *rows);
    *n = 0;
    const struct diff_unit *sides[2] = {after, before};
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

/* A peak grew more than --fail-above allows (before 0: a share grows
 * without bound). */
static bool exceeds(const struct vt_diff_options *opt, uint64_t before, uint64_t after)
{
    if (!opt->has_limit || after <= before)
        return false;
    if (!opt->limit_is_percent)
        return after - before > opt->limit_bytes;
    return !before || (double)(after - before) * 100.0 / (double)before > opt->limit_percent;
}

/* Whether --fail-above gates a unit's peak (its process's on the device):
 * where the after side has it; a unit absent before counts as grown from
 * nothing. */
static bool unit_exceeds(const struct vt_diff_options *opt, const struct diff_pair *pr)
{
    return pr->after && exceeds(opt, pr->before ? pr->before->peak : 0, pr->after->peak);
}

/* ... a phase's peak: where both sides have the phase (one only one side
 * has is in the unit's peak, which is gated). */
static bool phase_exceeds(const struct vt_diff_options *opt, const struct phase_row *r)
{
    return r->in_before && r->in_after && exceeds(opt, r->before, r->after);
}

/* A peak --fail-above found grown more than it allows. */
struct gate_hit {
    const char *unit;
    const char *phase;          /* NULL: the unit's own peak */
    bool in_before;
    uint64_t before, after;
};

struct gate {
    struct gate_hit *hits;
    size_t n, cap;
    bool out_of_memory;
};

static void gate_add(struct gate *g, struct gate_hit h)
{
    if (!vt_grow_array((void **)&g->hits, &g->cap, g->n + 1, sizeof *g->hits))
        g->out_of_memory = true;
    else
        g->hits[g->n++] = h;
}

/* Every peak the diff shows, gated: each unit's, each phase's. */
static void gate_peaks(struct gate *g, const struct diff_pair *pairs, size_t np,
                       const struct vt_diff_options *opt)
{
    for (size_t i = 0; i < np && opt->has_limit; i++) {
        const struct diff_pair *pr = &pairs[i];
        if (unit_exceeds(opt, pr))
            gate_add(g, (struct gate_hit){pr->name, NULL, pr->before != NULL,
                                                pr->before ? pr->before->peak : 0,
                                                pr->after->peak});
        size_t nrows;
        struct phase_row *rows = phase_rows(pr->before, pr->after, &nrows);
        if (!rows)
            g->out_of_memory = true;
        for (size_t k = 0; rows && k < nrows; k++)
            if (phase_exceeds(opt, &rows[k]))
                gate_add(g, (struct gate_hit){pr->name, rows[k].name, true,
                                                    rows[k].before, rows[k].after});
        free(rows);
    }
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

#define ABOVE "  ** above --fail-above **"

/* "2 (fragmented 40.00 MiB, exhausted 1.00 GiB)", "none", "absent". */
static void text_side_failures(FILE *out, const struct diff_unit *u)
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

static void text_failures(FILE *out, const struct diff_pair *pr)
{
    if ((!pr->before || !pr->before->nfailures) && (!pr->after || !pr->after->nfailures))
        return;
    fputs("  failed requests: ", out);
    text_side_failures(out, pr->before);
    fputs(" -> ", out);
    text_side_failures(out, pr->after);
    fputc('\n', out);
}

static void json_side_failures(struct vt_json *j, const char *key, const struct diff_unit *u)
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
static bool parts_both(const struct diff_pair *pr)
{
    return pr->before && pr->after && pr->before->parts_known && pr->after->parts_known;
}

static void text_parts(FILE *out, const struct diff_pair *pr)
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
        fprintf(out, "    %-36s %12s %12s %12s %8s\n", vt_split_row_name(vt_diff_part_rows[k]),
                vt_format_bytes(b, sb, sizeof sb), vt_format_bytes(a, sa, sizeof sa),
                signed_bytes(d, sd, sizeof sd), percent(b, a, pc, sizeof pc));
    }
    if (grew < DIFF_PARTS)
        fprintf(out, "  the part that grew most: %s, %s\n",
                vt_split_row_name(vt_diff_part_rows[grew]), signed_bytes(most, sd, sizeof sd));
}

static void json_parts(struct vt_json *j, const struct diff_pair *pr)
{
    vt_json_key(j, "parts");
    if (!parts_both(pr)) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_array(j);
    for (size_t k = 0; k < DIFF_PARTS; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "part", vt_split_row_key(vt_diff_part_rows[k]));
        vt_json_kv_uint(j, "before_bytes", pr->before->parts[k]);
        vt_json_kv_uint(j, "after_bytes", pr->after->parts[k]);
        vt_json_kv_int(j, "change_bytes", delta(pr->before->parts[k], pr->after->parts[k]));
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

#define RENAMES_SHOWN 8

/* "  (renamed: function load_weights -> fetch_weights)" after the stack. */
static void text_renames(FILE *out, const struct diff_change *c)
{
    struct diff_rename r[RENAMES_SHOWN];
    size_t n = vt_diff_renames(c, r, RENAMES_SHOWN);
    for (size_t k = 0; k < n; k++)
        fprintf(out, "%s%s %s -> %s", k ? ", " : "  (renamed: ", r[k].what, r[k].before,
                r[k].after);
    if (n)
        fputc(')', out);
}

static void text_phases(FILE *out, const struct diff_pair *pr, const struct vt_diff_options *opt)
{
    char sb[32], sa[32], sd[40], pc[32];
    size_t nrows;
    struct phase_row *rows = phase_rows(pr->before, pr->after, &nrows);
    for (size_t i = 0; rows && i < nrows; i++) {
        const struct phase_row *r = &rows[i];
        if (!i)
            fprintf(out, "  phases (peak while open):\n    %-24s %12s %12s %12s %8s\n", "phase",
                    "before", "after", "change", "");
        fprintf(out, "    %-24s %12s %12s %12s %8s%s\n", r->name,
                r->in_before ? vt_format_bytes(r->before, sb, sizeof sb) : "-",
                r->in_after ? vt_format_bytes(r->after, sa, sizeof sa) : "-",
                signed_bytes(delta(r->before, r->after), sd, sizeof sd),
                percent(r->before, r->after, pc, sizeof pc),
                phase_exceeds(opt, r) ? ABOVE : "");
    }
    free(rows);
}

static void text_sites(FILE *out, const struct diff_pair *pr, const struct vt_diff_options *opt)
{
    char sb[32], sa[32], sd[40];
    size_t n;
    struct diff_change *c = vt_diff_compare_sites(pr->before, pr->after, &n);
    size_t shown = 0;
    for (size_t i = 0; c && i < n && (!opt->top || shown < opt->top); i++) {
        if (c[i].before == c[i].after && !c[i].renamed)
            continue;
        if (!shown++)
            fprintf(out, "  call sites at the peak, biggest change first:\n    %12s %12s %12s  "
                         "%-6s  %s\n",
                    "change", "before", "after", "", "allocated at");
        fprintf(out, "    %12s %12s %12s  %-6s  ",
                signed_bytes(delta(c[i].before, c[i].after), sd, sizeof sd),
                vt_format_bytes(c[i].before, sb, sizeof sb),
                vt_format_bytes(c[i].after, sa, sizeof sa), status_of(&c[i]));
        fputs(c[i].a ? c[i].a->shown : c[i].b->shown, out); /* the stack-lines stream fits it */
        text_renames(out, &c[i]);
        fputc('\n', out);
    }
    if (c && !shown)
        fputs("  call sites at the peak: no change\n", out);
    free(c);
}

static void text_unit(FILE *out, const struct diff_pair *pr, const struct vt_diff_options *opt)
{
    uint64_t b = pr->before ? pr->before->peak : 0, a = pr->after ? pr->after->peak : 0;
    char sb[32], sa[32], sd[40], pc[32];
    fprintf(out, "\n%s: peak %s -> %s (%s, %s)%s\n", pr->name,
            pr->before ? vt_format_bytes(b, sb, sizeof sb) : "absent",
            pr->after ? vt_format_bytes(a, sa, sizeof sa) : "absent",
            signed_bytes(delta(b, a), sd, sizeof sd), percent(b, a, pc, sizeof pc),
            unit_exceeds(opt, pr) ? ABOVE : "");
    text_failures(out, pr);
    text_parts(out, pr);
    text_phases(out, pr, opt);
    text_sites(out, pr, opt);
}

/* The last words: which peaks grew more than --fail-above allows. */
static void text_gate(FILE *out, const struct gate *g, const struct vt_diff_options *opt)
{
    char sb[32], sa[32], sd[40], pc[32];
    if (!g->n) {
        fprintf(out, "\n--fail-above %s: no peak grew more\n", opt->limit_text);
        return;
    }
    fprintf(out, "\n--fail-above %s: %zu peak%s grew more: exit status 1\n", opt->limit_text, g->n,
            g->n == 1 ? "" : "s");
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_hit *h = &g->hits[i];
        fprintf(out, "  %s %s%s: %s -> %s (%s, %s)\n", h->unit, h->phase ? "phase " : "peak",
                h->phase ? h->phase : "",
                h->in_before ? vt_format_bytes(h->before, sb, sizeof sb) : "absent",
                vt_format_bytes(h->after, sa, sizeof sa),
                signed_bytes(delta(h->before, h->after), sd, sizeof sd),
                percent(h->before, h->after, pc, sizeof pc));
    }
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

static void json_site(struct vt_json *j, const struct diff_change *c)
{
    vt_json_begin_object(j);
    vt_json_kv_string(j, "status", status_of(c));
    vt_json_kv_int(j, "change_bytes", delta(c->before, c->after));
    vt_json_kv_uint(j, "before_bytes", c->before);
    vt_json_kv_uint(j, "after_bytes", c->after);
    vt_json_kv_uint(j, "before_count", c->before_count);
    vt_json_kv_uint(j, "after_count", c->after_count);
    vt_json_kv_string(j, "frames", c->a ? c->a->frames : c->b->frames);
    vt_json_key(j, "before_frames"); /* where the lines moved, or a name changed */
    if (c->a && c->b && strcmp(c->a->frames, c->b->frames))
        vt_json_string(j, c->b->frames);
    else
        vt_json_null(j);
    vt_json_key(j, "renamed");
    vt_json_begin_array(j);
    struct diff_rename r[RENAMES_SHOWN];
    size_t n = vt_diff_renames(c, r, RENAMES_SHOWN);
    for (size_t k = 0; k < n; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "what", r[k].what);
        vt_json_kv_string(j, "before", r[k].before);
        vt_json_kv_string(j, "after", r[k].after);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void json_unit(struct vt_json *j, const struct diff_pair *pr,
                      const struct vt_diff_options *opt)
{
    uint64_t b = pr->before ? pr->before->peak : 0, a = pr->after ? pr->after->peak : 0;
    vt_json_begin_object(j);
    vt_json_kv_string(j, "name", pr->name);
    json_bytes_change(j, pr->before, b, pr->after, a);
    vt_json_kv_bool(j, "above_limit", unit_exceeds(opt, pr));
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
        vt_json_kv_bool(j, "above_limit", phase_exceeds(opt, &rows[i]));
        vt_json_end_object(j);
    }
    free(rows);
    vt_json_end_array(j);
    vt_json_key(j, "sites");
    vt_json_begin_array(j);
    size_t n;
    struct diff_change *c = vt_diff_compare_sites(pr->before, pr->after, &n);
    for (size_t i = 0; c && i < n && (!opt->top || i < opt->top); i++)
        json_site(j, &c[i]);
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

static void json_gate(struct vt_json *j, const struct gate *g, const struct vt_diff_options *opt)
{
    vt_json_key(j, "fail_above");
    if (!opt->has_limit) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_string(j, "limit", opt->limit_text);
    vt_json_kv_bool(j, "exceeded", g->n > 0);
    vt_json_key(j, "failed");
    vt_json_begin_array(j);
    for (size_t i = 0; i < g->n; i++) {
        const struct gate_hit *h = &g->hits[i];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "unit", h->unit);
        vt_json_key(j, "phase");
        if (h->phase)
            vt_json_string(j, h->phase);
        else
            vt_json_null(j);
        vt_json_kv_uint_or_null(j, "before_peak_bytes", h->in_before, h->before);
        vt_json_kv_uint(j, "after_peak_bytes", h->after);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void json_write(FILE *out, const struct diff_pair *pairs, size_t np, const struct gate *g,
                       const struct vt_diff_side *before, const struct vt_diff_side *after,
                       const struct vt_diff_options *opt)
{
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
    json_gate(&j, g, opt);
    vt_json_end_object(&j);
    vt_json_newline(&j);
}

/* "(1 input)", "(2 inputs, 1 of them a trace's OOM snapshot)". */
static void text_inputs(FILE *out, const struct vt_diff_profile *p)
{
    fprintf(out, "(%zu input%s", p->inputs, p->inputs == 1 ? "" : "s");
    if (p->oom_snapshots)
        fprintf(out, ", %zu of them %s", p->oom_snapshots,
                p->oom_snapshots == 1 ? "a trace's OOM snapshot" : "traces' OOM snapshots");
    fputc(')', out);
}

static int text_write(FILE *out, const struct diff_pair *pairs, size_t np, const struct gate *g,
                      const struct vt_diff_profile *pb, const struct vt_diff_profile *pa,
                      const struct vt_diff_side *before, const struct vt_diff_side *after,
                      const struct vt_diff_options *opt)
{
    /* Stack lines fitted to the width as the text report fits them. */
    FILE *lines = vt_stack_lines_open(out, opt->full_stacks ? 0 : opt->width);
    if (!lines)
        return -1;
    fprintf(lines, "vramtrace diff: before %s ", before->arg);
    text_inputs(lines, pb);
    fprintf(lines, ", after %s ", after->arg);
    text_inputs(lines, pa);
    fputc('\n', lines);
    for (size_t i = 0; i < np; i++)
        text_unit(lines, &pairs[i], opt);
    if (opt->has_limit)
        text_gate(lines, g, opt);
    return vt_stack_lines_close(lines) != 0 ? 1 : 0;
}

int vt_diff_write(const struct vt_diff_profile *before_profile,
                  const struct vt_diff_profile *after_profile, const struct vt_diff_side *before,
                  const struct vt_diff_side *after, const struct vt_diff_options *opt, FILE *out,
                  FILE *err)
{
    size_t np;
    struct diff_pair *pairs = vt_diff_pair_units(before_profile, after_profile, &np);
    struct gate g = {0};
    if (!pairs) {
        fputs("vramtrace diff: out of memory\n", err);
        return 2;
    }
    int status = 0;
    if (!np) {
        fprintf(err, "vramtrace diff: no device memory on either side%s: nothing to compare\n",
                opt->has_device ? " (on that device)" : "");
        status = 2;
    }
    if (status == 0)
        gate_peaks(&g, pairs, np, opt);
    if (status == 0 && g.out_of_memory) {
        fputs("vramtrace diff: out of memory\n", err);
        status = 2;
    }
    if (status == 0 && opt->json) {
        json_write(out, pairs, np, &g, before, after, opt);
    } else if (status == 0) {
        int w = text_write(out, pairs, np, &g, before_profile, after_profile, before, after, opt);
        if (w < 0)
            fputs("vramtrace diff: out of memory\n", err);
        if (w)
            status = 2;
    }
    if (status == 0 && ferror(out))
        status = 2;
    if (status == 0 && g.n)
        status = 1;
    free(g.hits);
    free(pairs);
    return status;
}
