/* A job's view and the figures derived from it; see job_view.h. */
#define _GNU_SOURCE /* qsort_r */
#include "job_view.h"
#include "json_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "peak_contexts.h"

static void free_process(struct vt_jv_process *p)
{
    free(p->host);
    free(p->command);
    for (size_t d = 0; d < p->ndevices; d++) {
        free(p->devices[d].gpu_name);
        free(p->devices[d].site);
    }
    for (size_t c = 0; c < p->ncontexts; c++) {
        free(p->contexts[c].cost);
        free(p->contexts[c].site);
    }
    free(p->contexts);
    free(p->visible_devices);
    free(p->devices);
    for (size_t k = 0; k < p->nphases; k++)
        free(p->phases[k].name);
    free(p->phases);
    free(p->timeline.max_bytes);
    for (size_t k = 0; k < p->nsites; k++)
        free(p->sites[k].name);
    free(p->sites);
}

static void free_failure(struct vt_jv_failure *f)
{
    free(f->api);
    free(f->verdict);
    free(f->user_frame);
    for (size_t k = 0; k < f->nframes; k++)
        free(f->frames[k]);
    free(f->frames);
}

void vt_job_view_free(struct vt_job_view *v)
{
    for (size_t i = 0; i < v->nprocesses; i++)
        free_process(&v->processes[i]);
    for (size_t i = 0; i < v->nfailures; i++)
        free_failure(&v->failures[i]);
    free(v->processes);
    free(v->failures);
    free(v->session);
    free(v->session_host);
    free(v->session_command);
    memset(v, 0, sizeof *v);
}

struct vt_jv_process *vt_job_view_add_process(struct vt_job_view *v)
{
    if (!vt_grow_array((void **)&v->processes, &v->processes_cap, v->nprocesses + 1,
                       sizeof *v->processes))
        return NULL;
    struct vt_jv_process *p = &v->processes[v->nprocesses++];
    memset(p, 0, sizeof *p);
    p->rank = p->local_rank = p->world_size = -1;
    return p;
}

struct vt_jv_failure *vt_job_view_add_failure(struct vt_job_view *v)
{
    if (!vt_grow_array((void **)&v->failures, &v->failures_cap, v->nfailures + 1,
                       sizeof *v->failures))
        return NULL;
    struct vt_jv_failure *f = &v->failures[v->nfailures++];
    memset(f, 0, sizeof *f);
    return f;
}

void vt_job_view_drop_last_process(struct vt_job_view *v)
{
    if (v->nprocesses)
        free_process(&v->processes[--v->nprocesses]);
}

void vt_job_view_drop_last_failure(struct vt_job_view *v)
{
    if (v->nfailures)
        free_failure(&v->failures[--v->nfailures]);
}

bool vt_job_view_merge(struct vt_job_view *dst, struct vt_job_view *src)
{
    if (!vt_grow_array((void **)&dst->processes, &dst->processes_cap,
                       dst->nprocesses + src->nprocesses, sizeof *dst->processes) ||
        !vt_grow_array((void **)&dst->failures, &dst->failures_cap,
                       dst->nfailures + src->nfailures, sizeof *dst->failures))
        return false;
    size_t base = dst->nprocesses;
    memcpy(dst->processes + base, src->processes, src->nprocesses * sizeof *src->processes);
    dst->nprocesses += src->nprocesses;
    for (size_t i = 0; i < src->nfailures; i++) {
        src->failures[i].process += base;
        dst->failures[dst->nfailures++] = src->failures[i];
    }
    dst->has_timelines = dst->has_timelines && src->has_timelines;
    if (!dst->has_session_start && src->has_session_start) {
        dst->has_session_start = true;
        dst->session_start_unix_ns = src->session_start_unix_ns;
    }
    if (!dst->session_host) {
        dst->session_host = src->session_host;
        src->session_host = NULL;
    }
    if (!dst->session_command) {
        dst->session_command = src->session_command;
        src->session_command = NULL;
    }
    src->nprocesses = src->nfailures = 0;
    vt_job_view_free(src);
    return true;
}

static bool same_process(const struct vt_jv_process *a, const struct vt_jv_process *b)
{
    return a->pid == b->pid &&
           (a->host && b->host ? !strcmp(a->host, b->host) : !a->host && !b->host);
}

