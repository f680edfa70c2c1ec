/*
 * Reads line_tables.py's output (stdin) and checks the tracer's line-table
 * decoder (vt_py_line_from_table, preload/record/python_frames/python_lines.c) at every
 * bytecode offset against the line the interpreter itself gave. argv[1]:
 * "--tamper" shifts every expected line by one (the check must then fail).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_lines.h"

static uint8_t table[1 << 20];

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (; hex[0] && hex[1] && n < cap; hex += 2) {
        unsigned v;
        if (sscanf(hex, "%2x", &v) != 1)
            break;
        out[n++] = (uint8_t)v;
    }
    return n;
}

int main(int argc, char **argv)
{
    int shift = argc > 1 && !strcmp(argv[1], "--tamper") ? 1 : 0;
    static char line[4 << 20];
    int minor = 0, first = 0;
    size_t len = 0;
    unsigned long codes = 0, offsets = 0, bad = 0;
    while (fgets(line, sizeof line, stdin)) {
        if (line[0] == 'C') {
            char *hex = malloc(strlen(line));
            if (!hex || sscanf(line, "C %d %d %s", &minor, &first, hex) < 2)
                return 2;
            if (sscanf(line, "C %d %d %s", &minor, &first, hex) < 3)
                hex[0] = '\0';
            len = unhex(hex, table, sizeof table);
            free(hex);
            codes++;
        } else if (line[0] == 'R') {
            long start, end, want;
            if (sscanf(line, "R %ld %ld %ld", &start, &end, &want) != 3)
                return 2;
            for (long a = start; a < end; a += 2) {
                int got = vt_py_line_from_table(minor, table, len, first, a);
                offsets++;
                if (got != want + shift && bad++ < 10)
                    printf("FAIL: minor %d first line %d offset %ld: decoded %d, Python says %ld\n",
                           minor, first, a, got, want + shift);
            }
        }
    }
    if (codes == 0 || offsets < 1000) {
        printf("FAIL: only %lu code objects, %lu offsets read\n", codes, offsets);
        return 1;
    }
    if (bad) {
        printf("FAIL: %lu of %lu offsets decoded wrong\n", bad, offsets);
        return 1;
    }
    printf("ok: %lu code objects, %lu offsets, every line as the interpreter says\n", codes,
           offsets);
    return 0;
}
