/* The job's divergence in `vramtrace top`; see top_divergence.h. */
#include "top_divergence.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "stack_where.h"

struct top_div_process {
    const struct vt_follow_process *p;
    uint64_t records;          /* read when its sites were made */
    size_t modules;            /* module records its symbolizer was made from */
    struct vt_symbolizer *sym;
    struct vt_jv_process sites; /* only sites and nsites used */
    struct vt_jv_device device; /* its device peak, every device together */
};

struct stack_of {
    const struct vt_follow_process *p;
    struct vt_symbolizer *sym;
    uint64_t stack;
};

static size_t walk(void *src, vt_frame_fn fn, void *ctx)
{
    struct stack_of *s = src;
    return vt_stack_frames(s->p->reader, s->sym, s->stack, 0, fn, ctx);
}

static const char *site_name(void *ctx, uint64_t stack, char *buf, size_t n)
{
    struct top_div_process *c = ctx;
    struct stack_of s = {c->p, c->sym, stack};
    return vt_stack_site_frame(walk, &s, buf, n);
}

static void forget_sites(struct top_div_process *c)
{
    for (size_t k = 0; k < c->sites.nsites; k++)
        free(c->sites.sites[k].name);
    free(c->sites.sites);
    c->sites.sites = NULL;
    c->sites.nsites = 0;
}

static struct top_div_process *cached(struct top_divergence *d, const struct vt_follow_process *p)
{
    for (size_t k = 0; k < d->ncache; k++)
        if (d->cache[k].p == p)
            return &d->cache[k];
    if (!vt_grow_array((void **)&d->cache, &d->cache_cap, d->ncache + 1, sizeof *d->cache))
        return NULL;
    struct top_div_process *c = &d->cache[d->ncache++];
    memset(c, 0, sizeof *c);
    c->p = p;
    c->records = UINT64_MAX;
    return c;
}

/* The process's sites, made again when it read records since. */
static bool refresh(struct top_divergence *d, struct top_div_process *c)
{
    const struct vt_follow_process *p = c->p;
    c->device.peak_bytes = p->peak_bytes;
    if (c->records == p->records)
        return true;
    size_t modules = vt_reader_module_count(p->reader);
    if (!c->sym || c->modules != modules) {
        vt_symbolizer_free(c->sym);
        c->sym = vt_symbolizer_new(p->reader, d->options);
        c->modules = modules;
    }
    forget_sites(c);
    const struct vt_alloc_samples *s = p->replay.samples;
    const struct vt_device_info *dev =
        s && s->device >= 0 ? vt_reader_device(p->reader, (uint64_t)s->device) : NULL;
    if (!vt_jv_sites_of_replay(&p->replay, dev ? dev->total_bytes : 0, site_name, c,
                               &c->sites))
        return false;
    c->records = p->records;
    return true;
}

bool top_divergence_update(struct top_divergence *d, const struct vt_follow_view *v)
{
    vt_divergences_free(&d->found);
    free(d->view.processes);
    memset(&d->view, 0, sizeof d->view);
    d->updated = true;
    size_t ranks = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        ranks += v->processes[i]->rank >= 0 && v->processes[i]->has_peak;
    if (ranks < 3)
        return true; /* the rule needs three: nothing to name */
    d->view.processes = calloc(v->nprocesses + 1, sizeof *d->view.processes);
    if (!d->view.processes)
        return false;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_follow_process *p = v->processes[i];
        struct top_div_process *c = cached(d, p);
        if (!c || !refresh(d, c))
            return false;
        /* borrowed: the view is only read, never freed as a view */
        d->view.processes[i] = (struct vt_jv_process){
            .pid = p->info ? p->info->pid : 0, .rank = p->rank, .local_rank = p->local_rank,
            .world_size = -1, .host = (char *)(p->info && p->info->hostname ? p->info->hostname : ""),
            .devices = &c->device, .ndevices = p->has_peak,
            .sites = c->sites.sites, .nsites = c->sites.nsites};
    }
    d->view.nprocesses = v->nprocesses;
    struct vt_job_figures f;
    if (!vt_job_figures_of(&d->view, &f))
        return false;
    bool ok = vt_divergences_of(&d->view, &f, &d->found);
    vt_job_figures_free(&f);
    return ok;
}

bool top_divergence_marked(const struct top_divergence *d, size_t i)
{
    for (size_t k = 0; d && k < d->found.n; k++)
        if (d->found.d[k].process == i)
            return true;
    return false;
}

const char *top_divergence_say(const struct top_divergence *d, size_t i, size_t k, char *buf,
                               size_t n)
{
    for (size_t m = 0; d && m < d->found.n; m++)
        if (d->found.d[m].process == i && !k--)
            return vt_divergence_say(&d->view, &d->found.d[m], buf, n);
    return NULL;
}

void top_divergence_free(struct top_divergence *d)
{
    vt_divergences_free(&d->found);
    free(d->view.processes);
    for (size_t k = 0; k < d->ncache; k++) {
        forget_sites(&d->cache[k]);
        vt_symbolizer_free(d->cache[k].sym);
    }
    free(d->cache);
    memset(d, 0, sizeof *d);
}
