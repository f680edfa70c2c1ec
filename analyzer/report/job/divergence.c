/*
 * The divergence rule and its words (divergence.h). Every rank's sites
 * are listed together and sorted by name; each name's group is one site
 * across the ranks, a rank without it holding nothing there, and its
 * median rank's figures are the medians over every rank of the job.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "divergence.h"
#include "format.h"
#include "grow_array.h"
#include "terminal_text.h"

struct entry {
    const char *name;
    size_t process, site, position; /* position: in the overview's order */
    uint64_t peak;                  /* the process's device peak */
};

static int by_name(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->position > y->position) - (x->position < y->position);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

static int by_rank_then_most(const void *a, const void *b)
{
    const struct vt_divergence *x = a, *y = b;
    /* process holds the position while sorting (divergences_of) */
    if (x->process != y->process)
        return x->process < y->process ? -1 : 1;
    return (x->bytes_above_median < y->bytes_above_median) -
           (x->bytes_above_median > y->bytes_above_median);
}

static bool is_rank(const struct vt_jv_process *p)
{
    return p->rank >= 0 && p->ndevices;
}

/* The median over `ranks` values of which the m in v are the nonzero
 * ones (the others: ranks without the site); scratch holds ranks. */
static uint64_t median_of(uint64_t *v, size_t m, size_t ranks, uint64_t *scratch)
{
    qsort(v, m, sizeof *v, cmp_u64);
    memset(scratch, 0, (ranks - m) * sizeof *scratch);
    memcpy(scratch + (ranks - m), v, m * sizeof *v);
    return vt_jv_median(scratch, ranks);
}

/* One site's group: the ranks that depart from its median rank. */
struct judged {
    size_t ranks;
    uint64_t floor, median_peak;
};

static bool judge(const struct vt_job_view *v, const struct entry *e, size_t m,
                  const struct judged *j, uint64_t *work, struct vt_divergences *out, size_t *cap)
{
    size_t ranks = j->ranks;
    uint64_t floor = j->floor;
    uint64_t *vals = work, *scratch = work + ranks;
    for (size_t k = 0; k < m; k++)
        vals[k] = v->processes[e[k].process].sites[e[k].site].peak_bytes;
    uint64_t median = median_of(vals, m, ranks, scratch);
    for (size_t k = 0; k < m; k++)
        vals[k] = v->processes[e[k].process].sites[e[k].site].bytes_per_step;
    uint64_t median_rate = median_of(vals, m, ranks, scratch);
    for (size_t k = 0; k < m; k++) {
        const struct vt_jv_site *s = &v->processes[e[k].process].sites[e[k].site];
        uint64_t above = s->peak_bytes > median ? s->peak_bytes - median : 0;
        uint64_t faster = s->bytes_per_step > median_rate ? s->bytes_per_step - median_rate : 0;
        /* a rank above the median at a site whose own peak is not above
         * the median rank's holds the site's bytes at another moment of
         * its step, not more memory */
        bool by_bytes = above > median / 100 * VT_DIVERGENCE_PERCENT && above >= floor &&
                        e[k].peak >= j->median_peak + floor;
        bool by_growth = faster > median_rate / 100 * VT_DIVERGENCE_PERCENT && s->steps &&
                         faster >= (floor + s->steps - 1) / s->steps;
        if (!by_bytes && !by_growth)
            continue;
        if (!vt_grow_array((void **)&out->d, cap, out->n + 1, sizeof *out->d))
            return false;
        out->d[out->n++] = (struct vt_divergence){e[k].position, s->name, above,
                                                  by_growth ? faster : 0,
                                                  by_growth ? s->from_step : 0};
    }
    return true;
}

