/* Each process's device bytes over wall-clock time; see job_timelines.h. */
#include "job_timelines.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "input_tables.h"

bool vt_jv_timeline_note(struct vt_jv_timeline *tl, uint64_t resolution_ns, uint64_t wall_ns,
                         uint64_t bytes)
{
    uint64_t col = wall_ns / resolution_ns;
    if (!tl->n) {
        tl->first = col;
    } else if (col < tl->first) {
        col = tl->first; /* clocks of one process do not go back; a guard */
    }
    if (col - tl->first >= VT_JOB_COLUMNS_MAX)
        return true; /* a clock gone wrong: the timeline ends there */
    size_t k = (size_t)(col - tl->first);
    if (k >= tl->n) {
        /* Columns in which nothing changed hold the total they started with. */
        if (!vt_grow_array((void **)&tl->max_bytes, &tl->cap, k + 1, sizeof *tl->max_bytes))
            return false;
        for (size_t c = tl->n; c <= k; c++)
            tl->max_bytes[c] = tl->now;
        tl->n = k + 1;
    }
    tl->now = bytes;
    if (bytes > tl->max_bytes[k])
        tl->max_bytes[k] = bytes;
    return true;
}

/* Once per memory event of a device ledger: the process's device total
 * follows the live set (each allocation that begins or ends, as its
 * ledger counted it), and an event in the column of the last one only
 * raises that column's maximum. */
static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct vt_job_timelines *t = ctx;
    if (l->category != VT_CAT_DEVICE)
        return;
    /* Which input: the replay is the input's, at a fixed offset. */
    struct vt_input *in = (struct vt_input *)((char *)rp - offsetof(struct vt_input, replay));
    struct vt_jv_timeline *tl = &t->per_input[in->index];
    uint64_t total = begins ? tl->now + e->size : tl->now - e->size;
    if (!tl->has_offset) {
        const struct vt_process_info *p = vt_input_process(in);
        tl->wall_offset = p && p->start_realtime_ns
                              ? (int64_t)(p->start_realtime_ns - p->start_mono_ns)
                              : 0;
        tl->has_offset = true;
    }
    uint64_t wall = rp->last_time_ns + (uint64_t)tl->wall_offset;
    if (tl->n && wall < tl->column_end) {
        tl->now = total;
        if (total > tl->max_bytes[tl->n - 1])
            tl->max_bytes[tl->n - 1] = total;
        return;
    }
    if (!vt_jv_timeline_note(tl, t->resolution_ns, wall, total))
        rp->out_of_memory = true;
    if (tl->n)
        tl->column_end = (tl->first + tl->n) * t->resolution_ns;
}

bool vt_job_timelines_init(struct vt_job_timelines *t, size_t ninputs, uint64_t resolution_ns)
{
    t->resolution_ns = resolution_ns ? resolution_ns : VT_SUMMARY_RESOLUTION_NS;
    t->n = ninputs;
    t->per_input = calloc(ninputs + 1, sizeof *t->per_input);
    return t->per_input != NULL;
}

void vt_job_timelines_prepare(void *ctx, struct vt_input *in)
{
    struct vt_job_timelines *t = ctx;
    if (in->index < t->n) {
        in->replay.on_live = on_live;
        in->replay.on_live_ctx = t;
    }
}

void vt_job_timelines_free(struct vt_job_timelines *t)
{
    for (size_t i = 0; t->per_input && i < t->n; i++)
        free(t->per_input[i].max_bytes);
    free(t->per_input);
    memset(t, 0, sizeof *t);
}
