/*
 * `vramtrace top -b`: frames of plain text on stdout, for logs and CI (and
 * the default when stdout is not a terminal). Each frame is its lines
 * (top_frame.h) and one empty line; it starts with "vramtrace top - ", as
 * top(1)'s batch frames start with "top - ". A file skipped (not a trace,
 * or broken) is named once on stderr.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "top_run.h"

uint64_t top_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void top_sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

long top_process_of_pid(const struct vt_follow_view *v, long pid)
{
    for (size_t i = 0; pid >= 0 && i < v->nprocesses; i++)
        if (v->processes[i]->info->pid == (uint64_t)pid)
            return (long)i;
    return -1;
}

int top_batch_run(struct vt_follow_view *v, struct top_run_options *o)
{
    struct top_lines lines = {0};
    size_t said = 0, *order = NULL, order_cap = 0;
    int status = 0;
    for (uint64_t frame = 0; !o->frames || frame < o->frames; frame++) {
        if (frame)
            top_sleep_ns(o->frame.delay_ns);
        if (!vt_follow_view_refresh(v)) {
            fputs("vramtrace top: out of memory\n", stderr);
            status = 2;
            break;
        }
        for (; said < v->nnotes; said++)
            fprintf(stderr, "vramtrace top: %s\n", v->notes[said]);
        if (v->nprocesses + 1 > order_cap) {
            order_cap = 2 * (v->nprocesses + 1);
            free(order);
            if (!(order = malloc(order_cap * sizeof *order))) {
                status = 2;
                break;
            }
        }
        o->frame.opened = top_process_of_pid(v, o->open_pid);
        uint64_t now_ns = top_now_ns(); /* the frame's time: after reading */
        if (!top_frame_build(v, &o->frame, now_ns, time(NULL), order, &lines)) {
            fputs("vramtrace top: out of memory\n", stderr);
            status = 2;
            break;
        }
        for (size_t i = 0; i < lines.n; i++)
            puts(lines.lines[i].text);
        putchar('\n');
        if (fflush(stdout) != 0 && errno == EPIPE)
            break;
        if (o->frame.divergence) /* the next frame's marks, off this frame's clock */
            top_divergence_update(o->frame.divergence, v);
    }
    top_lines_clear(&lines);
    free(lines.lines);
    free(order);
    return status;
}
