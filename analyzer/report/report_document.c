/* One report, text or JSON, over traces and snapshots; see report_document.h. */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "report_document.h"

#include <stdlib.h>
#include <string.h>

#include "job_view.h"
#include "json_writer.h"
#include "run_traces.h"
#include "report_html.h"
#include "snapshot_render.h"

/* Analyses the snapshots; returns how many were read (a failure is said
 * on err and sets *status). */
static size_t analyse_snapshots(const struct vt_report_inputs *in, struct vt_snap_analysis *snaps,
                                struct vt_input_errors *errors, int *status, FILE *err)
{
    size_t n = 0;
    for (size_t k = 0; k < in->nsnapshots; k++) {
        char msg[512];
        if (vt_snap_analysis_run(&snaps[n], in->snapshots[k], msg, sizeof msg)) {
            vt_input_error(errors, err, msg);
            vt_snap_analysis_free(&snaps[n]);
            *status = 2;
            continue;
        }
        const struct vt_snap_analysis *a = &snaps[n++];
        for (size_t d = 0; d < a->ndevices; d++)
            if (a->devices[d].tl.inconsistencies)
                fprintf(err,
                        "vramtrace: %s: device %lld: %zu trace entries disagree with the final "
                        "state (figures around them are approximate)\n",
                        a->snap.path, (long long)a->devices[d].device,
                        a->devices[d].tl.inconsistencies);
    }
    vt_input_errors_summary(errors, err);
    return n;
}

/* A filter selects nothing: an error. The traces answer for --pid, --device
 * and --phase; snapshots alone for --device. */
static bool filters_match(struct vt_report *rep, const struct vt_snap_analysis *snaps,
                          size_t nsnaps, const struct vt_report_selection *select, FILE *err)
{
    if (rep)
        return vt_report_filters_match(rep, err);
    for (size_t k = 0; k < nsnaps; k++)
        if (!vt_snap_filters_match(&snaps[k], select, err))
            return false;
    return true;
}

static void inputs_json(struct vt_json *j, const struct vt_report_inputs *in)
{
    vt_json_key(j, "inputs");
    vt_json_begin_array(j);
    for (size_t i = 0; i < in->ntraces; i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "path", in->traces[i]);
        vt_json_kv_string(j, "kind", "trace");
        vt_json_end_object(j);
    }
    for (size_t i = 0; i < in->nsnapshots; i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "path", in->snapshots[i]);
        vt_json_kv_string(j, "kind", "snapshot");
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

/* Every input's error, the few said on stderr and the rest. */
static void input_errors_json(struct vt_json *j, const struct vt_report *rep,
                              const struct vt_input_errors *snap_errors)
{
    vt_json_key(j, "input_errors");
    vt_json_begin_array(j);
    vt_input_errors_json_items(rep ? &rep->a->errors : NULL, j);
    vt_input_errors_json_items(snap_errors, j);
    vt_json_end_array(j);
}

static int write_json(struct vt_report *rep, const struct vt_snap_analysis *snaps, size_t nsnaps,
                      const struct vt_input_errors *snap_errors,
                      const struct vt_report_inputs *in, const struct vt_report_options *opt,
                      FILE *out, bool pretty)
{
    struct vt_json j;
    vt_json_init(&j, out, pretty);
    vt_json_begin_object(&j);
    vt_json_kv_uint(&j, "vramtrace_report", VT_REPORT_JSON_VERSION);
    inputs_json(&j, in);
    input_errors_json(&j, rep, snap_errors);
    bool ok = vt_report_json_traces(rep, &j);
    vt_json_key(&j, "snapshots");
    vt_json_begin_array(&j);
    for (size_t k = 0; k < nsnaps; k++)
        vt_snap_report_json_object(&snaps[k], &opt->select, &opt->layout, &j);
    vt_json_end_array(&j);
    vt_json_end_object(&j);
    vt_json_newline(&j);
    return ok && !ferror(out) ? 0 : 2;
}

static int write_text(struct vt_report *rep, const struct vt_snap_analysis *snaps, size_t nsnaps,
                      const struct vt_report_options *opt, FILE *out)
{
    int status = rep ? vt_report_text(rep, out) : 0;
    for (size_t k = 0; k < nsnaps && status == 0; k++) {
        if (rep || k)
            fputc('\n', out);
        status = vt_snap_report_text(&snaps[k], &opt->select, &opt->layout, out);
    }
    return status;
}

/* The page of `report --html` (report_html.c): the JSON document, compact,
 * with more sites per table for its flame graphs, and the timelines. A job
 * of many processes has them for some only (VT_REPORT_HTML_PROCESSES):
 * rep->detail says which, while the page is written. */
