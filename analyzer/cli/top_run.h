/*
 * The two ways `vramtrace top` shows its view (cmd_top.c chooses): frames
 * of plain text on stdout (top_batch.c: -b, or stdout not a terminal) and
 * the full-screen view (top_screen.c, ncurses). Both refresh the view,
 * build the frame (top_frame.h) and wait the delay, for the number of
 * frames asked (0: until quit or killed).
 */
#ifndef VRAMTRACE_CLI_TOP_RUN_H
#define VRAMTRACE_CLI_TOP_RUN_H

#include <stdint.h>

#include "follow_view.h"
#include "top_frame.h"

struct top_run_options {
    struct top_frame_options frame;
    uint64_t frames;       /* 0: no limit */
    long open_pid;         /* the process to open at start, -1: none */
};

/* Each returns the exit status. */
int top_batch_run(struct vt_follow_view *v, struct top_run_options *o);
int top_screen_run(struct vt_follow_view *v, struct top_run_options *o);

/* Shared by both: the process of pid in the view, -1 if none. */
long top_process_of_pid(const struct vt_follow_view *v, long pid);
/* Sleeps ns, or less if interrupted (a signal ends the wait). */
void top_sleep_ns(uint64_t ns);
uint64_t top_now_ns(void);

#endif
