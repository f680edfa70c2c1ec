/* Python frames of a trace; see python_frames.h. */
#include "python_frames.h"

#include <stdio.h>
#include <string.h>

void vt_python_frame(const struct vt_reader *r, uint64_t ip, struct vt_frame *f)
{
    static const char *const undescribed = "<python code (not described in the trace)>";
    const struct vt_py_code_info *code = vt_reader_py_code(r, vt_py_frame_code(ip));
    memset(f, 0, sizeof *f);
    f->ip = ip;
    f->module = "python";
    f->line = vt_py_frame_line(ip);
    f->function = code ? code->qualname : undescribed;
    f->file = code && code->filename && code->filename[0] ? code->filename : NULL;
}