size_t vt_job_view_drop_known(const struct vt_job_view *known, struct vt_job_view *v)
{
    size_t *at = malloc((v->nprocesses + 1) * sizeof *at); /* new index, SIZE_MAX: left out */
    if (!at)
        return 0; /* out of memory: counted twice rather than lost */
    size_t kept = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        bool seen = false;
        for (size_t k = 0; k < known->nprocesses && !seen; k++)
            seen = same_process(&known->processes[k], &v->processes[i]);
        at[i] = seen ? SIZE_MAX : kept;
        if (seen)
            free_process(&v->processes[i]);
        else
            v->processes[kept++] = v->processes[i];
    }
    size_t dropped = v->nprocesses - kept, nf = 0;
    v->nprocesses = kept;
    for (size_t i = 0; i < v->nfailures; i++) {
        struct vt_jv_failure *f = &v->failures[i];
        if (at[f->process] == SIZE_MAX) {
            free_failure(f);
            continue;
        }
        f->process = at[f->process];
        v->failures[nf++] = *f;
    }
    v->nfailures = nf;
    free(at);
    return dropped;
}

const char *const vt_jv_part_keys[VT_PART_COUNT_ - 1] = {"parameters", "buffers", "gradients",
                                                         "optimizer_state"};

void vt_jv_parts_json(struct vt_json *j, const struct vt_jv_device *d)
{
    vt_json_key(j, "parts");
    if (!d->parts_known) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    for (size_t k = 0; k < VT_PART_COUNT_ - 1; k++)
        vt_json_kv_uint(j, vt_jv_part_keys[k], d->parts[k]);
    vt_json_end_object(j);
}

void vt_jv_contexts_json(struct vt_json *j, const struct vt_jv_device *d)
{
    if (d->contexts_said)
        vt_peak_contexts_json(j, &(struct vt_peak_contexts){d->contexts_bytes,
                                                            d->contexts_unmeasured});
}

bool vt_jv_process_peak(const struct vt_jv_process *p, uint64_t *peak)
{
    *peak = 0;
    for (size_t d = 0; d < p->ndevices; d++)
        if (p->devices[d].peak_bytes > *peak)
            *peak = p->devices[d].peak_bytes;
    return p->ndevices > 0;
}

/* ---- figures ---- */

