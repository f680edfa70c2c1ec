/*
 * Errors of a command's inputs, said without flooding (a directory of
 * 5,000 junk files would otherwise give 5,000 lines). The first few are
 * named on stderr, one line each; the rest are counted in one line at the
 * end; every one is kept for the JSON document ("input_errors").
 */
#ifndef VRAMTRACE_COMMON_INPUT_ERRORS_H
#define VRAMTRACE_COMMON_INPUT_ERRORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* How many errors are named on stderr before the rest are only counted. */
#define VT_INPUT_ERRORS_NAMED 5

struct vt_input_errors {
    char **messages; /* every one, owned ("PATH: byte N: reason") */
    size_t n, cap;
    size_t unkept;   /* not kept: memory ran out (still counted) */
};

/* One input's error: said as "vramtrace: MESSAGE" on err while fewer than
 * VT_INPUT_ERRORS_NAMED were said, kept either way. */
void vt_input_error(struct vt_input_errors *e, FILE *err, const char *message);
/* How many errors there were. */
size_t vt_input_errors_count(const struct vt_input_errors *e);
/* The line that counts the errors not named ("vramtrace: and N more input
 * errors ..."), if there are any. */
void vt_input_errors_summary(const struct vt_input_errors *e, FILE *err);
/* Every error kept, as JSON strings (the items of "input_errors"). */
struct vt_json;
void vt_input_errors_json_items(const struct vt_input_errors *e, struct vt_json *j);
void vt_input_errors_free(struct vt_input_errors *e);

#endif
