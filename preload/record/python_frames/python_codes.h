/*
 * The writer thread's side of Python frames (python_stack.h): the recorder
 * hands out its own code ids, process-wide; a trace file numbers the code
 * objects it mentions 1, 2, 3... in order of first use and describes each
 * (VT_REC_PY_CODE) before the first stack node that refers to it.
 *
 * Only the writer thread calls these.
 */
#ifndef VRAMTRACE_PRELOAD_PYTHON_CODES_H
#define VRAMTRACE_PRELOAD_PYTHON_CODES_H

#include <stddef.h>
#include <stdint.h>

#include "trace_encoder.h"

/* A new trace file begins (writer start, a forked child's own file): no
 * code has been described in it yet. */
void vt_py_codes_reset(void);

/* The stack ips as the file must say them: returns ips itself if it has no
 * Python frame, else scratch (n entries) with each Python frame's code id
 * replaced by the file's, after encoding a VT_REC_PY_CODE record for each
 * code the file has not described yet. */
const uint64_t *vt_py_codes_prepare(struct vt_encoder *enc, const uint64_t *ips, size_t n,
                                    uint64_t *scratch);

#endif
