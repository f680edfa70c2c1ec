/* Growth per step, live; see live_growth.h. */
#include "live_growth.h"

void vt_live_phase_closed(struct vt_live_phase *ph, uint64_t device_bytes)
{
    if (ph->closings == 0 || device_bytes < ph->last_bytes) {
        ph->run_first_bytes = device_bytes; /* fell (or the first): a new run */
        ph->run_closings = 0;
    }
    ph->closings++;
    ph->run_closings++;
    ph->last_bytes = device_bytes;
}

struct vt_live_growth vt_live_growth_per_step(const struct vt_live_phase *phases, size_t n)
{
    struct vt_live_growth g = {0};
    const struct vt_live_phase *step = NULL;
    for (size_t i = 0; i < n; i++) /* the most repeated; the first seen of a tie */
        if (phases[i].closings >= VT_LIVE_GROWTH_MIN_STEPS &&
            (!step || phases[i].closings > step->closings))
            step = &phases[i];
    if (!step)
        return g;
    g.has_step = true;
    g.step_name = step->name;
    g.steps = step->closings;
    if (step->run_closings >= VT_LIVE_GROWTH_MIN_STEPS && step->last_bytes > step->run_first_bytes)
        g.per_step = (int64_t)((step->last_bytes - step->run_first_bytes) / (step->run_closings - 1));
    return g;
}
