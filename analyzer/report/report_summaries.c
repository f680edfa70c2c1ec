/*
 * The two halves of a report over many nodes (job_summary.h): writing a
 * node's summary from its traces, and the job report from the summaries.
 */
#include <stdlib.h>
#include <string.h>

#include "job_summary.h"
#include "report_document.h"
#include "stack_line.h"

int vt_report_write_summary(const struct vt_report_inputs *in, const struct vt_report_options *opt,
                            uint64_t resolution_ns, const char *path, FILE *err)
{
    struct vt_job_timelines timelines;
    if (!vt_job_timelines_init(&timelines, in->ntraces, resolution_ns)) {
        fprintf(err, "vramtrace: out of memory\n");
        return 2;
    }
    struct vt_analysis a;
    int status = vt_analysis_run_with(&a, in->traces, in->ntraces, err,
                                      vt_job_timelines_prepare, &timelines);
    bool partial = status != 0 && a.ninputs > 0;
    if (partial)
        status = 0;
    struct vt_report rep;
    vt_report_init(&rep, &a, opt);
    if (status == 0 && !vt_report_filters_match(&rep, err))
        status = 2;
    struct vt_job_view *views = calloc(a.njobs + 1, sizeof *views);
    struct vt_job_view **list = calloc(a.njobs + 1, sizeof *list);
    size_t n = 0;
    if (status == 0 && (!views || !list)) {
        fprintf(err, "vramtrace: out of memory\n");
        status = 2;
    }
    for (size_t k = 0; status == 0 && k < a.njobs; k++) {
        if (!vt_job_view_of_traces(&rep, k, &timelines, &views[n])) {
            fprintf(err, "vramtrace: out of memory\n");
            status = 2;
        } else if (views[n].nprocesses) {
            list[n] = &views[n];
            n++;
        } else {
            vt_job_view_free(&views[n]);
        }
    }
    if (status == 0) {
        bool to_stdout = !strcmp(path, "-");
        FILE *out = to_stdout ? stdout : fopen(path, "w");
        if (!out) {
            fprintf(err, "vramtrace: cannot write %s: %m\n", path);
            status = 2;
        } else {
            struct vt_json j;
            vt_json_init(&j, out, false);
            vt_job_summary_write(list, n, timelines.resolution_ns, &j);
            if (ferror(out) | (to_stdout ? fflush(out) : fclose(out))) {
                fprintf(err, "vramtrace: cannot write %s\n", path);
                status = 2;
            }
        }
    }
    for (size_t k = 0; k < n; k++)
        vt_job_view_free(list[k]);
    free(views);
    free(list);
    if (partial && status == 0) {
        fprintf(err, "vramtrace: %zu of %zu trace files could not be read in full (above); "
                     "the summary covers the rest\n",
                a.skipped ? a.skipped : 1, a.nfiles);
        status = VT_REPORT_PARTIAL;
    }
    vt_report_free(&rep);
    vt_analysis_free(&a);
    vt_job_timelines_free(&timelines);
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

int vt_report_summaries(char *const *paths, size_t npaths, const struct vt_report_options *opt,
                        bool json, FILE *out, FILE *err)
{
    struct vt_job_summaries s = {0};
    struct vt_job_filter filter = {opt->has_rank, opt->has_pid, opt->has_device,
                                   opt->rank, opt->pid, opt->device};
    size_t bad = 0;
    for (size_t i = 0; i < npaths; i++) {
        char msg[512];
        if (!vt_job_summaries_read(&s, paths[i], &filter, msg, sizeof msg)) {
            fprintf(err, "vramtrace: %s\n", msg);
            bad++;
        }
    }
    size_t processes = 0;
    for (size_t k = 0; k < s.n; k++)
        processes += s.views[k]->nprocesses;
    int status = 0;
    if (bad == npaths) {
        status = 2;
    } else if (!processes) {
        fprintf(err, "vramtrace report: the %s select%s no process in the summaries\n",
                opt->has_rank || opt->has_pid || opt->has_device ? "filters" : "summaries",
                opt->has_rank || opt->has_pid || opt->has_device ? "" : "s");
        status = 2;
    } else if (json) {
        struct vt_json j;
        vt_json_init(&j, out, true);
        vt_json_begin_object(&j);
        vt_json_kv_uint(&j, "vramtrace_report", VT_REPORT_JSON_VERSION);
        vt_json_key(&j, "inputs");
        vt_json_begin_array(&j);
        for (size_t i = 0; i < npaths; i++) {
            vt_json_begin_object(&j);
            vt_json_kv_string(&j, "path", paths[i]);
            vt_json_kv_string(&j, "kind", "summary");
            vt_json_end_object(&j);
        }
        vt_json_end_array(&j);
        /* The processes' and GPUs' details stay in each node's traces. */
        vt_json_key(&j, "processes");
        vt_json_begin_array(&j);
        vt_json_end_array(&j);
        vt_json_key(&j, "gpus");
        vt_json_begin_array(&j);
        vt_json_end_array(&j);
        vt_job_views_json(s.views, s.n, &j);
        vt_json_key(&j, "snapshots");
        vt_json_begin_array(&j);
        vt_json_end_array(&j);
        vt_json_end_object(&j);
        vt_json_newline(&j);
        status = ferror(out) ? 2 : 0;
    } else {
        fprintf(out, "vramtrace report: %zu process%s, %zu GPU%s, from %zu summar%s\n\n",
                processes, processes == 1 ? "" : "es", count_gpus(&s), count_gpus(&s) == 1 ? "" : "s",
                npaths - bad, npaths - bad == 1 ? "y" : "ies");
        for (size_t k = 0; k < s.n; k++) {
            if (!s.views[k]->nprocesses)
                continue;
            if (s.n > 1)
                vt_job_header_text(out, k, s.n, s.views[k]->session, s.views[k]->session_host,
                                   s.views[k]->session_command);
            vt_job_view_text(s.views[k], opt->has_rank || opt->has_pid, out);
        }
        status = ferror(out) ? 2 : 0;
    }
    if (status == 0 && bad) {
        fprintf(err, "vramtrace: %zu of %zu summaries could not be read (above); the report "
                     "covers the rest\n", bad, npaths);
        status = VT_REPORT_PARTIAL;
    }
    vt_job_summaries_free(&s);
    return status;
}
