/* `vramtrace report --html`: one self-contained page; see report_html.h. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "report_html.h"

#include <stdlib.h>
#include <string.h>

#include "growth_rule.h"
#include "html_assets.h"
#include "input_tables.h"
#include "job_view.h"
#include "output_file.h"
#include "snapshot_render.h"
#include "parts_split.h"
#include "snapshot_series.h"
#include "timeline_notes.h"

bool vt_report_html_built(void)
{
    return !vt_html_missing[0];
}

bool vt_report_html_available(FILE *err)
{
    if (vt_report_html_built())
        return true;
    fprintf(err, "vramtrace report: --html: %s\n", vt_html_missing);
    return false;
}

static const struct vt_html_asset *asset(const char *name)
{
    for (const struct vt_html_asset *a = vt_html_assets; a->name; a++)
        if (!strcmp(a->name, name))
            return a;
    return NULL;
}

/* ---- the timelines: fed from the notes of the run stage's read ---- */

/* Sets up each detailed ledger's timeline from the result (its time span,
 * its top sites at the peak) and feeds it from what the read noted of
 * those traces (timeline_notes.h). */
static bool run_timelines(struct vt_report *rep, struct vt_timeline *tl, FILE *err)
{
    const struct vt_analysis *a = rep->a;
    bool *chosen = calloc(a->ninputs + 1, sizeof *chosen);
    if (!chosen)
        return false;
    bool ok = true;
    for (size_t i = 0; i < a->ninputs; i++) {
        const struct vt_replay *rp = &a->inputs[i].replay;
        /* the axis ends with the data (replay.h) */
        vt_timeline_init(&tl[i], rp->first_time_ns, vt_replay_data_end(rp),
                         VT_TIMELINE_BUCKETS_DEFAULT);
        if (!vt_report_input_detailed(rep, i))
            continue;
        chosen[i] = true;
        for (size_t k = 0; k < rp->nledgers; k++) {
            const struct vt_ledger *l = &rp->ledgers[k];
            if (!vt_report_ledger_selected(rep, l))
                continue;
            struct vt_site_bytes top[VT_TIMELINE_SITES];
            struct vt_timeline_site sites[VT_TIMELINE_SITES];
            size_t n = vt_sites_top(&l->sites, &l->peak, top, VT_TIMELINE_SITES);
            for (size_t s = 0; s < n; s++)
                sites[s] = (struct vt_timeline_site){top[s].stack, top[s].thread};
            if (!vt_timeline_add_series(&tl[i], l->device, l->category, sites, n))
                ok = false;
        }
    }
    if (!vt_timelines_play(rep->timeline_notes, a, chosen, tl))
        ok = false;
    free(chosen);
    if (!ok)
        fprintf(err, "vramtrace: warning: the timelines of the HTML report are incomplete\n");
    return true;
}

/* "part_bytes": the parts (parameters, buffers, gradients, optimizer
 * state) at each point of the series, by the census nearest it, as the
 * report splits an instant (parts_split.h, segment level); null without a
 * census. The page stacks them beside the sites. */
static void part_bytes_json(struct vt_report *rep, struct vt_json *j, size_t input,
                            const struct vt_timeline_series *s)
{
    struct vt_replay *rp = (struct vt_replay *)&rep->a->inputs[input].replay;
    struct vt_ledger *l = vt_replay_ledger(rp, s->device, s->category);
    const struct vt_column_series *c = &s->cols;
    vt_json_key(j, "part_bytes");
    if (!l || !rp->parts || !rp->parts->ncensuses || s->category != VT_CAT_DEVICE) {
        vt_json_null(j);
        return;
    }
    uint64_t *v = calloc(c->npoints * (VT_PART_COUNT_ - 1) + 1, sizeof *v);
    if (!v) {
        vt_json_null(j);
        return;
    }
    for (size_t p = 0; p < c->npoints; p++) {
        struct vt_parts_at at;
        vt_parts_at(rp->parts, (size_t)(l - rp->ledgers), c->t[p], &at);
        for (unsigned q = VT_PART_PARAMETER; q < VT_PART_COUNT_; q++)
            v[p * (VT_PART_COUNT_ - 1) + q - 1] = at.bytes[q];
    }
    vt_json_begin_object(j);
    for (unsigned q = VT_PART_PARAMETER; q < VT_PART_COUNT_; q++) {
        vt_json_key(j, vt_split_row_key(vt_split_row_of_part(q)));
        vt_json_begin_array(j);
        for (size_t p = 0; p < c->npoints; p++)
            vt_json_uint(j, v[p * (VT_PART_COUNT_ - 1) + q - 1]);
        vt_json_end_array(j);
    }
    vt_json_end_object(j);
    free(v);
}

