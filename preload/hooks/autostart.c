/*
 * libvramtrace.so starts recording when it is loaded and finishes the trace
 * when the process exits normally. The recorder itself knows nothing of
 * the hooks: what it needs of them is handed to it here (tests link the
 * recorder without the hooks and start/stop it themselves).
 *
 * The destructor (not atexit) runs from the loader's finalization, after
 * atexit handlers and after the destructors of libraries loaded later (a
 * framework freeing its GPU memory at exit is still recorded). Priority 101:
 * first constructor, last destructor of this library. A second copy of the
 * library in the process starts nothing (single_tracer.c).
 */
#include "hooks_internal.h"

#include "recorder_control.h"

__attribute__((constructor(101))) static void vt_autostart(void)
{
    static const struct vt_recorder_links links = {
        /* dlsym is ours: CPython's symbols are looked up with glibc's */
        .loader_dlsym = vt_real_dlsym,
        .api_name = vt_api_name,
        /* sigaction is ours too (signal_hooks.c): the recorder's own
         * installs go to the C library's */
        .sigaction = vt_libc_sigaction,
    };
    if (vt_single_tracer_claim()) {
        vt_recorder_start(&links);
        vt_signal_hooks_arm();
    }
}

__attribute__((destructor(101))) static void vt_autostop(void)
{
    /* Other threads may still be running (and recording): keep memory. */
    vt_recorder_stop(false);
}