static int write_html(struct vt_report *rep, const struct vt_snap_analysis *snaps, size_t nsnaps,
                      const struct vt_input_errors *snap_errors, const struct vt_report_inputs *in, const struct vt_report_options *opt,
                      size_t table_rows, const char *path, FILE *err)
{
    int status = 0;
    /* The job section of each job of several processes or ranks: the same
     * views as the document's jobs[] (index: the place there). */
    size_t njobs = rep ? rep->a->njobs : 0, nviews = 0, listed = 0, hidden = 0;
    size_t ninputs = rep ? rep->a->ninputs : 0;
    struct vt_job_view *views = calloc(njobs + 1, sizeof *views);
    struct vt_job_view **list = calloc(njobs + 1, sizeof *list);
    size_t *index = calloc(njobs + 1, sizeof *index);
    unsigned char *detail = malloc(ninputs + 1);
    if (!views || !list || !index || !detail)
        status = 2;
    else
        memset(detail, VT_DETAIL_ALL, ninputs + 1);
    /* views[k]: job k's view, built once for the page and the document */
    for (size_t k = 0; status == 0 && k < njobs; k++) {
        if (!vt_job_view_of_traces(rep, k, rep->timelines, &views[k])) {
            status = 2;
            break;
        }
        struct vt_job_view *v = &views[k];
        if (!v->nprocesses)
            continue;
        if (vt_job_worth_overview(rep, k)) {
            hidden += vt_job_page_detail(rep, k, v, detail);
            index[nviews] = listed;
            list[nviews] = v;
            nviews++;
        }
        listed++;
    }
    if (rep && hidden)
        rep->detail = detail;
    if (rep && status == 0)
        rep->job_views = views;
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = status == 0 ? open_memstream(&doc, &len) : NULL;
    if (mem) {
        status = write_json(rep, snaps, nsnaps, snap_errors, in, opt, mem, false);
        if (fclose(mem) != 0)
            status = 2;
    } else {
        status = 2;
    }
    if (status == 0)
        status = vt_report_html(rep, snaps, nsnaps, opt, doc, len, table_rows, list, index,
                                nviews, path, err);
    else
        fprintf(err, "vramtrace: out of memory\n");
    if (rep) {
        rep->detail = NULL;
        rep->job_views = NULL;
    }
    for (size_t k = 0; views && k < njobs; k++)
        vt_job_view_free(&views[k]);
    free(views);
    free(list);
    free(index);
    free(detail);
    free(doc);
    return status;
}

static int document(struct vt_run_result *run, const struct vt_report_inputs *in,
                    const struct vt_report_options *opt, enum vt_report_format format, FILE *out,
                    const char *html_path, FILE *err)
{
    int status = 0;
    size_t table_rows = opt->layout.top;
    struct vt_report_options html_opt;
    if (format == VT_REPORT_HTML) {
        html_opt = *opt;
        if (html_opt.layout.top < VT_REPORT_HTML_TOP)
            html_opt.layout.top = VT_REPORT_HTML_TOP;
        opt = &html_opt;
    }
    struct vt_report rep;
    struct vt_report *traces = NULL;
    bool partial = false;
    if (run) {
        status = run->status;
        partial = run->partial; /* the rest is reported */
        if (partial)
            status = 0;
        vt_report_init(&rep, &run->a, opt);
        rep.timelines = run->has_timelines ? &run->timelines : NULL;
        rep.moment_set = run->has_moment_set ? &run->moment_set : NULL;
        rep.timeline_notes = run->has_timeline_notes ? &run->timeline_notes : NULL;
        traces = &rep;
    }
    struct vt_input_errors snap_errors = {0};
    struct vt_snap_analysis *snaps = calloc(in->nsnapshots + 1, sizeof *snaps);
    size_t nsnaps = 0;
    if (!snaps) {
        fprintf(err, "vramtrace: out of memory\n");
        status = 2;
    } else {
        nsnaps = analyse_snapshots(in, snaps, &snap_errors, &status, err);
    }
    if (status == 0 && !filters_match(traces, snaps, nsnaps, &opt->select, err))
        status = 2;
    if (status == 0)
        status = format == VT_REPORT_HTML ? write_html(traces, snaps, nsnaps, &snap_errors, in, opt,
                                                       table_rows, html_path, err)
                 : format == VT_REPORT_JSON ? write_json(traces, snaps, nsnaps, &snap_errors, in,
                                                         opt, out, true)
                                            : write_text(traces, snaps, nsnaps, opt, out);
    if (traces) {
        status = vt_report_traces_said(&run->a, partial, status, "report", err);
        vt_report_free(&rep);
    }
    vt_input_errors_free(&snap_errors);
    for (size_t k = 0; k < nsnaps; k++)
        vt_snap_analysis_free(&snaps[k]);
    free(snaps);
    return status;
}

int vt_report_traces_said(const struct vt_analysis *a, bool partial, int status, const char *what,
                          FILE *err)
{
    for (size_t i = 0; i < a->ninputs; i++)
        if (vt_input_truncated(&a->inputs[i]))
            fprintf(err, "vramtrace: %s: %s\n", a->inputs[i].path,
                    vt_input_truncation_note(&a->inputs[i]));
    if (!partial || status != 0)
        return status;
    fprintf(err, "vramtrace: %zu of %zu trace files could not be read in full (above); "
                 "the %s covers the rest\n",
            a->skipped ? a->skipped : 1, a->nfiles, what);
    return VT_REPORT_PARTIAL;
}

int vt_report_document(struct vt_run_result *run, const struct vt_report_inputs *in,
                       const struct vt_report_options *opt, bool json, FILE *out, FILE *err)
{
    return document(run, in, opt, json ? VT_REPORT_JSON : VT_REPORT_TEXT, out, NULL, err);
}

int vt_report_document_html(struct vt_run_result *run, const struct vt_report_inputs *in,
                            const struct vt_report_options *opt, const char *path, FILE *err)
{
    return document(run, in, opt, VT_REPORT_HTML, NULL, path, err);
}

int vt_report_json(struct vt_report *rep, FILE *out)
{
    char **paths = calloc(rep->a->ninputs + 1, sizeof *paths);
    if (!paths)
        return 2;
    for (size_t i = 0; i < rep->a->ninputs; i++)
        paths[i] = rep->a->inputs[i].path;
    struct vt_report_inputs in = {paths, rep->a->ninputs, NULL, 0};
    int status = write_json(rep, NULL, 0, NULL, &in, rep->opt, out, true);
    free(paths);
    return status;
}
