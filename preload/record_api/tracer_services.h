/*
 * The few services every part of the tracer shares, hooks and recorder
 * alike: the per-thread marks that keep the tracer out of its own way, and
 * the tracer's one way of saying things. A header apart from recorder.h so
 * that the recorder's internals can use them without including the face
 * they implement (record/services/ defines them).
 */
#ifndef VRAMTRACE_PRELOAD_TRACER_SERVICES_H
#define VRAMTRACE_PRELOAD_TRACER_SERVICES_H

/* The per-thread recursion guard shared by hooks and recorder: while it is
 * set, hooks pass straight through (the tracer's own driver calls, and
 * anything the recorder triggers, are not recorded). Initial-exec TLS: no
 * allocation, safe in any hook. */
extern __thread int vt_in_tracer __attribute__((tls_model("initial-exec")));

/* The frame of the driver wrapper whose action is recording, NULL outside
 * one (set around the action, driver_wrappers.c; a hook of a signal
 * handler restores the one it interrupted). The program's part of the
 * stack begins at that frame's caller, so the recorder walks from there
 * rather than through the library's own frames (recorder.c,
 * capture_stack). A frame-pointer frame: __builtin_frame_address(0) -
 * frame[0] the saved rbp, frame[1] the return address, its caller's stack
 * pointer frame + 2. */
extern __thread void *vt_hook_frame __attribute__((tls_model("initial-exec")));

/* One line to fd, the way the tracer says things ("vramtrace: ..."):
 * snprintf into a stack buffer, then one write(). fd VT_SAY_LATER: held
 * until the process records its first event (quiet until it traces:
 * processes that never use CUDA say nothing), then said once. */
#define VT_SAY_LATER (-2)
void vt_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Says the held lines, once (the first event of the process, or its first
 * driver call when tracing could not start). */
void vt_say_held(void);
/* Drops the held lines unsaid (VRAMTRACE_DISABLE). */
void vt_say_forget_held(void);

#endif
