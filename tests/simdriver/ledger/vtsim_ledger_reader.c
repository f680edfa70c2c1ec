/* See vtsim_ledger_reader.h. */
#define _GNU_SOURCE
#include "vtsim_ledger_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vtsim_ledger_load(const char *path, struct vtsim_ledger *out)
{
    out->lines = NULL;
    out->count = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t cap = 0;
    char *line = NULL;
    size_t n = 0;
    ssize_t len;
    while ((len = getline(&line, &n, f)) > 0) {
        if (line[len - 1] == '\n')
            line[len - 1] = 0;
        if (out->count == cap) {
            cap = cap ? cap * 2 : 256;
            char **grown = realloc(out->lines, cap * sizeof *grown);
            if (!grown)
                break;
            out->lines = grown;
        }
        out->lines[out->count++] = strdup(line);
    }
    free(line);
    fclose(f);
    return 0;
}

void vtsim_ledger_free(struct vtsim_ledger *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->lines[i]);
    free(l->lines);
    l->lines = NULL;
    l->count = 0;
}

int vtsim_ledger_field(const char *line, const char *key, char *out, size_t size)
{
    size_t klen = strlen(key);
    for (const char *p = line; p && *p; p = strchr(p, '\t'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, klen) == 0 && p[klen] == '=') {
            const char *v = p + klen + 1;
            size_t vlen = strcspn(v, "\t");
            if (size) {
                size_t c = vlen < size - 1 ? vlen : size - 1;
                memcpy(out, v, c);
                out[c] = 0;
            }
            return 1;
        }
    }
    return 0;
}

long long vtsim_ledger_num(const char *line, const char *key, long long fallback)
{
    char v[64];
    if (!vtsim_ledger_field(line, key, v, sizeof v))
        return fallback;
    return (long long)strtoull(v, NULL, 0);
}

int vtsim_ledger_is(const char *line, const char *op, const char *fn)
{
    char v[128];
    if (!vtsim_ledger_field(line, "op", v, sizeof v) || strcmp(v, op) != 0)
        return 0;
    return !fn || (vtsim_ledger_field(line, "fn", v, sizeof v) && strcmp(v, fn) == 0);
}

size_t vtsim_ledger_count(const struct vtsim_ledger *l, const char *op, const char *fn)
{
    size_t n = 0;
    for (size_t i = 0; i < l->count; i++)
        n += (size_t)vtsim_ledger_is(l->lines[i], op, fn);
    return n;
}

long long vtsim_ledger_sum_delta(const struct vtsim_ledger *l, int dev)
{
    long long sum = 0;
    for (size_t i = 0; i < l->count; i++)
        if (vtsim_ledger_num(l->lines[i], "dev", -1) == dev)
            sum += vtsim_ledger_num(l->lines[i], "delta", 0);
    return sum;
}
