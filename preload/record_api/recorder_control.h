/*
 * Starting and stopping the recorder (the library's constructor and
 * destructor do it, preload/hooks/autostart.c; tests call it directly).
 */
#ifndef VRAMTRACE_PRELOAD_RECORDER_CONTROL_H
#define VRAMTRACE_PRELOAD_RECORDER_CONTROL_H

#include <stdbool.h>

struct sigaction;
/* sigaction's type. */
typedef int (*vt_sigaction_fn)(int sig, const struct sigaction *act, struct sigaction *old);

/* What the recorder needs from the code around it, handed to it at start:
 * the recorder calls nothing of the hooks by name. Any member may be NULL. */
struct vt_recorder_links {
    /* The dynamic loader's own dlsym. The recorder looks CPython's symbols
     * up with it (RTLD_DEFAULT), lazily, at the first events of a Python
     * process (python_stack.h). Where dlsym is interposed - libvramtrace.so
     * defines it itself - this must be the real one; in a program that
     * links the recorder (tests), plain dlsym. NULL: nothing is looked up,
     * stacks stay native (no Python frames). */
    void *(*loader_dlsym)(void *handle, const char *name);
    /* The name of an api id (vt_mem_event.api, .label), written into the
     * trace before its first use (VT_REC_API); NULL for an unknown id. The
     * writer thread calls it. NULL, or NULL for an id: "api#<id>". */
    const char *(*api_name)(unsigned api);
    /* The C library's sigaction. Where sigaction is interposed - the
     * library defines it, to keep the program's view of the fatal signals
     * (vt_record_sigaction) - this must be the real one; NULL: plain
     * sigaction. */
    vt_sigaction_fn sigaction;
};

/* Reads the options from the environment, opens the trace file and starts
 * the writer. Never fails in a way the program sees: on any problem it says
 * so once on stderr and stays inactive. Returns true if tracing. links (NULL:
 * none) is copied; a call while tracing changes nothing. */
bool vt_recorder_start(const struct vt_recorder_links *links);

/* Final flush, trailer, close. With release_memory every buffer is freed
 * too (only when no other thread can record any more: tests); at process
 * exit other threads may still be inside a hook, so memory is kept. */
void vt_recorder_stop(bool release_memory);

/* The path of the trace being written: the file created, else (no event
 * yet) the name it will be created under unless taken; "" if not tracing. */
const char *vt_recorder_path(void);

#endif