/* "growth_steps": {"first_step", "t": [...]} - the times (since t0) of
 * the step closings the device's growth (growth_rule.h) rose over, from
 * the run's first (its first_bytes) to the latest (its last_bytes); the
 * first where it is older than the closings whose times are kept - or
 * null. The page draws the growth's rate through them. */
static void growth_steps_json(struct vt_report *rep, struct vt_json *j, size_t input,
                              const struct vt_timeline *tl, const struct vt_timeline_series *s)
{
    const struct vt_input *in = &rep->a->inputs[input];
    struct vt_growth_told g;
    vt_json_key(j, "growth_steps");
    uint64_t *times = NULL;
    size_t n = 0;
    if (s->category == VT_CAT_DEVICE && in->replay.samples && in->replay.samples->device == s->device &&
        vt_growth_told_of(&in->replay, vt_input_device_total(in, s->device), &g) &&
        (times = malloc(VT_GROWTH_TIMES * sizeof *times)))
        n = vt_growth_times(g.grown, times);
    /* closing number c (from 1) of times[k]: closings - n + 1 + k */
    uint64_t first = n ? g.grown->closings - n + 1 : 0;
    size_t skip = n && first < g.grown->run_start ? (size_t)(g.grown->run_start - first) : 0;
    if (n <= skip || times[skip] < tl->grid.t0) {
        vt_json_null(j);
        free(times);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "first_step", first + skip);
    vt_json_key(j, "t");
    vt_json_begin_array(j);
    for (size_t k = skip; k < n; k++)
        vt_json_uint(j, times[k] - tl->grid.t0);
    vt_json_end_array(j);
    vt_json_end_object(j);
    free(times);
}

static void series_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_timeline *tl, const struct vt_timeline_series *s)
{
    char buf[64];
    vt_json_begin_object(j);
    vt_json_key(j, "device");
    if (s->device >= 0)
        vt_json_int(j, s->device);
    else
        vt_json_null(j);
    vt_json_kv_string(j, "kind", vt_category_name(s->category));
    vt_json_key(j, "sites");
    vt_json_begin_array(j);
    for (size_t k = 0; k < s->nsites; k++) {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "stack_id", s->sites[k].stack);
        vt_json_kv_string(j, "thread",
                          vt_report_thread_name(rep, input, s->sites[k].thread, buf, sizeof buf));
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_key(j, "t");
    vt_json_begin_array(j);
    const struct vt_column_series *c = &s->cols;
    for (size_t p = 0; p < c->npoints; p++)
        vt_json_uint(j, c->t[p] - tl->grid.t0);
    vt_json_end_array(j);
    vt_json_key(j, "total");
    vt_json_begin_array(j);
    for (size_t p = 0; p < c->npoints; p++)
        vt_json_uint(j, c->total[p]);
    vt_json_end_array(j);
    vt_json_key(j, "site_bytes");
    vt_json_begin_array(j);
    for (size_t k = 0; k < s->nsites; k++) {
        vt_json_begin_array(j);
        for (size_t p = 0; p < c->npoints; p++)
            vt_json_uint(j, c->parts[p * s->nsites + k]);
        vt_json_end_array(j);
    }
    vt_json_end_array(j);
    part_bytes_json(rep, j, input, s);
    growth_steps_json(rep, j, input, tl, s);
    vt_json_end_object(j);
}

/* ---- the snapshots' allocated and reserved bytes ---- */

static void points_json(struct vt_json *j, const char *key, const uint64_t *v, size_t n,
                        uint64_t minus)
{
    vt_json_key(j, key);
    vt_json_begin_array(j);
    for (size_t p = 0; p < n; p++)
        vt_json_uint(j, v[p] - minus);
    vt_json_end_array(j);
}

