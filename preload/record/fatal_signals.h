/*
 * Fatal signals: flush what was recorded before the process dies, then let
 * the signal do exactly what it would have done without the tracer - while
 * the program sees its own dispositions only (fatal_signals.c).
 */
#ifndef VRAMTRACE_PRELOAD_FATAL_SIGNALS_H
#define VRAMTRACE_PRELOAD_FATAL_SIGNALS_H

#include <stdbool.h>

#include "recorder_control.h" /* vt_sigaction_fn */

/* Installs the handlers, once per process; real is the C library's
 * sigaction (NULL: sigaction itself, when no hook defines it). */
void vt_fatal_signals_install(vt_sigaction_fn real);
/* In a forked child (atfork): the view is this process's now. */
void vt_fatal_signals_after_fork(void);
/* The program's sigaction of a signal: vt_record_sigaction (recorder.h),
 * which the recorder's face hands on to here. */
bool vt_fatal_signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                                int *rc);

#endif
