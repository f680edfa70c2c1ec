/*
 * The job's divergence in `vramtrace top` (report/job/divergence.h): the
 * processes of the view as a job view of their own, each with its call
 * sites named as the report names them, and the rule applied to them; the
 * rows of the ranks that diverge are marked. A process's sites are made
 * again only when it read records since (an exited process: once), each
 * with a symbolizer of its own, kept from frame to frame. Naming costs
 * (a new process's binaries are opened), so the frames show the marks of
 * the view as the previous frame read it: the update runs after a frame is
 * out (top_batch.c, top_screen.c), before the first one, and only for a
 * view of three ranks or more.
 */
#ifndef VRAMTRACE_CLI_TOP_DIVERGENCE_H
#define VRAMTRACE_CLI_TOP_DIVERGENCE_H

#include <stdbool.h>
#include <stddef.h>

#include "divergence.h"
#include "follow_view.h"
#include "symbolize.h"

struct top_div_process;

struct top_divergence {
    const struct vt_symbolize_options *options;
    struct top_div_process *cache;  /* one per process seen */
    size_t ncache, cache_cap;
    struct vt_job_view view;        /* the view's processes, borrowing the cache's sites */
    struct vt_divergences found;    /* process: an index in the followed view's processes */
    bool updated;                   /* at least once */
};

/* The divergence of the view's processes now; false if memory ran out
 * (nothing found then). */
bool top_divergence_update(struct top_divergence *d, const struct vt_follow_view *v);
/* Whether process i of the view diverges; the k-th thing said of it
 * ("rank 2 (pid N) diverges: ..."), NULL past the last. */
bool top_divergence_marked(const struct top_divergence *d, size_t i);
const char *top_divergence_say(const struct top_divergence *d, size_t i, size_t k, char *buf,
                               size_t n);
void top_divergence_free(struct top_divergence *d);

#endif
