/*
 * `vramtrace top` without arguments: the newest `vramtrace run` session of
 * this host that still runs, and where its traces go. Every process of a
 * session carries VRAMTRACE_SESSION, VRAMTRACE_SESSION_START and
 * VRAMTRACE_OUTPUT (the trace path template) in its environment
 * (cmd_run.c), so the running processes say it: /proc/PID/environ of those
 * this user may read. Its traces are then found as `run` finds them at
 * the end: the files under the template's directory whose process record
 * carries the session id.
 */
#ifndef VRAMTRACE_CLI_TOP_SESSION_H
#define VRAMTRACE_CLI_TOP_SESSION_H

#include <stdbool.h>
#include <stddef.h>

struct top_session {
    char id[128];
    char dir[4096];    /* the template's directory before any %, absolute */
    unsigned long pid; /* a process of it, for messages */
};

/* False if no session runs on this host (that this user can see). */
bool top_find_session(struct top_session *s);

#endif
