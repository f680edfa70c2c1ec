/*
 * The one line a process traced with a plain LD_PRELOAD says when it exits
 * (README.md, "Without the wrapper"):
 *
 *   vramtrace: trace vramtrace.node1.5662.vtrace: device 0 peak 11.63 GiB; read it: vramtrace report vramtrace.node1.5662.vtrace
 *
 * with the allocation calls that failed when some did. Said only by the
 * first traced process - one whose parent is not traced (a forked child, a
 * worker a traced launcher started, are silent) and not under `vramtrace
 * run` (which says its own lines: VRAMTRACE_SESSION) - only when stderr is
 * a terminal, and not with VRAMTRACE_QUIET=1.
 *
 * The peak is the report's: the writer thread, which sees every record in
 * the trace's order, follows the live device allocations by the live-set
 * rule the analyzer's replay runs (common/live_rule.h, one
 * implementation for both) and keeps each device's total and largest
 * total.
 */
#ifndef VRAMTRACE_PRELOAD_EXIT_LINE_H
#define VRAMTRACE_PRELOAD_EXIT_LINE_H

#include <stdbool.h>

#include "trace_encoder.h"

/* At start: whether this process may say the line (quiet: VRAMTRACE_QUIET;
 * the rest is looked up here). */
void vt_exit_line_init(bool quiet);
/* A forked child never says it. */
void vt_exit_line_after_fork_child(void);
/* Every MEM record, from the writer thread, in the trace's order. */
void vt_exit_line_note(const struct vt_mem_record *r);
/* At exit, after the trace's last chunk: the line, if it is to be said. */
void vt_exit_line_say(const char *trace_path);

#endif