bool vt_divergences_of(const struct vt_job_view *v, const struct vt_job_figures *f,
                       struct vt_divergences *out)
{
    memset(out, 0, sizeof *out);
    size_t ranks = 0, nentries = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        if (is_rank(&v->processes[i])) {
            ranks++;
            nentries += v->processes[i].nsites;
        }
    if (ranks < 3)
        return true;
    uint64_t *peaks = malloc(ranks * sizeof *peaks);
    uint64_t *work = malloc(2 * ranks * sizeof *work);
    struct entry *e = malloc((nentries + 1) * sizeof *e);
    bool ok = peaks && work && e;
    size_t r = 0, n = 0, cap = 0;
    for (size_t o = 0; ok && o < v->nprocesses; o++) {
        const struct vt_jv_process *p = &v->processes[f->order[o]];
        if (!is_rank(p))
            continue;
        vt_jv_process_peak(p, &peaks[r]);
        for (size_t s = 0; s < p->nsites; s++)
            e[n++] = (struct entry){p->sites[s].name, f->order[o], s, o, peaks[r]};
        r++;
    }
    struct judged j = {ranks, 0, 0};
    if (ok) {
        qsort(peaks, ranks, sizeof *peaks, cmp_u64);
        j.median_peak = vt_jv_median(peaks, ranks);
        j.floor = out->floor_bytes = j.median_peak / 100 * VT_DIVERGENCE_FLOOR_PERCENT;
        qsort(e, n, sizeof *e, by_name);
        /* a site once a rank: a summary may name one twice (the first counts) */
        size_t kept = 0;
        for (size_t k = 0; k < n; k++)
            if (!kept || e[k].process != e[kept - 1].process || strcmp(e[k].name, e[kept - 1].name))
                e[kept++] = e[k];
        n = kept;
    }
    for (size_t k = 0, end; ok && k < n; k = end) {
        for (end = k + 1; end < n && !strcmp(e[end].name, e[k].name); end++)
            ;
        ok = judge(v, e + k, end - k, &j, work, out, &cap);
    }
    if (ok && out->n) {
        qsort(out->d, out->n, sizeof *out->d, by_rank_then_most);
        for (size_t k = 0; k < out->n; k++)
            out->d[k].process = f->order[out->d[k].process];
    }
    free(peaks);
    free(work);
    free(e);
    if (!ok)
        vt_divergences_free(out);
    return ok;
}

void vt_divergences_free(struct vt_divergences *d)
{
    free(d->d);
    memset(d, 0, sizeof *d);
}

const char *vt_divergence_say(const struct vt_job_view *v, const struct vt_divergence *d,
                              char *buf, size_t n)
{
    const struct vt_jv_process *p = &v->processes[d->process];
    char b1[32], b2[32];
    if (d->bytes_per_step)
        snprintf(buf, n, "rank %ld (pid %" PRIu64 ") diverges: +%s a step from step %" PRIu64
                         " at %s, %s above the median rank at its peak",
                 p->rank, p->pid, vt_format_bytes(d->bytes_per_step, b1, sizeof b1), d->from_step,
                 d->site, vt_format_bytes(d->bytes_above_median, b2, sizeof b2));
    else
        snprintf(buf, n, "rank %ld (pid %" PRIu64 ") diverges: +%s above the median rank at its "
                         "peak, at %s",
                 p->rank, p->pid, vt_format_bytes(d->bytes_above_median, b1, sizeof b1), d->site);
    return buf;
}

void vt_divergence_text(const struct vt_job_view *v, const struct vt_job_figures *f, FILE *out)
{
    struct vt_divergences d;
    if (!vt_divergences_of(v, f, &d) || !d.n)
        return;
    char b[32];
    fprintf(out, "  diverging from the median rank at a call site (more than %d%% above it, and at "
                 "least %d%% of the median device peak: %s):\n",
            VT_DIVERGENCE_PERCENT, VT_DIVERGENCE_FLOOR_PERCENT,
            vt_format_bytes(d.floor_bytes, b, sizeof b));
    char said[1024];
    for (size_t k = 0; k < d.n && k < VT_DIVERGENCE_SHOWN; k++) {
        fputs("    ", out);
        vt_terminal_put(out, vt_divergence_say(v, &d.d[k], said, sizeof said));
        fputc('\n', out);
    }
    if (d.n > VT_DIVERGENCE_SHOWN)
        fprintf(out, "    ... and %zu more\n", d.n - VT_DIVERGENCE_SHOWN);
    vt_divergences_free(&d);
}

void vt_divergence_json(const struct vt_job_view *v, const struct vt_job_figures *f,
                        struct vt_json *j)
{
    struct vt_divergences d;
    bool ok = vt_divergences_of(v, f, &d);
    vt_json_key(j, "divergence");
    vt_json_begin_array(j);
    for (size_t k = 0; ok && k < d.n; k++) {
        const struct vt_jv_process *p = &v->processes[d.d[k].process];
        vt_json_begin_object(j);
        vt_json_kv_int(j, "rank", p->rank);
        vt_json_kv_uint(j, "pid", p->pid);
        vt_json_kv_string(j, "site", d.d[k].site);
        vt_json_kv_uint(j, "bytes_above_median", d.d[k].bytes_above_median);
        vt_json_kv_uint_or_null(j, "from_step", d.d[k].bytes_per_step != 0, d.d[k].from_step);
        vt_json_kv_uint(j, "bytes_per_step", d.d[k].bytes_per_step);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_divergences_free(&d);
}