static int cmp_str(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Processes by rank (those without one last), then host, then pid: an
 * order that does not depend on how the files were split or named. */
static int by_rank(const void *x, const void *y, void *ctx)
{
    const struct vt_job_view *v = ctx;
    const struct vt_jv_process *a = &v->processes[*(const size_t *)x],
                               *b = &v->processes[*(const size_t *)y];
    if (a->rank != b->rank)
        return a->rank < 0 ? 1 : b->rank < 0 ? -1 : a->rank < b->rank ? -1 : 1;
    int c = cmp_str(a->host, b->host);
    if (c)
        return c;
    return a->pid < b->pid ? -1 : a->pid > b->pid;
}

struct failure_order {
    const struct vt_job_view *v;
    const size_t *rank_of; /* process -> its place in the rank order */
};

static int by_time(const void *x, const void *y, void *ctx)
{
    const struct failure_order *o = ctx;
    const struct vt_jv_failure *a = &o->v->failures[*(const size_t *)x],
                               *b = &o->v->failures[*(const size_t *)y];
    if (a->wall_ns != b->wall_ns)
        return a->wall_ns < b->wall_ns ? -1 : 1;
    if (a->process != b->process)
        return o->rank_of[a->process] < o->rank_of[b->process] ? -1 : 1;
    return a->time_ns < b->time_ns ? -1 : a->time_ns > b->time_ns;
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Without overflow when n is even. */
uint64_t vt_jv_median(const uint64_t *v, size_t n)
{
    if (n % 2)
        return v[n / 2];
    uint64_t a = v[n / 2 - 1], b = v[n / 2];
    return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

/* A GPU as the job counts them: (host, UUID), or, without a UUID, a GPU
 * of its own process: (host, pid, ordinal). */
struct gpu_key {
    const char *host;
    bool has_uuid;
    const uint8_t *uuid;
    uint64_t pid;
    int64_t device;
};

static int cmp_gpu(const void *x, const void *y)
{
    const struct gpu_key *a = x, *b = y;
    int c = cmp_str(a->host, b->host);
    if (c)
        return c;
    if (a->has_uuid != b->has_uuid)
        return a->has_uuid ? -1 : 1;
    if (a->has_uuid)
        return memcmp(a->uuid, b->uuid, VT_UUID_SIZE);
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->device < b->device ? -1 : a->device > b->device;
}

static int cmp_host(const void *x, const void *y)
{
    return cmp_str(*(const char *const *)x, *(const char *const *)y);
}

/* Distinct hosts and GPUs: sorted, then counted (a job of 16k ranks
 * compares 16k x log keys, not 16k^2). False if memory ran out. */
static bool count_hosts_and_gpus(const struct vt_job_view *v, struct vt_job_figures *f)
{
    size_t ndev = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        ndev += v->processes[i].ndevices;
    const char **hosts = calloc(v->nprocesses + 1, sizeof *hosts);
    struct gpu_key *gpus = calloc(ndev + 1, sizeof *gpus);
    if (!hosts || !gpus) {
        free(hosts);
        free(gpus);
        return false;
    }
    size_t n = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_process *p = &v->processes[i];
        hosts[i] = p->host;
        for (size_t d = 0; d < p->ndevices; d++)
            gpus[n++] = (struct gpu_key){p->host, p->devices[d].gpu.has_uuid,
                                         p->devices[d].gpu.uuid, p->pid, p->devices[d].device};
    }
    qsort(hosts, v->nprocesses, sizeof *hosts, cmp_host);
    qsort(gpus, n, sizeof *gpus, cmp_gpu);
    for (size_t i = 0; i < v->nprocesses; i++)
        f->hosts += !i || cmp_host(&hosts[i - 1], &hosts[i]);
    for (size_t i = 0; i < n; i++)
        f->gpus += !i || cmp_gpu(&gpus[i - 1], &gpus[i]);
    free(hosts);
    free(gpus);
    return true;
}

/* Peaks of each phase name across the processes that had it. */
static bool phase_figures(const struct vt_job_view *v, struct vt_job_figures *f, uint64_t *values)
{
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_process *p = &v->processes[f->order[i]];
        for (size_t k = 0; k < p->nphases; k++) {
            const char *name = p->phases[k].name;
            size_t m = 0;
            while (m < f->nphases && cmp_str(f->phases[m].name, name))
                m++;
            if (m == f->nphases) {
                if (f->nphases == VT_JOB_PHASES_MAX) {
                    f->more_phases++;
                    continue;
                }
                f->phases[f->nphases++] = (struct vt_job_phase_figure){.name = name};
            }
        }
    }
    for (size_t m = 0; m < f->nphases; m++) {
        struct vt_job_phase_figure *ph = &f->phases[m];
        for (size_t i = 0; i < v->nprocesses; i++) {
            size_t pi = f->order[i];
            const struct vt_jv_process *p = &v->processes[pi];
            for (size_t k = 0; k < p->nphases; k++) {
                if (cmp_str(p->phases[k].name, ph->name))
                    continue;
                uint64_t b = p->phases[k].peak_bytes;
                if (!ph->processes || b > ph->largest) {
                    ph->largest = b;
                    ph->largest_process = pi;
                }
                if (!ph->processes || b < ph->smallest) {
                    ph->smallest = b;
                    ph->smallest_process = pi;
                }
                values[ph->processes++] = b;
                break;
            }
        }
        qsort(values, ph->processes, sizeof *values, cmp_u64);
        ph->median = ph->processes ? vt_jv_median(values, ph->processes) : 0;
    }
    return true;
}

/* The largest process's bytes in each column of the job's time. */
static bool column_figures(const struct vt_job_view *v, struct vt_job_figures *f)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_timeline *tl = &v->processes[i].timeline;
        if (!tl->n)
            continue;
        if (tl->first < lo)
            lo = tl->first;
        if (tl->first + tl->n > hi)
            hi = tl->first + tl->n;
    }
    /* A job of 100 days at 10 s is 864,000 columns; a span past
     * VT_JOB_COLUMNS_MAX is clocks gone wrong (or a hostile summary): no
     * timeline then, rather than one of millions of columns. */
    if (lo >= hi || hi - lo > VT_JOB_COLUMNS_MAX)
        return true;
    f->first_column = lo;
    f->ncolumns = (size_t)(hi - lo);
    f->column_max = calloc(f->ncolumns, sizeof *f->column_max);
    if (!f->column_max)
        return false;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_timeline *tl = &v->processes[i].timeline;
        for (size_t k = 0; k < tl->n; k++) {
            uint64_t *c = &f->column_max[tl->first - lo + k];
            if (tl->max_bytes[k] > *c)
                *c = tl->max_bytes[k];
        }
    }
    return true;
}

