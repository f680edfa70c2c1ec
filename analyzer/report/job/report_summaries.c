/*
 * The two halves of a report over many nodes (job_summary.h): writing a
 * node's summary from its traces, and the job report from the summaries.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <stdlib.h>
#include <string.h>

#include "input_errors.h"
#include "job_summary.h"
#include "output_file.h"
#include "report_document.h"
#include "report_html.h"
#include "stack_line.h"

int vt_report_write_summary(struct vt_run_result *run, const struct vt_report_options *opt,
                            const char *path, FILE *err)
{
    struct vt_job_timelines *timelines = &run->timelines;
    const struct vt_analysis *analysis = &run->a;
    int status = run->status;
    bool partial = run->partial; /* the rest is summarized */
    if (partial)
        status = 0;
    struct vt_report rep;
    vt_report_init(&rep, analysis, opt);
    if (status == 0 && !vt_report_filters_match(&rep, err))
        status = 2;
    struct vt_job_view *views = calloc(analysis->njobs + 1, sizeof *views);
    struct vt_job_view **list = calloc(analysis->njobs + 1, sizeof *list);
    size_t n = 0;
    if (status == 0 && (!views || !list)) {
        fprintf(err, "vramtrace: out of memory\n");
        status = 2;
    }
    for (size_t k = 0; status == 0 && k < analysis->njobs; k++) {
        if (!vt_job_view_of_traces(&rep, k, timelines, &views[n])) {
            fprintf(err, "vramtrace: out of memory\n");
            status = 2;
        } else if (views[n].nprocesses) {
            list[n] = &views[n];
            n++;
        } else {
            vt_job_view_free(&views[n]);
        }
    }
    /* Whole or not at all (output_file.h): the report over the summaries
     * may run while a node still writes its own. */
    struct vt_output_file out;
    if (status == 0 && !vt_output_file_open(&out, path, "report --summary", err))
        status = 2;
    if (status == 0) {
        struct vt_json j;
        vt_json_init(&j, out.f, false);
        vt_job_summary_write(list, n, timelines->resolution_ns, &j);
        if (!vt_output_file_commit(&out, "report --summary", err))
            status = 2;
    }
    for (size_t k = 0; k < n; k++)
        vt_job_view_free(list[k]);
    free(views);
    free(list);
    status = vt_report_traces_said(analysis, partial, status, "summary", err);
    vt_report_free(&rep);
    return status;
}

static size_t count_gpus(const struct vt_job_summaries *s)
{
    size_t n = 0;
    for (size_t k = 0; k < s->n; k++) {
        struct vt_job_figures f;
        if (vt_job_figures_of(s->views[k], &f)) {
            n += f.gpus;
            vt_job_figures_free(&f);
        }
    }
    return n;
}

/* What the filters could have chosen: "no rank 9 in the summaries (4
 * ranks, 0 to 3)", from the summaries read again without them. */
static void say_nothing_selected(char *const *paths, size_t npaths,
                                 const struct vt_report_selection *select, FILE *err)
{
    struct vt_job_summaries all = {0};
    struct vt_job_filter none = {0};
    char msg[512];
    for (size_t i = 0; i < npaths; i++)
        vt_job_summaries_read(&all, paths[i], &none, msg, sizeof msg);
    size_t n = 0;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t k = 0; k < all.n; k++)
        for (size_t i = 0; i < all.views[k]->nprocesses; i++) {
            const struct vt_jv_process *p = &all.views[k]->processes[i];
            for (size_t d = 0; d < (select->has_device ? p->ndevices : 1); d++) {
                int64_t v = select->has_rank ? p->rank : select->has_pid ? (int64_t)p->pid
                                          : select->has_device ? p->devices[d].device : -1;
                if (v < 0)
                    continue;
                n++;
                lo = (uint64_t)v < lo ? (uint64_t)v : lo;
                hi = (uint64_t)v > hi ? (uint64_t)v : hi;
            }
        }
    const char *what = select->has_rank ? "rank" : select->has_pid ? "pid" : "device";
    uint64_t want = select->has_rank ? select->rank : select->has_pid ? select->pid : (uint64_t)select->device;
    if (!select->has_rank && !select->has_pid && !select->has_device)
        fputs("vramtrace report: the summaries hold no process\n", err);
    else if (!n)
        fprintf(err, "vramtrace report: no %s %llu in the summaries (none has a %s)\n", what,
                (unsigned long long)want, what);
    else
        fprintf(err, "vramtrace report: no %s %llu in the summaries (%s from %llu to %llu)\n", what,
                (unsigned long long)want, select->has_device ? "devices" : select->has_rank ? "ranks" : "pids",
                (unsigned long long)lo, (unsigned long long)hi);
    vt_job_summaries_free(&all);
}

