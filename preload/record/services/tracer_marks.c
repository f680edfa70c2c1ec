/*
 * The per-thread marks hooks and recorder share (tracer_services.h): the
 * recursion guard and the frame of the driver wrapper that is recording.
 */
#include "tracer_services.h"

__thread int vt_in_tracer __attribute__((tls_model("initial-exec")));
__thread void *vt_hook_frame __attribute__((tls_model("initial-exec")));
