/* Contexts and allocations of a rank on a GPU not its own (job_foreign.h). */
#include "job_foreign.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "json_writer.h"
#include "terminal_text.h"

#define FOREIGN_SHOWN 16

static const char *const next_step =
    "torch.cuda.set_device(local_rank) before anything touches CUDA, "
    "torch.load(..., map_location=...), or CUDA_VISIBLE_DEVICES per rank";

/* CUDA_VISIBLE_DEVICES's k-th entry as a number, -1 if it is not one. */
static long visible_entry(const char *list, long k)
{
    for (const char *q = list; q && *q; k--) {
        char *end;
        long n = strtol(q, &end, 10);
        if (end == q || (*end && *end != ','))
            return -1;
        if (k == 0)
            return n;
        q = *end ? end + 1 : end;
    }
    return -1;
}

static size_t visible_count(const char *list)
{
    size_t n = list && *list ? 1 : 0;
    for (const char *q = list; q && *q; q++)
        n += *q == ',';
    return n;
}

/* The GPU as the machine numbers it, where CUDA_VISIBLE_DEVICES says. */
static long gpu_number(const struct vt_jv_process *p, int64_t ordinal)
{
    long n = p->visible_devices ? visible_entry(p->visible_devices, (long)ordinal) : -1;
    return n >= 0 ? n : (long)ordinal;
}

static bool uses_ordinal(const struct vt_jv_process *p, int64_t ordinal)
{
    for (size_t k = 0; k < p->ndevices; k++)
        if (p->devices[k].device == ordinal)
            return true;
    for (size_t k = 0; k < p->ncontexts; k++)
        if (p->contexts[k].device == ordinal)
            return true;
    return false;
}

/* The allocations' part of a device's peak: the peak less the process's
 * contexts then (peak_contexts.h), which are told apart. */
static uint64_t alloc_bytes(const struct vt_jv_device *d)
{
    return d->peak_bytes > d->contexts_bytes ? d->peak_bytes - d->contexts_bytes : 0;
}

/* The process's own ordinal (the header's rule), -1: none. */
static int64_t own_ordinal(const struct vt_jv_process *p)
{
    if (p->visible_devices && visible_count(p->visible_devices) == 1)
        return 0;
    if (p->local_rank >= 0 && uses_ordinal(p, p->local_rank))
        return p->local_rank;
    int64_t best = -1;
    uint64_t most = 0;
    for (size_t k = 0; k < p->ndevices; k++)
        if (alloc_bytes(&p->devices[k]) > most) {
            most = alloc_bytes(&p->devices[k]);
            best = p->devices[k].device;
        }
    return best;
}

static void who(const struct vt_jv_process *p, FILE *out)
{
    if (p->rank >= 0)
        fprintf(out, "rank %ld (pid %" PRIu64 ")", p->rank, p->pid);
    else
        fprintf(out, "pid %" PRIu64, p->pid);
}

static void site_text(const char *site, FILE *out)
{
    if (!site)
        return;
    fputs(", at ", out);
    vt_terminal_put(out, site);
}

static void context_line(const struct vt_jv_process *p, const struct vt_jv_context *c,
                         int64_t own, FILE *out)
{
    char b[32], t1[32], t2[32];
    fputs("  ", out);
    who(p, out);
    fprintf(out, " made a context on GPU %ld, not its own GPU %ld: ", gpu_number(p, c->device),
            gpu_number(p, own));
    if (c->bytes)
        fputs(vt_format_bytes(c->bytes, b, sizeof b), out);
    else
        fputs("cost not measured,", out);
    fprintf(out, " from %s to %s", vt_format_seconds(c->begin_ns, t1, sizeof t1),
            c->end_ns < 0 ? "exit" : vt_format_seconds(c->end_ns, t2, sizeof t2));
    site_text(c->site, out);
    fputc('\n', out);
}

static void alloc_line(const struct vt_jv_process *p, const struct vt_jv_device *d, int64_t own,
                       FILE *out)
{
    char b[32];
    fputs("  ", out);
    who(p, out);
    fprintf(out, " allocated on GPU %ld, not its own GPU %ld: %s at its peak there",
            gpu_number(p, d->device), gpu_number(p, own),
            vt_format_bytes(alloc_bytes(d), b, sizeof b));
    site_text(d->site, out);
    fputc('\n', out);
}

void vt_job_foreign_text(const struct vt_job_view *v, const size_t *order, FILE *out)
{
    size_t found = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_process *p = &v->processes[order[i]];
        int64_t own = own_ordinal(p);
        if (own < 0)
            continue;
        for (size_t k = 0; k < p->ncontexts; k++)
            if (p->contexts[k].device != own && found++ < FOREIGN_SHOWN)
                context_line(p, &p->contexts[k], own, out);
        for (size_t k = 0; k < p->ndevices; k++)
            if (p->devices[k].device != own && alloc_bytes(&p->devices[k]) &&
                found++ < FOREIGN_SHOWN)
                alloc_line(p, &p->devices[k], own, out);
    }
    if (found > FOREIGN_SHOWN)
        fprintf(out, "  ... and %zu more on GPUs not their own (--json lists them)\n",
                found - FOREIGN_SHOWN);
    if (found)
        fprintf(out, "    next step: %s\n", next_step);
}

