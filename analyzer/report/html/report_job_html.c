/* The HTML page's job block (vt-job): the heatmap's rows; see report_html.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "job_foreign.h"
#include "job_view.h"
#include "json_writer.h"
#include "report_html.h"

/* A page draws at most this many columns of a job (about a screen's
 * width) and this many cells in all (about 11 bytes each in the page):
 * past them, each column of the page is the largest of `merge` columns of
 * the timeline, counted from the job's first. */
#define JOB_PAGE_COLUMNS 1200
#define JOB_PAGE_COLUMNS_MIN 64
#define JOB_PAGE_CELLS 300000

static uint64_t merge_of(size_t ncolumns, size_t rows)
{
    size_t most = rows ? JOB_PAGE_CELLS / rows : JOB_PAGE_COLUMNS;
    if (most > JOB_PAGE_COLUMNS)
        most = JOB_PAGE_COLUMNS;
    if (most < JOB_PAGE_COLUMNS_MIN)
        most = JOB_PAGE_COLUMNS_MIN;
    return ncolumns > most ? (ncolumns + most - 1) / most : 1;
}

static void row_json(const struct vt_jv_process *p, uint64_t first_column, uint64_t merge,
                     struct vt_json *j)
{
    char g[32];
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "pid", p->pid);
    vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
    vt_json_kv_int_or_null(j, "local_rank", p->local_rank >= 0, p->local_rank);
    vt_json_kv_string(j, "host", p->host);
    vt_json_key(j, "devices");
    vt_json_begin_array(j);
    for (size_t d = 0; d < p->ndevices; d++) {
        const struct vt_jv_device *dv = &p->devices[d];
        vt_json_begin_object(j);
        vt_json_kv_int(j, "device", dv->device);
        vt_json_kv_string(j, "gpu", vt_jv_gpu_short(&dv->gpu, g, sizeof g));
        vt_json_kv_string(j, "gpu_name", dv->gpu_name);
        vt_json_kv_uint(j, "peak_bytes", dv->peak_bytes);
        vt_jv_contexts_json(j, dv);
        vt_json_kv_uint_or_null(j, "capacity_bytes", dv->capacity_bytes != 0, dv->capacity_bytes);
        vt_json_kv_uint(j, "failed_requests", dv->failed_requests);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    /* the timeline from its first column, counted from the job's first;
     * none when the job has no timeline (merge 0: not computed, or a span
     * past VT_JOB_COLUMNS_MAX) */
    const struct vt_jv_timeline *tl = &p->timeline;
    size_t n = merge ? tl->n : 0;
    uint64_t off = n ? tl->first - first_column : 0;
    merge = merge ? merge : 1;
    vt_json_kv_uint(j, "first", off / merge);
    vt_json_key(j, "bytes");
    vt_json_begin_array(j);
    for (size_t k = 0; k < n;) {
        uint64_t col = (off + k) / merge, most = 0;
        for (; k < n && (off + k) / merge == col; k++)
            if (tl->max_bytes[k] > most)
                most = tl->max_bytes[k];
        vt_json_uint(j, most);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void count_line(void *ctx, const char *line)
{
    (void)line;
    ++*(size_t *)ctx;
}

static void say_json(void *ctx, const char *line)
{
    vt_json_string(ctx, line);
}

static void job_json(const struct vt_job_view *v, size_t index, struct vt_json *j)
{
    struct vt_job_figures f;
    if (!vt_job_figures_of(v, &f))
        return;
    size_t *row_of = calloc(v->nprocesses + 1, sizeof *row_of);
    if (!row_of) {
        vt_job_figures_free(&f);
        return;
    }
    size_t holders = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        holders += v->processes[i].ndevices > 0;
    uint64_t merge = merge_of(f.ncolumns, holders);
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "job", index);
    vt_json_kv_uint(j, "resolution_ns", v->resolution_ns);
    vt_json_kv_bool(j, "timed", v->has_timelines && f.ncolumns > 0);
    vt_json_kv_uint(j, "first_column", f.first_column);
    vt_json_kv_uint(j, "merge", merge);
    vt_json_kv_uint(j, "columns", (f.ncolumns + merge - 1) / merge);
    /* Rows: the processes that held device memory, by rank (then host,
     * pid), as the text's table orders them. */
    size_t idle = 0, rows = 0;
    vt_json_key(j, "rows");
    vt_json_begin_array(j);
    for (size_t o = 0; o < v->nprocesses; o++) {
        const struct vt_jv_process *p = &v->processes[f.order[o]];
        if (!p->ndevices) {
            idle++;
            row_of[f.order[o]] = SIZE_MAX;
            continue;
        }
        row_of[f.order[o]] = rows++;
        row_json(p, f.first_column, f.ncolumns ? merge : 0, j);
    }
    vt_json_end_array(j);
    vt_json_kv_uint(j, "idle_processes", idle);
    /* The failures by time, as jobs[].first_failure and following_failures
     * list them: each on its row, in its column. */
    vt_json_key(j, "marks");
    vt_json_begin_array(j);
    for (size_t k = 0; k < v->nfailures && k <= VT_JOB_FOLLOWERS_MAX; k++) {
        const struct vt_jv_failure *x = &v->failures[f.failures[k]];
        uint64_t col = x->wall_ns / v->resolution_ns;
        vt_json_begin_object(j);
        vt_json_key(j, "row");
        if (row_of[x->process] != SIZE_MAX)
            vt_json_uint(j, row_of[x->process]);
        else
            vt_json_null(j);
        vt_json_key(j, "column");
        if (f.ncolumns && col >= f.first_column && col - f.first_column < f.ncolumns)
            vt_json_uint(j, (col - f.first_column) / merge);
        else
            vt_json_null(j);
        vt_json_kv_int(j, "since_start_ns", x->since_start_ns);
        vt_json_kv_int(j, "device", x->device);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    /* what the other ranks held on the first failure's GPU, as the text
     * says it under the failure (job_foreign.h); absent when nothing */
    size_t said = 0;
    if (v->nfailures)
        vt_job_foreign_failure_lines(v, f.order, &v->failures[f.failures[0]], count_line, &said);
    if (said) {
        vt_json_key(j, "first_failure_on_gpu");
        vt_json_begin_array(j);
        vt_job_foreign_failure_lines(v, f.order, &v->failures[f.failures[0]], say_json, j);
        vt_json_end_array(j);
    }
    vt_json_end_object(j);
    free(row_of);
    vt_job_figures_free(&f);
}

void vt_job_page_json(struct vt_job_view *const *views, const size_t *index, size_t n,
                      struct vt_json *j)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "vramtrace_job_page", 1);
    vt_json_key(j, "jobs");
    vt_json_begin_array(j);
    for (size_t k = 0; k < n; k++)
        if (views[k]->nprocesses)
            job_json(views[k], index[k], j);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

/* The input of rep behind process p of job `job`'s view: the same pid on
 * the same host (SIZE_MAX if none). */
static size_t input_of(const struct vt_report *rep, size_t job, const struct vt_jv_process *p)
{
    for (size_t i = 0; i < rep->a->ninputs; i++) {
        if (rep->a->inputs[i].job != job || !vt_report_input_selected(rep, i))
            continue;
        const struct vt_process_info *pi = vt_input_process(&rep->a->inputs[i]);
        if (pi && pi->pid == p->pid && !strcmp(pi->hostname ? pi->hostname : "", p->host))
            return i;
    }
    return SIZE_MAX;
}

static void mark(const struct vt_report *rep, size_t job, const struct vt_job_view *v,
                 size_t process, unsigned char why, unsigned char *detail, size_t *n)
{
    size_t i = input_of(rep, job, &v->processes[process]);
    if (i == SIZE_MAX || (why == VT_DETAIL_FIRST && detail[i]))
        return;
    *n += !detail[i];
    detail[i] |= why;
}

size_t vt_job_page_detail(const struct vt_report *rep, size_t job, const struct vt_job_view *v,
                          unsigned char *detail)
{
    size_t inputs = 0;
    for (size_t i = 0; i < rep->a->ninputs; i++)
        inputs += rep->a->inputs[i].job == job && vt_report_input_selected(rep, i);
    if (inputs <= VT_REPORT_HTML_PROCESSES)
        return 0;
    struct vt_job_figures f;
    if (!vt_job_figures_of(v, &f))
        return 0; /* out of memory: every process detailed, as before */
    for (size_t i = 0; i < rep->a->ninputs; i++)
        if (rep->a->inputs[i].job == job)
            detail[i] = 0;
    size_t n = 0, failed = 0;
    /* the failures in time order: each failing process once */
    for (size_t k = 0; k < v->nfailures && failed < VT_REPORT_HTML_DETAILED; k++) {
        size_t before = n;
        mark(rep, job, v, v->failures[f.failures[k]].process, VT_DETAIL_FAILED, detail, &n);
        failed += n > before;
    }
    if (f.holders) {
        mark(rep, job, v, f.largest_process, VT_DETAIL_LARGEST, detail, &n);
        mark(rep, job, v, f.smallest_process, VT_DETAIL_SMALLEST, detail, &n);
    }
    for (size_t o = 0; o < f.processes && n < VT_REPORT_HTML_DETAILED; o++)
        mark(rep, job, v, f.order[o], VT_DETAIL_FIRST, detail, &n);
    vt_job_figures_free(&f);
    return inputs - n;
}
