/* vtsim-ledger: summarises a simulated-driver ledger for people and scripts.
 *   vtsim-ledger LEDGER        per-op counts (ok/failed) and, per device and
 *                              pid, the device bytes still held (sum of delta)
 * Exit 0, or 2 when the file cannot be read. */
#define _GNU_SOURCE
#include "vtsim_ledger_reader.h"

#include <stdio.h>
#include <string.h>

#define MAX_KEYS 128

struct tally {
    char key[64];
    long long ok, failed, delta;
};

static struct tally *find(struct tally *t, int *n, const char *key)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(t[i].key, key) == 0)
            return &t[i];
    if (*n == MAX_KEYS)
        return NULL;
    struct tally *x = &t[(*n)++];
    memset(x, 0, sizeof *x);
    snprintf(x->key, sizeof x->key, "%s", key);
    return x;
}

int main(int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: vtsim-ledger LEDGER\n");
        return 2;
    }
    FILE *probe = fopen(argv[1], "r");
    if (!probe) {
        fprintf(stderr, "vtsim-ledger: cannot read %s\n", argv[1]);
        return 2;
    }
    fclose(probe);
    struct vtsim_ledger l;
    vtsim_ledger_load(argv[1], &l);
    static struct tally ops[MAX_KEYS], held[MAX_KEYS];
    int n_ops = 0, n_held = 0;
    for (size_t i = 0; i < l.count; i++) {
        char op[64] = "?", key[64];
        vtsim_ledger_field(l.lines[i], "op", op, sizeof op);
        struct tally *t = find(ops, &n_ops, op);
        int ok = vtsim_ledger_num(l.lines[i], "result", -1) == 0;
        if (t)
            ok ? t->ok++ : t->failed++;
        long long delta = vtsim_ledger_num(l.lines[i], "delta", 0);
        if (delta) {
            snprintf(key, sizeof key, "dev=%lld pid=%lld", vtsim_ledger_num(l.lines[i], "dev", -1),
                     vtsim_ledger_num(l.lines[i], "pid", 0));
            struct tally *h = find(held, &n_held, key);
            if (h)
                h->delta += delta;
        }
    }
    printf("%zu events\n", l.count);
    for (int i = 0; i < n_ops; i++)
        printf("op %-18s ok %lld failed %lld\n", ops[i].key, ops[i].ok, ops[i].failed);
    for (int i = 0; i < n_held; i++)
        printf("held %s bytes %lld\n", held[i].key, held[i].delta);
    vtsim_ledger_free(&l);
    return 0;
}
