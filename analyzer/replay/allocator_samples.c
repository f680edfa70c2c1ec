/*
 * The caching allocator's samples (allocator_samples.h): the latest, the
 * largest, and the growth rule at the step's closings with the device
 * ledger's sites beside the allocator's figure.
 */
#include <stdlib.h>
#include <string.h>

#include "allocator_samples.h"
#include "replay.h"

static void steps_close(struct vt_alloc_steps *st, struct vt_replay *rp,
                        const struct vt_alloc_sample *s)
{
    static const struct vt_ledger_sites none;
    struct vt_ledger *l = vt_replay_ledger(rp, s->device, VT_CAT_DEVICE);
    /* The trace's sites, valued by the allocator's figure: the rule decides
     * on the figure, the sites say where the segments grew meanwhile. */
    struct vt_ledger_sites view = l ? l->sites : none;
    if (!st->allocated.closings)
        st->first_ns = s->time_ns;
    st->last_ns = s->time_ns;
    st->last_device_bytes = l ? l->sites.total_bytes : 0;
    view.total_bytes = s->allocated;
    vt_growth_close(&st->allocated, &view, &st->copied, s->time_ns);
    if (!st->allocated.rises)
        st->run_start_reserved = s->reserved;
    st->last_reserved = s->reserved;
    view.total_bytes = s->reserved;
    vt_growth_close(&st->reserved, &view, &st->copied, s->time_ns);
}

void vt_alloc_samples_record(struct vt_replay *rp, const struct vt_record *rec)
{
    struct vt_alloc_samples *ss = rp->samples;
    if (!ss) {
        if (!(ss = rp->samples = calloc(1, sizeof *ss))) {
            rp->out_of_memory = true;
            return;
        }
        ss->device = rec->u.part.device;
    }
    struct vt_alloc_sample s = {
        .time_ns = rec->time_ns,
        .device = rec->u.part.device,
        .allocated = rec->u.part.addr,
        .reserved = rec->u.part.bytes,
        .active = rec->u.part.elements,
        .retries = rec->u.part.census,
        .phase = rec->u.part.dtype,
    };
    const char *ooms = vt_reader_string(rp->reader, rec->u.part.name);
    s.ooms = ooms ? strtoull(ooms, NULL, 10) : 0;
    ss->count++;
    ss->last = s;
    if (ss->count == 1 || s.reserved > ss->peak.reserved)
        ss->peak = s;
    if (s.device != ss->device)
        return;
    const char *phase = vt_reader_string(rp->reader, s.phase);
    if (!phase)
        return;
    if (!strcmp(phase, "optimizer"))
        steps_close(&ss->optimizer, rp, &s);
    else if (!strcmp(phase, "forward"))
        steps_close(&ss->forward, rp, &s);
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
