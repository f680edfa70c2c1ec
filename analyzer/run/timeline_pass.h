/*
 * The HTML page's timelines (timeline.h) need the sites to follow before
 * the replay that draws them, and those are the top sites at each
 * ledger's peak, known only once a first read is over: so the chosen
 * traces are read a second time with a timeline attached to each. Only
 * theirs: a process's series are its own records', the same whichever
 * other traces are replayed with it.
 */
#ifndef VRAMTRACE_RUN_TIMELINE_PASS_H
#define VRAMTRACE_RUN_TIMELINE_PASS_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis.h"
#include "timeline.h"

/* Reads again every input i of a with chosen[i] set, feeding tl[i] (set up
 * by the caller: vt_timeline_init and its series), then finishes every
 * tl[i] of a, chosen or not. What the second read says about the files
 * goes nowhere (the first read said it all). False if a file changed in
 * between or memory ran out: the timelines are incomplete then. */
bool vt_timelines_replay(const struct vt_analysis *a, const bool *chosen, struct vt_timeline *tl);

#endif