/* The JSON document of the job over summaries: the jobs alone. */
static void summaries_json(char *const *paths, size_t npaths, const struct vt_job_summaries *s,
                           const struct vt_input_errors *errors, struct vt_json *j)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "vramtrace_report", VT_REPORT_JSON_VERSION);
    vt_json_key(j, "inputs");
    vt_json_begin_array(j);
    for (size_t i = 0; i < npaths; i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "path", paths[i]);
        vt_json_kv_string(j, "kind", "summary");
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_key(j, "input_errors");
    vt_json_begin_array(j);
    vt_input_errors_json_items(errors, j);
    vt_json_end_array(j);
    /* The processes' and GPUs' details stay in each node's traces. */
    vt_json_key(j, "processes");
    vt_json_begin_array(j);
    vt_json_end_array(j);
    vt_json_key(j, "gpus");
    vt_json_begin_array(j);
    vt_json_end_array(j);
    vt_job_views_json(s->views, s->n, j);
    vt_json_key(j, "snapshots");
    vt_json_begin_array(j);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

/* `report --html FILE SUMMARIES`: the document above and each job's
 * section (report_html.h). */
static int summaries_html(char *const *paths, size_t npaths, const struct vt_job_summaries *s,
                          const struct vt_report_options *opt, const char *html, FILE *err)
{
    if (!vt_report_html_available(err))
        return 2;
    char *doc = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&doc, &len);
    size_t *index = calloc(s->n + 1, sizeof *index);
    if (!mem || !index) {
        if (mem)
            fclose(mem);
        free(doc);
        free(index);
        fprintf(err, "vramtrace: out of memory\n");
        return 2;
    }
    struct vt_json j;
    vt_json_init(&j, mem, false);
    summaries_json(paths, npaths, s, NULL, &j);
    int status = fclose(mem) == 0 ? 0 : 2;
    for (size_t k = 0, listed = 0; k < s->n; k++) {
        index[k] = listed;
        listed += s->views[k]->nprocesses > 0;
    }
    if (status == 0)
        status = vt_report_html(NULL, NULL, 0, opt, doc, len, opt->layout.top, s->views, index, s->n,
                                html, err);
    else
        fprintf(err, "vramtrace: out of memory\n");
    free(index);
    free(doc);
    return status;
}

int vt_report_summaries(char *const *paths, size_t npaths, const struct vt_report_options *opt,
                        bool json, const char *html, FILE *out, FILE *err)
{
    struct vt_job_summaries s = {0};
    struct vt_job_filter filter = {opt->select.has_rank, opt->select.has_pid, opt->select.has_device,
                                   opt->select.rank, opt->select.pid, opt->select.device};
    size_t bad = 0;
    struct vt_input_errors errors = {0};
    for (size_t i = 0; i < npaths; i++) {
        char msg[512];
        if (!vt_job_summaries_read(&s, paths[i], &filter, msg, sizeof msg)) {
            vt_input_error(&errors, err, msg);
            bad++;
        } else if (s.repeated) {
            fprintf(err, "vramtrace: %s: %zu process%s read already (the same host and pid in "
                         "the same session): read once\n",
                    paths[i], s.repeated, s.repeated == 1 ? "" : "es");
        }
    }
    vt_input_errors_summary(&errors, err);
    size_t processes = 0;
    for (size_t k = 0; k < s.n; k++)
        processes += s.views[k]->nprocesses;
    int status = 0;
    if (bad == npaths) {
        status = 2;
    } else if (!processes) {
        say_nothing_selected(paths, npaths, &opt->select, err);
        status = 2;
    } else if (html) {
        status = summaries_html(paths, npaths, &s, opt, html, err);
    } else if (json) {
        struct vt_json j;
        vt_json_init(&j, out, true);
        summaries_json(paths, npaths, &s, &errors, &j);
        vt_json_newline(&j);
        status = ferror(out) ? 2 : 0;
    } else {
        size_t gpus = count_gpus(&s);
        fprintf(out, "vramtrace report: %zu process%s, %zu GPU%s, from %zu summar%s\n\n",
                processes, processes == 1 ? "" : "es", gpus, gpus == 1 ? "" : "s",
                npaths - bad, npaths - bad == 1 ? "y" : "ies");
        for (size_t k = 0; k < s.n; k++) {
            if (!s.views[k]->nprocesses)
                continue;
            if (s.n > 1)
                vt_job_header_text(out, k, s.n, s.views[k]->session, s.views[k]->session_host,
                                   s.views[k]->session_command);
            vt_job_view_text(s.views[k], opt->select.has_rank || opt->select.has_pid || opt->select.has_device, out);
        }
        status = ferror(out) ? 2 : 0;
    }
    if (status == 0 && bad) {
        fprintf(err, "vramtrace: %zu of %zu summaries could not be read (above); the report "
                     "covers the rest\n", bad, npaths);
        status = VT_REPORT_PARTIAL;
    }
    vt_job_summaries_free(&s);
    vt_input_errors_free(&errors);
    return status;
}
