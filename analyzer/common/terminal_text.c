/* A trace's strings as text for a terminal; see terminal_text.h. */
#include "terminal_text.h"

#include <string.h>

void vt_terminal_put(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(vt_terminal_control((unsigned char)*s) ? '?' : *s, out);
}

void vt_terminal_write(FILE *out, const char *text, size_t len)
{
    const char *end = text + len;
    while (text < end) {
        const char *p = text;
        while (p < end && (*p == '\n' || !vt_terminal_control((unsigned char)*p)))
            p++;
        fwrite(text, 1, (size_t)(p - text), out); /* clean runs whole: most text is */
        if (p < end)
            fputc('?', out), p++;
        text = p;
    }
}

void vt_terminal_clean(char *s)
{
    for (; *s; s++)
        if (vt_terminal_control((unsigned char)*s))
            *s = '?';
}