/* [{"file", "devices": [{"device", "axis": "time_us" | "entry", "x0", "x1",
 *   "column_width", "x": [...], "allocated": [...], "reserved": [...]}]}]
 * per snapshot, in the document's order: each selected device with trace
 * entries. x in the array: since x0. */
static bool snapshots_json(const struct vt_snap_analysis *snaps, size_t nsnaps,
                           const struct vt_report_selection *select, struct vt_json *j)
{
    bool ok = true;
    vt_json_key(j, "snapshots");
    vt_json_begin_array(j);
    for (size_t k = 0; k < nsnaps; k++) {
        const struct vt_snap_analysis *a = &snaps[k];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "file", a->snap.path);
        vt_json_key(j, "devices");
        vt_json_begin_array(j);
        for (size_t i = 0; i < a->ndevices; i++) {
            const struct vt_snap_device *d = &a->devices[i];
            if (!d->tl.nev || !vt_snap_device_selected(select, d))
                continue;
            struct vt_snap_series s;
            if (!vt_snap_series_build(&s, d, VT_TIMELINE_BUCKETS_DEFAULT)) {
                vt_snap_series_free(&s);
                ok = false;
                continue;
            }
            vt_json_begin_object(j);
            vt_json_kv_int(j, "device", d->device);
            vt_json_kv_string(j, "axis", s.timed ? "time_us" : "entry");
            vt_json_kv_uint(j, "x0", s.grid.t0);
            vt_json_kv_uint(j, "x1", s.grid.t1);
            vt_json_kv_uint(j, "column_width", s.grid.width);
            points_json(j, "x", s.x, s.npoints, s.grid.t0);
            points_json(j, "allocated", s.allocated, s.npoints, 0);
            points_json(j, "reserved", s.reserved, s.npoints, 0);
            vt_json_end_object(j);
            vt_snap_series_free(&s);
        }
        vt_json_end_array(j);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    return ok;
}

/* {"vramtrace_timeline": 1, "buckets": N, "processes": [{"file", "origin_ns",
 *  "t0_ns", "t1_ns", "bucket_ns", "series": [...], "phases": [{"name", "spans"}]}],
 *  "snapshots": [...snapshots_json...]}
 * Times in the arrays are ns since t0_ns (docs/internals/REPORT_INTERNALS.md,
 * "HTML report"). */
static void timelines_json(struct vt_report *rep, const struct vt_timeline *tl,
                           const struct vt_snap_analysis *snaps, size_t nsnaps,
                           const struct vt_report_selection *select, struct vt_json *j,
                           FILE *err)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "vramtrace_timeline", 1);
    vt_json_kv_uint(j, "buckets", VT_TIMELINE_BUCKETS_DEFAULT);
    vt_json_key(j, "processes");
    vt_json_begin_array(j);
    for (size_t i = 0; rep && i < rep->a->ninputs; i++) {
        if (!vt_report_input_detailed(rep, i))
            continue;
        const struct vt_timeline *t = &tl[i];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "file", rep->a->inputs[i].path);
        /* what the text report counts "+1.234s" from (vt_format_reltime) */
        const struct vt_process_info *pi = vt_input_process(&rep->a->inputs[i]);
        bool started = pi && pi->start_mono_ns && pi->start_mono_ns <= t->grid.t0;
        uint64_t origin = started ? pi->start_mono_ns : t->grid.t0;
        vt_json_kv_uint(j, "origin_ns", origin);
        /* the wall clock's time then (ns since the epoch), where the trace
         * ties its clock to it: PyTorch's snapshots count in it */
        bool wall = pi && pi->start_realtime_ns && pi->start_mono_ns &&
                    pi->start_realtime_ns + origin >= pi->start_mono_ns;
        vt_json_kv_uint_or_null(j, "origin_unix_ns", wall,
                                wall ? pi->start_realtime_ns + origin - pi->start_mono_ns : 0);
        vt_json_kv_uint(j, "t0_ns", t->grid.t0);
        vt_json_kv_uint(j, "t1_ns", t->grid.t1);
        vt_json_kv_uint(j, "bucket_ns", t->grid.width);
        vt_json_key(j, "series");
        vt_json_begin_array(j);
        for (size_t k = 0; k < t->nseries; k++)
            series_json(rep, j, i, t, &t->series[k]);
        vt_json_end_array(j);
        vt_json_key(j, "phases");
        vt_json_begin_array(j);
        for (size_t k = 0; k < t->nphases; k++) {
            const struct vt_timeline_phase *p = &t->phases[k];
            const char *name = vt_report_string(rep, i, p->name);
            vt_json_begin_object(j);
            vt_json_kv_string(j, "name", name ? name : "");
            vt_json_key(j, "spans");
            vt_json_begin_array(j);
            for (size_t s = 0; s < p->nspans; s++) {
                vt_json_begin_array(j);
                vt_json_uint(j, p->spans[2 * s] - t->grid.t0);
                vt_json_uint(j, p->spans[2 * s + 1] - t->grid.t0);
                vt_json_end_array(j);
            }
            vt_json_end_array(j);
            vt_json_end_object(j);
        }
        vt_json_end_array(j);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    if (!snapshots_json(snaps, nsnaps, select, j))
        fprintf(err, "vramtrace: warning: the snapshot timelines of the HTML report are incomplete\n");
    vt_json_end_object(j);
}

