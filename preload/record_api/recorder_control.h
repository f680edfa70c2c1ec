/*
 * Starting and stopping the recorder (the library's constructor and
 * destructor do it; tests call it directly).
 */
#ifndef VRAMTRACE_PRELOAD_RECORDER_CONTROL_H
#define VRAMTRACE_PRELOAD_RECORDER_CONTROL_H

#include <stdbool.h>

/* Reads the options from the environment, opens the trace file and starts
 * the writer. Never fails in a way the program sees: on any problem it says
 * so once on stderr and stays inactive. Returns true if tracing. */
bool vt_recorder_start(void);

/* Final flush, trailer, close. With release_memory every buffer is freed
 * too (only when no other thread can record any more: tests); at process
 * exit other threads may still be inside a hook, so memory is kept. */
void vt_recorder_stop(bool release_memory);

/* The path of the trace being written: the file created, else (no event
 * yet) the name it will be created under unless taken; "" if not tracing. */
const char *vt_recorder_path(void);

#endif
