/*
 * Python frames in recorded stacks (VT_PY_FRAME_TAG ips, trace_format.h):
 * resolved from the trace's own VT_REC_PY_CODE records, no binary needed.
 */
#ifndef VRAMTRACE_ANALYZER_PYTHON_FRAMES_H
#define VRAMTRACE_ANALYZER_PYTHON_FRAMES_H

#include "symbolize.h"
#include "trace_reader.h"

/* Fills f for a tagged ip: function = qualified name, file, line, module
 * "python". A code id the trace never described gives "<python code #N>".
 * Strings are the reader's (valid until vt_reader_close) or static. */
void vt_python_frame(const struct vt_reader *r, uint64_t ip, struct vt_frame *f);

#endif
