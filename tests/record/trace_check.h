/* Test helpers: decode a whole trace with the analyzer's reader, and run
 * code in a child process with its stderr captured. */
#ifndef VRAMTRACE_TESTS_RECORD_TRACE_CHECK_H
#define VRAMTRACE_TESTS_RECORD_TRACE_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "trace_reader.h"

struct tc_trace {
    struct vt_reader *reader;
    struct vt_record *recs; /* valid while reader is open */
    size_t n;
    int rc;                 /* last vt_reader_next() result: 0 end, -1 error */
    int open_rc;
    uint8_t *data;          /* the file's bytes (tc_load_file) */
    size_t len;
};

/* Decodes every record (stops at the end or the first error). */
struct tc_trace *tc_load_memory(const void *data, size_t len);
struct tc_trace *tc_load_file(const char *path);
void tc_free(struct tc_trace *t);
size_t tc_count(const struct tc_trace *t, enum vt_record_type type);
/* The whole file, malloc'd; NULL if unreadable. */
uint8_t *tc_read_file(const char *path, size_t *len);

/* A fresh empty directory under /tmp (static buffer per call site). */
void tc_make_tmpdir(char *out, size_t len);
/* Removes every file in dir, then dir. */
void tc_remove_tmpdir(const char *dir);

/* Runs fn(arg) in a forked child with stderr going to a file; returns the
 * child's wait status and fills err (NUL-terminated, truncated to errlen). */
int tc_run_child(void (*fn)(void *), void *arg, char *err, size_t errlen);
/* Lines of text containing needle. */
int tc_count_lines_with(const char *text, const char *needle);

#endif