/* ---- the page's options ---- */

/* {"table_rows": N, "detail": null | {"limit", "processes", "detailed",
 *  "why": [{"file", "reasons": ["failed" | "largest_peak" |
 *  "smallest_peak" | "first_ranks" | "all"]}]}}: detail says, when a job
 * had more processes than VT_REPORT_HTML_PROCESSES, how many of the
 * selected processes the page details and why each. */
static void options_json(const struct vt_report *rep, size_t table_rows, struct vt_json *j)
{
    static const struct {
        unsigned char bit;
        const char *name;
    } reasons[] = {{VT_DETAIL_FAILED, "failed"},
                   {VT_DETAIL_LARGEST, "largest_peak"},
                   {VT_DETAIL_SMALLEST, "smallest_peak"},
                   {VT_DETAIL_FIRST, "first_ranks"},
                   {VT_DETAIL_ALL, "all"}};
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "table_rows", table_rows);
    vt_json_key(j, "detail");
    if (!rep || !rep->detail) {
        vt_json_null(j);
        vt_json_end_object(j);
        return;
    }
    size_t selected = 0, detailed = 0;
    for (size_t i = 0; i < rep->a->ninputs; i++) {
        selected += vt_report_input_selected(rep, i);
        detailed += vt_report_input_detailed(rep, i);
    }
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "limit", VT_REPORT_HTML_PROCESSES);
    vt_json_kv_uint(j, "processes", selected);
    vt_json_kv_uint(j, "detailed", detailed);
    vt_json_key(j, "why");
    vt_json_begin_array(j);
    for (size_t i = 0; i < rep->a->ninputs; i++) {
        if (!vt_report_input_detailed(rep, i))
            continue;
        vt_json_begin_object(j);
        vt_json_kv_string(j, "file", rep->a->inputs[i].path);
        vt_json_key(j, "reasons");
        vt_json_begin_array(j);
        for (size_t r = 0; r < sizeof reasons / sizeof *reasons; r++)
            if (rep->detail[i] & reasons[r].bit)
                vt_json_string(j, reasons[r].name);
        vt_json_end_array(j);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
    vt_json_end_object(j);
}

/* ---- the page ---- */

/* JSON inside <script type="application/json">: every '<' (only ever
 * inside strings) as \u003c, so no "</script>" or "<!--" can end or bend
 * the element. */
static void put_json(FILE *out, const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '<') {
            fwrite(s + from, 1, i - from, out);
            fputs("\\u003c", out);
            from = i + 1;
        }
    fwrite(s + from, 1, n - from, out);
}

static void put_asset(FILE *out, const char *name, const char *open, const char *close)
{
    const struct vt_html_asset *a = asset(name);
    if (!a)
        return;
    fprintf(out, "%s/* %s */\n", open, name);
    fwrite(a->data, 1, a->size, out);
    fprintf(out, "\n%s\n", close);
}

static const char *const styles[] = {"uPlot.min.css", "d3-flamegraph.css", "report.css"};
static const char *const scripts[] = {
    "uPlot.iife.min.js",    "internmap.min.js",     "d3-array.min.js",
    "d3-color.min.js",      "d3-interpolate.min.js", "d3-format.min.js",
    "d3-time.min.js",       "d3-time-format.min.js", "d3-scale.min.js",
    "d3-selection.min.js",  "d3-dispatch.min.js",   "d3-timer.min.js",
    "d3-ease.min.js",       "d3-transition.min.js", "d3-hierarchy.min.js",
    "d3-flamegraph.umd.min.js", "report.js"};

