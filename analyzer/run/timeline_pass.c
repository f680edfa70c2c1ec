/* The HTML page's timelines, read a second time; see timeline_pass.h. */
#include "timeline_pass.h"

#include <stdlib.h>

struct timelines {
    struct vt_timeline *tl; /* per input of the first read */
    const size_t *input;    /* the second read's input -> the first's */
};

static void attach(void *ctx, struct vt_input *in)
{
    struct timelines *t = ctx;
    vt_timeline_attach(&t->tl[t->input[in->index]], &in->replay);
}

bool vt_timelines_replay(const struct vt_analysis *a, const bool *chosen, struct vt_timeline *tl)
{
    char **paths = calloc(a->ninputs + 1, sizeof *paths);
    size_t *input = calloc(a->ninputs + 1, sizeof *input);
    bool ok = paths && input;
    size_t npaths = 0;
    for (size_t i = 0; ok && i < a->ninputs; i++)
        if (chosen[i]) {
            input[npaths] = i;
            paths[npaths++] = a->inputs[i].path;
        }
    if (ok && npaths) {
        struct timelines ctx = {tl, input};
        struct vt_analysis again = {0};
        FILE *quiet = fopen("/dev/null", "w");
        if (quiet) {
            vt_analysis_run_with(&again, paths, npaths, quiet, attach, &ctx);
            fclose(quiet);
            if (again.ninputs != npaths)
                ok = false; /* a file changed in between */
            vt_analysis_free(&again);
        } else {
            ok = false;
        }
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        vt_timeline_finish(&tl[i]);
        if (tl[i].out_of_memory)
            ok = false;
    }
    free(paths);
    free(input);
    return ok;
}
