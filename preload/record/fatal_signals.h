/*
 * Fatal signals: flush what was recorded before the process dies, then let
 * the signal do exactly what it would have done without the tracer.
 */
#ifndef VRAMTRACE_PRELOAD_FATAL_SIGNALS_H
#define VRAMTRACE_PRELOAD_FATAL_SIGNALS_H

/* Installs the handlers where the disposition is not ours already. */
void vt_fatal_signals_install(void);

#endif