struct page {
    const char *doc, *timeline, *job, *options;
    size_t len, tl_len, job_len, options_len;
};

static void write_page(FILE *out, const struct page *pg)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<meta name=\"generator\" content=\"vramtrace report --html\">\n"
          "<title>vramtrace report</title>\n",
          out);
    for (size_t i = 0; i < sizeof styles / sizeof *styles; i++)
        put_asset(out, styles[i], "<style>", "</style>");
    fputs("</head>\n<body>\n<div id=\"app\"><noscript>This report draws with JavaScript; "
          "`vramtrace report` prints the same figures as text.</noscript></div>\n"
          "<script type=\"application/json\" id=\"vt-report\">",
          out);
    put_json(out, pg->doc, pg->len);
    fputs("</script>\n<script type=\"application/json\" id=\"vt-timeline\">", out);
    put_json(out, pg->timeline, pg->tl_len);
    fputs("</script>\n<script type=\"application/json\" id=\"vt-job\">", out);
    put_json(out, pg->job, pg->job_len);
    fputs("</script>\n<script type=\"application/json\" id=\"vt-options\">", out);
    put_json(out, pg->options, pg->options_len);
    fputs("</script>\n", out);
    for (size_t i = 0; i < sizeof scripts / sizeof *scripts; i++)
        put_asset(out, scripts[i], "<script>", "</script>");
    fputs("</body>\n</html>\n", out);
}

/* Written whole or not at all (output_file.h): a page half written is
 * never left where the browser will open it. */
static int write_file(const char *path, const struct page *pg, FILE *err)
{
    struct vt_output_file out;
    if (!vt_output_file_open(&out, path, "report --html", err))
        return 2;
    write_page(out.f, pg);
    return vt_output_file_commit(&out, "report --html", err) ? 0 : 2;
}

int vt_report_html(struct vt_report *rep, const struct vt_snap_analysis *snaps, size_t nsnaps,
                   const struct vt_report_options *opt, const char *doc, size_t len,
                   size_t table_rows, struct vt_job_view *const *views, const size_t *index,
                   size_t nviews, const char *path, FILE *err)
{
    size_t ninputs = rep ? rep->a->ninputs : 0;
    struct vt_timeline *tl = calloc(ninputs + 1, sizeof *tl);
    char *timeline = NULL, *job = NULL, *options = NULL;
    size_t tl_len = 0, job_len = 0, options_len = 0;
    FILE *mem = tl ? open_memstream(&timeline, &tl_len) : NULL;
    FILE *jmem = mem ? open_memstream(&job, &job_len) : NULL;
    FILE *omem = jmem ? open_memstream(&options, &options_len) : NULL;
    if (!omem) {
        if (jmem)
            fclose(jmem);
        if (mem)
            fclose(mem);
        free(job);
        free(timeline);
        free(tl);
        fprintf(err, "vramtrace: out of memory\n");
        return 2;
    }
    struct vt_json jj;
    vt_json_init(&jj, jmem, false);
    vt_job_page_json(views, index, nviews, &jj);
    bool job_ok = fclose(jmem) == 0;
    struct vt_json oj;
    vt_json_init(&oj, omem, false);
    options_json(rep, table_rows, &oj);
    job_ok = fclose(omem) == 0 && job_ok;
    if (rep)
        run_timelines(rep, tl, err);
    struct vt_json j;
    vt_json_init(&j, mem, false);
    timelines_json(rep, tl, snaps, nsnaps, &opt->select, &j, err);
    int status = fclose(mem) == 0 && job_ok ? 0 : 2;
    for (size_t i = 0; i < ninputs; i++)
        vt_timeline_free(&tl[i]);
    free(tl);
    struct page pg = {doc, timeline, job, options, len, tl_len, job_len, options_len};
    if (status == 0)
        status = write_file(path, &pg, err);
    else
        fprintf(err, "vramtrace: out of memory\n");
    free(timeline);
    free(job);
    free(options);
    return status;
}