bool vt_job_figures_of(const struct vt_job_view *v, struct vt_job_figures *f)
{
    memset(f, 0, sizeof *f);
    f->world_size = -1;
    size_t n = v->nprocesses;
    f->order = calloc(n + 1, sizeof *f->order);
    f->failures = calloc(v->nfailures + 1, sizeof *f->failures);
    size_t *rank_of = calloc(n + 1, sizeof *rank_of);
    uint64_t *values = calloc(n + 1, sizeof *values);
    bool ok = f->order && f->failures && rank_of && values;
    for (size_t i = 0; ok && i < n; i++)
        f->order[i] = i;
    if (ok) {
        qsort_r(f->order, n, sizeof *f->order, by_rank, (void *)v);
        for (size_t i = 0; i < n; i++)
            rank_of[f->order[i]] = i;
    }
    f->processes = n;
    for (size_t o = 0; ok && o < n; o++) {
        size_t i = f->order[o];
        const struct vt_jv_process *p = &v->processes[i];
        f->ranks += p->rank >= 0;
        if (p->world_size > f->world_size)
            f->world_size = p->world_size;
        uint64_t peak;
        if (!vt_jv_process_peak(p, &peak))
            continue;
        if (!f->holders || peak > f->largest) {
            f->largest = peak;
            f->largest_process = i;
        }
        if (!f->holders || peak < f->smallest) {
            f->smallest = peak;
            f->smallest_process = i;
        }
        values[f->holders++] = peak;
    }
    if (ok && f->holders) {
        qsort(values, f->holders, sizeof *values, cmp_u64);
        f->median = vt_jv_median(values, f->holders);
    }
    if (ok) {
        ok = count_hosts_and_gpus(v, f);
        for (size_t k = 0; k < v->nfailures; k++)
            f->failures[k] = k;
        struct failure_order fo = {v, rank_of};
        qsort_r(f->failures, v->nfailures, sizeof *f->failures, by_time, &fo);
        ok = ok && phase_figures(v, f, values) && column_figures(v, f);
    }
    free(rank_of);
    free(values);
    if (!ok)
        vt_job_figures_free(f);
    return ok;
}

void vt_job_figures_free(struct vt_job_figures *f)
{
    free(f->order);
    free(f->failures);
    free(f->column_max);
    memset(f, 0, sizeof *f);
}

const char *vt_jv_gpu_short(const struct vt_jv_gpu_id *g, char *buf, size_t n)
{
    if (!g->has_uuid)
        return "?";
    snprintf(buf, n, "GPU-%02x%02x%02x%02x", g->uuid[0], g->uuid[1], g->uuid[2], g->uuid[3]);
    return buf;
}

void vt_jv_gpu_hex(const struct vt_jv_gpu_id *g, char out[2 * VT_UUID_SIZE + 1])
{
    static const char hex[] = "0123456789abcdef";
    for (size_t k = 0; k < VT_UUID_SIZE; k++) {
        out[2 * k] = hex[g->uuid[k] >> 4];
        out[2 * k + 1] = hex[g->uuid[k] & 15];
    }
    out[2 * VT_UUID_SIZE] = 0;
}

static int hex_digit(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool vt_jv_gpu_parse(const char *hex, struct vt_jv_gpu_id *g)
{
    if (!hex || strlen(hex) != 2 * VT_UUID_SIZE)
        return false;
    for (size_t k = 0; k < VT_UUID_SIZE; k++) {
        int hi = hex_digit(hex[2 * k]), lo = hex_digit(hex[2 * k + 1]);
        if (hi < 0 || lo < 0)
            return false;
        g->uuid[k] = (uint8_t)(hi << 4 | lo);
    }
    g->has_uuid = true;
    return true;
}
