/* The report's headline verdict of each failure; see export_verdicts.h. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "export_verdicts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

static bool add(struct vt_export_verdicts *vs, size_t *cap, const char *path,
                const struct vt_ledger *l, const struct vt_oom *o, const char *verdict)
{
    if (vs->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct vt_export_verdict *nv = realloc(vs->v, ncap * sizeof *nv);
        if (!nv)
            return false;
        vs->v = nv;
        *cap = ncap;
    }
    char *copy = strdup(path);
    if (!copy)
        return false;
    struct vt_export_verdict *v = &vs->v[vs->n++];
    v->path = copy;
    v->device = l->device;
    v->time_ns = o->time_ns;
    v->requested_bytes = o->requested_bytes;
    snprintf(v->verdict, sizeof v->verdict, "%s", verdict);
    return true;
}

bool vt_export_verdicts_init(struct vt_export_verdicts *vs, const struct vt_run_result *run,
                             const struct vt_symbolize_options *sym)
{
    memset(vs, 0, sizeof *vs);
    if (run->status != 0)
        return true; /* a trace not read whole: the exporter says why */
    const struct vt_analysis *a = &run->a;
    struct vt_report_options ropt = {.layout.top = 1, .sym = *sym};
    struct vt_report rep;
    vt_report_init(&rep, a, &ropt);
    size_t cap = 0;
    bool ok = true;
    for (size_t i = 0; i < a->ninputs && ok; i++) {
        const struct vt_replay *rp = &a->inputs[i].replay;
        for (size_t li = 0; li < rp->nledgers && ok; li++) {
            const struct vt_ledger *l = &rp->ledgers[li];
            for (size_t m = 0, end; m < l->nooms && ok; m = end) {
                end = vt_oom_request_end(l, m);
                struct vt_verdict_told told;
                vt_report_verdict(&rep, i, l, m, end, &told);
                /* Each try of the request carries the request's verdict. */
                for (size_t k = m; k < end && ok; k++)
                    ok = add(vs, &cap, a->inputs[i].path, l, &l->ooms[k], told.verdict);
            }
        }
    }
    vt_report_free(&rep);
    if (!ok)
        vt_export_verdicts_free(vs);
    return ok;
}

const char *vt_export_verdict(const struct vt_export_verdicts *vs, const char *path,
                              int64_t device, uint64_t time_ns, uint64_t requested_bytes)
{
    for (size_t k = 0; vs && k < vs->n; k++) {
            const struct vt_export_verdict *v = &vs->v[k];
        if (v->device == device && v->time_ns == time_ns &&
            v->requested_bytes == requested_bytes && !strcmp(v->path, path))
            return v->verdict;
    }
    return NULL;
}

void vt_export_verdicts_free(struct vt_export_verdicts *vs)
{
    for (size_t k = 0; k < vs->n; k++)
        free(vs->v[k].path);
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}
