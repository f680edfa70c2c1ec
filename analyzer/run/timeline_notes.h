/*
 * The HTML page's timelines (timeline.h) follow the top sites at each
 * ledger's peak, which are known only once the read is over. So the read
 * notes every change of each input's ledgers and every range
 * (input_notes.h: on disk, not in memory), and the timelines of the
 * traces the page details are fed from the notes afterwards: each trace
 * is read once.
 */
#ifndef VRAMTRACE_RUN_TIMELINE_NOTES_H
#define VRAMTRACE_RUN_TIMELINE_NOTES_H

#include <stdbool.h>
#include <stddef.h>

#include "analysis.h"
#include "input_notes.h"
#include "timeline.h"

struct vt_timeline_notes_input;

struct vt_timeline_notes {
    struct vt_input_notes *notes;
    struct vt_timeline_notes_input *inputs;
    size_t n;
};

/* For ninputs inputs; false when memory or the temporary file is not to
 * be had. */
bool vt_timeline_notes_init(struct vt_timeline_notes *tn, size_t ninputs);
void vt_timeline_notes_free(struct vt_timeline_notes *tn);
/* The observer, for vt_analysis_run_with's prepare (ctx: tn): it chains
 * to the on_live hook already set. */
void vt_timeline_notes_prepare(void *ctx, struct vt_input *in);

/* Feeds tl[i] (set up by the caller: vt_timeline_init and its series)
 * from the notes of every input i of a with chosen[i] set, then finishes
 * every tl[i] of a, chosen or not. False if a note was lost or memory ran
 * out: the timelines are incomplete then. */
bool vt_timelines_play(const struct vt_timeline_notes *tn, const struct vt_analysis *a,
                       const bool *chosen, struct vt_timeline *tl);

#endif