static void finding_json(struct vt_json *j, const struct vt_jv_process *p, const char *what,
                         int64_t device, int64_t own, const struct vt_jv_gpu_id *gpu)
{
    char hex[2 * VT_UUID_SIZE + 1];
    vt_json_begin_object(j);
    vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
    vt_json_kv_uint(j, "pid", p->pid);
    vt_json_kv_string(j, "what", what);
    vt_json_kv_int(j, "device", device);
    vt_json_kv_int(j, "own_device", own);
    vt_json_kv_int(j, "gpu", gpu_number(p, device));
    vt_json_kv_int(j, "own_gpu", gpu_number(p, own));
    vt_jv_gpu_hex(gpu, hex);
    vt_json_kv_string(j, "gpu_uuid", gpu->has_uuid ? hex : NULL);
}

void vt_job_foreign_json(const struct vt_job_view *v, const size_t *order, struct vt_json *j)
{
    vt_json_key(j, "foreign");
    vt_json_begin_array(j);
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_process *p = &v->processes[order[i]];
        int64_t own = own_ordinal(p);
        if (own < 0)
            continue;
        for (size_t k = 0; k < p->ncontexts; k++) {
            const struct vt_jv_context *c = &p->contexts[k];
            if (c->device == own)
                continue;
            finding_json(j, p, "context", c->device, own, &c->gpu);
            vt_json_kv_uint_or_null(j, "bytes", c->bytes != 0, c->bytes);
            vt_json_kv_string(j, "cost", c->cost);
            vt_json_kv_int(j, "begin_ns", c->begin_ns);
            vt_json_kv_int_or_null(j, "end_ns", c->end_ns >= 0, c->end_ns);
            vt_json_kv_string(j, "site", c->site);
            vt_json_kv_string(j, "next_step", next_step);
            vt_json_end_object(j);
        }
        for (size_t k = 0; k < p->ndevices; k++) {
            const struct vt_jv_device *d = &p->devices[k];
            if (d->device == own || !alloc_bytes(d))
                continue;
            finding_json(j, p, "allocation", d->device, own, &d->gpu);
            vt_json_kv_uint(j, "bytes", alloc_bytes(d));
            vt_json_kv_string(j, "site", d->site);
            vt_json_kv_string(j, "next_step", next_step);
            vt_json_end_object(j);
        }
    }
    vt_json_end_array(j);
}

static bool same_gpu(const struct vt_jv_gpu_id *a, const struct vt_jv_gpu_id *b)
{
    return a->has_uuid && b->has_uuid && !memcmp(a->uuid, b->uuid, VT_UUID_SIZE);
}

void vt_job_foreign_failure_lines(const struct vt_job_view *v, const size_t *order,
                                  const struct vt_jv_failure *x, vt_job_line_fn line, void *ctx)
{
    const struct vt_jv_process *failed = &v->processes[x->process];
    int64_t since = x->since_start_ns;
    char said[160], w[64], b[32];
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_jv_process *p = &v->processes[order[i]];
        int64_t own = own_ordinal(p);
        if (p == failed || own < 0)
            continue;
        if (p->rank >= 0)
            snprintf(w, sizeof w, "rank %ld (pid %" PRIu64 ")", p->rank, p->pid);
        else
            snprintf(w, sizeof w, "pid %" PRIu64, p->pid);
        for (size_t k = 0; k < p->ncontexts; k++) {
            const struct vt_jv_context *c = &p->contexts[k];
            /* live at the failure: times of two processes compare by wall
             * clock, which the view keeps for failures only - the
             * context's life since its start is taken as the failing
             * process's (ranks start together) */
            if (c->device == own || !same_gpu(&c->gpu, &x->gpu) || c->begin_ns > since ||
                (c->end_ns >= 0 && c->end_ns < since))
                continue;
            snprintf(said, sizeof said, "on that GPU then: %s's context, %s", w,
                     c->bytes ? vt_format_bytes(c->bytes, b, sizeof b) : "cost not measured");
            line(ctx, said);
        }
        for (size_t k = 0; k < p->ndevices; k++) {
            const struct vt_jv_device *d = &p->devices[k];
            if (d->device == own || !alloc_bytes(d) || !same_gpu(&d->gpu, &x->gpu))
                continue;
            snprintf(said, sizeof said, "on that GPU: %s's allocations, %s at their peak", w,
                     vt_format_bytes(alloc_bytes(d), b, sizeof b));
            line(ctx, said);
        }
    }
}

static void put_line(void *ctx, const char *line)
{
    fprintf(ctx, "    %s\n", line);
}

void vt_job_foreign_failure_text(const struct vt_job_view *v, const size_t *order,
                                 const struct vt_jv_failure *x, FILE *out)
{
    vt_job_foreign_failure_lines(v, order, x, put_line, out);
}
