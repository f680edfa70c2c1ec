/* The traces read once with the observers asked for; see run_traces.h. */
#include "run_traces.h"

#include <string.h>

/* The observers hook the replay's on_live: the live sets at an instant
 * and the timelines' notes chain to whatever was there, so they go after
 * the job timelines. */
static void prepare(void *ctx, struct vt_input *in)
{
    struct vt_run_result *run = ctx;
    if (run->has_timelines)
        vt_job_timelines_prepare(&run->timelines, in);
    if (run->has_moment_set)
        vt_moment_set_prepare(&run->moment_set, in);
    if (run->has_timeline_notes)
        vt_timeline_notes_prepare(&run->timeline_notes, in);
    if (run->prepare)
        run->prepare(run->prepare_ctx, in);
}

int vt_run_traces(char *const *paths, size_t npaths, const struct vt_run_observers *obs,
                  struct vt_run_result *run, FILE *err)
{
    memset(run, 0, sizeof *run);
    bool fed = true;
    if (obs && obs->job_timelines) {
        run->has_timelines = true;
        fed = vt_job_timelines_init(&run->timelines, npaths, obs->job_resolution_ns);
    }
    if (fed && obs && obs->moment_set) {
        run->has_moment_set = true;
        fed = vt_moment_set_init(&run->moment_set, npaths, obs->moment_ns);
    }
    if (fed && obs && obs->timeline_notes) {
        run->has_timeline_notes = true;
        fed = vt_timeline_notes_init(&run->timeline_notes, npaths);
    }
    if (!fed) {
        fprintf(err, "vramtrace: out of memory\n");
        run->status = 2;
        run->unread = true;
        return 2;
    }
    if (obs) {
        run->prepare = obs->prepare;
        run->prepare_ctx = obs->prepare_ctx;
    }
    bool observed =
        run->has_timelines || run->has_moment_set || run->has_timeline_notes || run->prepare;
    run->status = vt_analysis_run_with(&run->a, paths, npaths, err, observed ? prepare : NULL, run);
    run->partial = run->status != 0 && run->a.ninputs > run->a.not_read;
    return run->status;
}

void vt_run_result_free(struct vt_run_result *run)
{
    vt_analysis_free(&run->a);
    vt_job_timelines_free(&run->timelines);
    vt_moment_set_free(&run->moment_set);
    vt_timeline_notes_free(&run->timeline_notes);
}
