/*
 * The command `top` names a process by, what the user ran with the most
 * telling word first: a program by its name, not where it lives ("train",
 * not "/opt/bin/train"); a script run by Python by the script ("train.py
 * --lr 3e-4", "torch.distributed.run ..." for -m, not "/usr/bin/python3
 * /home/me/proj/train.py"), since a narrow column cut at the interpreter's
 * path tells nothing.
 */
#ifndef VRAMTRACE_FOLLOW_FOLLOW_COMMAND_H
#define VRAMTRACE_FOLLOW_FOLLOW_COMMAND_H

#include <stddef.h>

#include "trace_reader.h"

/* Writes the command into buf (n bytes, cut if longer); "" when the
 * process record has neither argv nor exe. */
void vt_follow_command(const struct vt_process_info *info, char *buf, size_t n);

#endif
