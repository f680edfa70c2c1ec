/*
 * The caching allocator's samples (allocator_samples.h): the latest, the
 * largest, and the growth rule at the step's closings with the device
 * ledger's sites beside the allocator's figure.
 */
#include <stdlib.h>
#include <string.h>

#include "allocator_samples.h"

static void steps_close(struct vt_alloc_steps *st, const struct vt_ledger_sites *sites,
                        const struct vt_alloc_sample *s)
{
    static const struct vt_ledger_sites none;
    /* The trace's sites, valued by the allocator's figure: the rule decides
     * on the figure, the sites say where the segments grew meanwhile. */
    struct vt_ledger_sites view = sites ? *sites : none;
    if (!st->allocated.closings)
        st->first_ns = s->time_ns;
    st->last_ns = s->time_ns;
    st->last_device_bytes = sites ? sites->total_bytes : 0;
    view.total_bytes = s->allocated;
    vt_growth_close(&st->allocated, &view, &st->copied, s->time_ns);
    if (!st->allocated.rises)
        st->run_start_reserved = s->reserved;
    st->last_reserved = s->reserved;
    view.total_bytes = s->reserved;
    vt_growth_close(&st->reserved, &view, &st->copied, s->time_ns);
}

bool vt_alloc_samples_take(struct vt_alloc_samples **samples, const struct vt_alloc_sample *s,
                           const char *phase, const struct vt_ledger_sites *sites)
{
    struct vt_alloc_samples *ss = *samples;
    if (!ss) {
        if (!(ss = *samples = calloc(1, sizeof *ss)))
            return false;
        ss->device = s->device;
    }
    ss->count++;
    ss->last = *s;
    if (ss->count == 1 || s->reserved > ss->peak.reserved)
        ss->peak = *s;
    if (s->device != ss->device || !phase)
        return true;
    if (!strcmp(phase, "optimizer"))
        steps_close(&ss->optimizer, sites, s);
    else if (!strcmp(phase, "forward"))
        steps_close(&ss->forward, sites, s);
    return true;
}

static void steps_free(struct vt_alloc_steps *st)
{
    vt_growth_free(&st->allocated);
    vt_growth_free(&st->reserved);
}

void vt_alloc_samples_free(struct vt_alloc_samples *s)
{
    if (!s)
        return;
    steps_free(&s->optimizer);
    steps_free(&s->forward);
    free(s);
}

const struct vt_alloc_steps *vt_alloc_samples_steps(const struct vt_alloc_samples *s,
                                                    const char **name)
{
    if (s && s->optimizer.allocated.closings) {
        *name = "optimizer";
        return &s->optimizer;
    }
    if (s && s->forward.allocated.closings) {
        *name = "forward";
        return &s->forward;
    }
    *name = NULL;
    return NULL;
}

uint64_t vt_alloc_steps_duration(const struct vt_alloc_steps *st)
{
    uint64_t n = st->allocated.closings;
    return n > 1 && st->last_ns > st->first_ns ? (st->last_ns - st->first_ns) / (n - 1) : 0;
}
