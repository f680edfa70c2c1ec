#include "moment_set.h"

#include <stdlib.h>

bool vt_moment_set_init(struct vt_moment_set *at, size_t ninputs, uint64_t time_ns)
{
    at->time_ns = time_ns;
    at->ninputs = ninputs;
    at->inputs = calloc(ninputs + 1, sizeof *at->inputs);
    return at->inputs != NULL;
}

void vt_moment_set_free(struct vt_moment_set *at)
{
    for (size_t i = 0; at->inputs && i < at->ninputs; i++)
        for (size_t k = 0; k < VT_LEDGERS_MAX; k++)
            vt_peak_state_free(&at->inputs[i].states[k]);
    free(at->inputs);
    at->inputs = NULL;
}

/* The report's origin (vt_format_reltime): the process's start when the
 * trace says it, else its first event. */
uint64_t vt_moment_set_origin(const struct vt_replay *rp)
{
    const struct vt_process_info *p = vt_reader_process(rp->reader);
    return p && p->start_mono_ns && p->start_mono_ns <= rp->first_time_ns ? p->start_mono_ns
                                                                          : rp->first_time_ns;
}

static bool before_instant(const struct vt_moment_set *at, const struct vt_replay *rp)
{
    return rp->last_time_ns - vt_moment_set_origin(rp) <= at->time_ns;
}

bool vt_moment_set_reached(const struct vt_moment_set *at, const struct vt_replay *rp)
{
    return rp->has_time && !before_instant(at, rp);
}

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct vt_moment_set_input *in = ctx;
    if (in->prev)
        in->prev(in->prev_ctx, rp, l, e, begins);
    if (!before_instant(in->at, rp))
        return;
    size_t k = (size_t)(l - rp->ledgers);
    /* The replay's own ledger (l is its const view): taking its state
     * marks its sites' change log. */
    struct vt_ledger *mine = &rp->ledgers[k];
    if (!vt_peak_state_take(&in->states[k], &mine->sites, rp->last_time_ns))
        rp->out_of_memory = true;
}

void vt_moment_set_prepare(void *ctx, struct vt_input *in)
{
    struct vt_moment_set *at = ctx;
    struct vt_moment_set_input *mine = &at->inputs[in->index];
    mine->at = at;
    mine->prev = in->replay.on_live;
    mine->prev_ctx = in->replay.on_live_ctx;
    in->replay.on_live = on_live;
    in->replay.on_live_ctx = mine;
}

const struct vt_peak_state *vt_moment_set_ledger(const struct vt_moment_set *at, size_t input,
                                                 const struct vt_replay *rp,
                                                 const struct vt_ledger *l)
{
    const struct vt_peak_state *s = &at->inputs[input].states[l - rp->ledgers];
    return s->has_peak ? s : NULL;
}
