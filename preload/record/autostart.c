/*
 * libvramtrace.so starts recording when it is loaded and finishes the trace
 * when the process exits normally. Kept apart from the rest of the recorder
 * so that tests can link the recorder and start/stop it themselves.
 *
 * The destructor (not atexit) runs from the loader's finalization, after
 * atexit handlers and after the destructors of libraries loaded later (a
 * framework freeing its GPU memory at exit is still recorded). Priority 101:
 * first constructor, last destructor of this library.
 */
#include <stdbool.h>

#include "recorder_control.h"

__attribute__((constructor(101))) static void vt_autostart(void)
{
    vt_recorder_start();
}

__attribute__((destructor(101))) static void vt_autostop(void)
{
    /* Other threads may still be running (and recording): keep memory. */
    vt_recorder_stop(false);
}
