/* A trace's strings as text for a terminal; see terminal_text.h. */
#include "terminal_text.h"

#include <string.h>

void vt_terminal_put(FILE *out, const char *s)
{
    for (;;) {
        const char *p = s;
        while (*p && !vt_terminal_control((unsigned char)*p))
            p++;
        fwrite(s, 1, (size_t)(p - s), out); /* clean runs whole: a character at a
                                             * time was most of a stack line's cost */
        if (!*p)
            return;
        fputc('?', out);
        s = p + 1;
    }
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
