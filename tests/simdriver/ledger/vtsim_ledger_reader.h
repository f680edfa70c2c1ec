/* Reading the simulated driver's ledger (format: docs/user/SIMULATED_GPU.md):
 * one event a line, tab-separated key=value fields, first field op=.
 * For tests and tools, in C.  Link with simledger_dep. */
#ifndef VTSIM_LEDGER_READER_H
#define VTSIM_LEDGER_READER_H

#include <stddef.h>

struct vtsim_ledger {
    char **lines;   /* without the newline */
    size_t count;
};

/* 0 on success; a missing file reads as an empty ledger. */
int vtsim_ledger_load(const char *path, struct vtsim_ledger *out);
void vtsim_ledger_free(struct vtsim_ledger *l);

/* Copies the value of key into out; 1 if present, 0 if not. */
int vtsim_ledger_field(const char *line, const char *key, char *out, size_t size);
/* The field as a number (decimal, or hex with 0x), or fallback when absent. */
long long vtsim_ledger_num(const char *line, const char *key, long long fallback);
/* 1 if the line has op=<op> (and, when fn is not NULL, fn=<fn>). */
int vtsim_ledger_is(const char *line, const char *op, const char *fn);
/* How many lines have op (and fn, when not NULL). */
size_t vtsim_ledger_count(const struct vtsim_ledger *l, const char *op, const char *fn);
/* Sum of delta= over the lines of device dev (successful changes of the
 * device memory this process holds). */
long long vtsim_ledger_sum_delta(const struct vtsim_ledger *l, int dev);

#endif
