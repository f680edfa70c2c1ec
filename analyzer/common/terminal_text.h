/*
 * A trace's strings as text for a terminal. Thread, phase, mark and census
 * names, commands and frames are the traced program's to choose, and one
 * that carries an escape sequence would retitle, clear or recolour the
 * terminal of whoever reads the report. Text outputs show every control
 * character of them (below 0x20, and DEL) as '?'; JSON escapes them as
 * JSON does and HTML as HTML does, so nothing is lost there.
 */
#ifndef VRAMTRACE_COMMON_TERMINAL_TEXT_H
#define VRAMTRACE_COMMON_TERMINAL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

static inline bool vt_terminal_control(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

/* One string on a line: its control characters (a newline too) as '?'. */
void vt_terminal_put(FILE *out, const char *s);
/* Lines of text (a whole output's): control characters as '?', but the
 * newlines that end the lines. */
void vt_terminal_write(FILE *out, const char *text, size_t len);
/* The same as vt_terminal_put, in place. */
void vt_terminal_clean(char *s);

#endif
