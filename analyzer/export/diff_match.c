/* What two runs have, paired; see diff_match.h. */
#include "diff_match.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- processes and units ---- */

static size_t procs_with_units(const struct vt_diff_profile *p, size_t *last)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nprocs; i++)
        if (p->procs[i].has_units)
            n++, *last = i;
    return n;
}

static bool same_process(const struct diff_proc *x, const struct diff_proc *y)
{
    return x->rank == y->rank && x->snapshot == y->snapshot && x->ordinal == y->ordinal &&
           !strcmp(x->program, y->program);
}

/* map[i]: the after side's process paired with the before side's i
 * (SIZE_MAX: none). One process on each side: those two, whatever their
 * names (the runs of two builds of one program); else by program and
 * rank (and place among those alike, by start), then by rank alone (a
 * job's script renamed). lone: no side has more than one (units are
 * named by device alone). */
static void pair_procs(const struct vt_diff_profile *b, const struct vt_diff_profile *a,
                       size_t *map, bool *taken, bool *lone)
{
    size_t ib = 0, ia = 0;
    for (size_t i = 0; i < b->nprocs; i++)
        map[i] = SIZE_MAX;
    size_t nb = procs_with_units(b, &ib), na = procs_with_units(a, &ia);
    *lone = nb <= 1 && na <= 1;
    if (*lone) {
        if (nb && na)
            map[ib] = ia;
        return;
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < b->nprocs; i++) {
            const struct diff_proc *x = &b->procs[i];
            for (size_t j = 0; j < a->nprocs && map[i] == SIZE_MAX && x->has_units; j++) {
                const struct diff_proc *y = &a->procs[j];
                bool alike = pass == 0 ? same_process(x, y)
                                       : x->rank >= 0 && x->rank == y->rank && !x->snapshot &&
                                             !y->snapshot;
                if (!taken[j] && y->has_units && alike) {
                    map[i] = j;
                    taken[j] = true;
                }
            }
        }
}

/* "device 0" where each side has one process; else "rank 1 device 0",
 * "process train.py device 0" ("#2" after the program where a side has
 * more than one of it), "snapshot 2 device 0". */
static void unit_name(char *buf, size_t n, const struct vt_diff_profile *p,
                      const struct diff_unit *u, bool lone)
{
    const struct diff_proc *pr = &p->procs[u->proc];
    char who[160] = "", nth[32] = "";
    if (pr->nsame > 1)
        snprintf(nth, sizeof nth, " #%zu", pr->ordinal);
    if (lone)
        who[0] = '\0';
    else if (pr->snapshot)
        snprintf(who, sizeof who, "snapshot %zu ", pr->ordinal);
    else if (pr->rank >= 0)
        snprintf(who, sizeof who, "rank %ld%s ", pr->rank, nth);
    else
        snprintf(who, sizeof who, "process %s%s ", pr->program, nth);
    snprintf(buf, n, "%sdevice %" PRId64, who, u->device);
}

struct diff_pair *vt_diff_pair_units(const struct vt_diff_profile *b,
                                     const struct vt_diff_profile *a, size_t *n)
{
    *n = 0;
    size_t *map = calloc(b->nprocs + 1, sizeof *map);
    bool *taken = calloc(a->nprocs + 1, sizeof *taken);
    bool *used = calloc(a->n + 1, sizeof *used);
    struct diff_pair *pairs = calloc(b->n + a->n + 1, sizeof *pairs);
    if (!map || !taken || !used || !pairs) {
        free(pairs);
        pairs = NULL;
        goto out;
    }
    bool lone;
    pair_procs(b, a, map, taken, &lone);
    for (size_t i = 0; i < b->n; i++) {
        const struct diff_unit *u = &b->units[i];
        struct diff_pair *pr = &pairs[(*n)++];
        pr->before = u;
        for (size_t k = 0; k < a->n && map[u->proc] != SIZE_MAX; k++)
            if (!used[k] && a->units[k].proc == map[u->proc] && a->units[k].device == u->device) {
                pr->after = &a->units[k];
                used[k] = true;
                break;
            }
        if (pr->after)
            unit_name(pr->name, sizeof pr->name, a, pr->after, lone);
        else
            unit_name(pr->name, sizeof pr->name, b, u, lone);
    }
    for (size_t k = 0; k < a->n; k++)
        if (!used[k]) {
            struct diff_pair *pr = &pairs[(*n)++];
            pr->after = &a->units[k];
            unit_name(pr->name, sizeof pr->name, a, pr->after, lone);
        }
out:
    free(map);
    free(taken);
    free(used);
    return pairs;
}

/* ---- call sites ---- */

static uint64_t absdiff(uint64_t x, uint64_t y)
{
    return x > y ? x - y : y - x;
}

static void pair_sites(struct diff_change *c, size_t *n, const struct diff_site *b,
                       const struct diff_site *a, bool renamed)
{
    struct diff_change *x = &c[(*n)++];
    *x = (struct diff_change){.b = b, .a = a, .renamed = renamed};
    if (b)
        x->before = b->bytes, x->before_count = b->count;
    if (a)
        x->after = a->bytes, x->after_count = a->count;
}

/* Past this many cells, a group of one function's sites is paired in
 * order of its lines without the alignment below. */
#define ALIGN_MAX ((size_t)1 << 20)

/* One function's sites (the same key: the same functions and files, other
 * lines), in order of their lines on both sides. As many on each side:
 * paired in that order, wherever the lines went. Else the pairing in that
 * order that leaves the least bytes changed (a site unpaired changes by
 * all of its bytes): the ones a change added or took away are left new or
 * gone. */
static void align(const struct diff_site *bs, size_t nb, const struct diff_site *as, size_t na,
                  bool *pb, bool *pa)
{
    uint64_t *cost = nb != na && (nb + 1) * (na + 1) <= ALIGN_MAX
                         ? malloc((nb + 1) * (na + 1) * sizeof *cost)
                         : NULL;
    if (!cost) {
        for (size_t k = 0; k < nb && k < na; k++)
            pb[k] = pa[k] = true;
        return;
    }
#define COST(i, j) cost[(i) * (na + 1) + (j)]
    for (size_t i = 0; i <= nb; i++)
        for (size_t j = 0; j <= na; j++) {
            uint64_t best = UINT64_MAX;
            if (!i && !j)
                best = 0;
            if (i && j)
                best = COST(i - 1, j - 1) + absdiff(bs[i - 1].bytes, as[j - 1].bytes);
            if (i && COST(i - 1, j) + bs[i - 1].bytes < best)
                best = COST(i - 1, j) + bs[i - 1].bytes;
            if (j && COST(i, j - 1) + as[j - 1].bytes < best)
                best = COST(i, j - 1) + as[j - 1].bytes;
            COST(i, j) = best;
        }
    for (size_t i = nb, j = na; i && j;) {
        if (COST(i, j) == COST(i - 1, j - 1) + absdiff(bs[i - 1].bytes, as[j - 1].bytes)) {
            pb[--i] = pa[--j] = true;
        } else if (COST(i, j) == COST(i - 1, j) + bs[i - 1].bytes) {
            i--;
        } else {
            j--;
        }
    }
#undef COST
    free(cost);
}

static bool same_file(const char *x, const char *y)
{
    return x == y || (x && y && !strcmp(x, y));
}

/* Two stacks alike but for names: in each frame that differs, either its
 * function's name (the same file) or its file's (the same function). */
static bool renamed_from(const struct diff_site *x, const struct diff_site *y)
{
    if (x->nfr != y->nfr)
        return false;
    bool differs = false;
    for (size_t k = 0; k < x->nfr; k++) {
        const struct diff_frame *fx = &x->fr[k], *fy = &y->fr[k];
        bool fn = !strcmp(fx->function, fy->function), file = same_file(fx->file, fy->file);
        if (fn && file)
            continue;
        if (!fx->named || !fy->named || (!fn && !file) || (!file && (!fx->file || !fy->file)))
            return false;
        differs = true;
    }
    return differs;
}

/* Past this many (gone, new) candidates, renames are not looked for. */
#define RENAMES_MAX ((size_t)1 << 22)

/* The sites left unpaired: each gone one with the new one it was renamed
 * to, the nearest in bytes where several could be. */
static void pair_renamed(const struct diff_unit *b, const struct diff_unit *a, bool *pb,
                         bool *pa, struct diff_change *c, size_t *n)
{
    size_t gone = 0, fresh = 0;
    for (size_t i = 0; i < b->nsites; i++)
        gone += !pb[i];
    for (size_t k = 0; k < a->nsites; k++)
        fresh += !pa[k];
    if (!gone || !fresh || gone * fresh > RENAMES_MAX)
        return;
    for (size_t i = 0; i < b->nsites; i++) {
        size_t best = SIZE_MAX;
        for (size_t k = 0; k < a->nsites && !pb[i]; k++)
            if (!pa[k] && renamed_from(&b->sites[i], &a->sites[k]) &&
                (best == SIZE_MAX || absdiff(b->sites[i].bytes, a->sites[k].bytes) <
                                         absdiff(b->sites[i].bytes, a->sites[best].bytes)))
                best = k;
        if (best != SIZE_MAX) {
            pb[i] = pa[best] = true;
            pair_sites(c, n, &b->sites[i], &a->sites[best], true);
        }
    }
}

static int64_t delta(uint64_t before, uint64_t after)
{
    return after >= before ? (int64_t)(after - before) : -(int64_t)(before - after);
}

static const char *key_of(const struct diff_change *c)
{
    return c->a ? c->a->key : c->b->key;
}

static int by_change_desc(const void *x_, const void *y_)
{
    const struct diff_change *x = x_, *y = y_;
    int64_t dx = llabs(delta(x->before, x->after)), dy = llabs(delta(y->before, y->after));
    if (dx != dy)
        return dx < dy ? 1 : -1;
    uint64_t mx = x->after > x->before ? x->after : x->before;
    uint64_t my = y->after > y->before ? y->after : y->before;
    return mx < my ? 1 : mx > my ? -1 : strcmp(key_of(x), key_of(y));
}

struct diff_change *vt_diff_compare_sites(const struct diff_unit *b, const struct diff_unit *a,
                                          size_t *n)
{
    static const struct diff_unit none;
    b = b ? b : &none;
    a = a ? a : &none;
    struct diff_change *c = calloc(b->nsites + a->nsites + 1, sizeof *c);
    bool *pb = calloc(b->nsites + 1, sizeof *pb), *pa = calloc(a->nsites + 1, sizeof *pa);
    *n = 0;
    if (!c || !pb || !pa) {
        free(c);
        c = NULL;
        goto out;
    }
    /* Both sides' sites are in order of key, then of lines. */
    for (size_t i = 0, k = 0; i < b->nsites && k < a->nsites;) {
        int cmp = strcmp(b->sites[i].key, a->sites[k].key);
        if (cmp) {
            i += cmp < 0;
            k += cmp > 0;
            continue;
        }
        size_t ie = i, ke = k;
        while (ie < b->nsites && !strcmp(b->sites[ie].key, b->sites[i].key))
            ie++;
        while (ke < a->nsites && !strcmp(a->sites[ke].key, a->sites[k].key))
            ke++;
        align(&b->sites[i], ie - i, &a->sites[k], ke - k, &pb[i], &pa[k]);
        for (size_t x = i, y = k;; x++, y++) {
            while (x < ie && !pb[x])
                x++;
            while (y < ke && !pa[y])
                y++;
            if (x == ie || y == ke)
                break;
            pair_sites(c, n, &b->sites[x], &a->sites[y], false);
        }
        i = ie;
        k = ke;
    }
    pair_renamed(b, a, pb, pa, c, n);
    for (size_t i = 0; i < b->nsites; i++)
        if (!pb[i])
            pair_sites(c, n, &b->sites[i], NULL, false);
    for (size_t k = 0; k < a->nsites; k++)
        if (!pa[k])
            pair_sites(c, n, NULL, &a->sites[k], false);
    qsort(c, *n, sizeof *c, by_change_desc);
out:
    free(pb);
    free(pa);
    return c;
}

static size_t add_rename(struct diff_rename *out, size_t n, size_t max, const char *what,
                         const char *before, const char *after)
{
    for (size_t k = 0; k < n; k++)
        if (!strcmp(out[k].what, what) && !strcmp(out[k].before, before) &&
            !strcmp(out[k].after, after))
            return n;
    if (n < max)
        out[n++] = (struct diff_rename){what, before, after};
    return n;
}

size_t vt_diff_renames(const struct diff_change *c, struct diff_rename *out, size_t max)
{
    size_t n = 0;
    for (size_t k = 0; c->renamed && k < c->b->nfr && k < c->a->nfr; k++) {
        const struct diff_frame *fb = &c->b->fr[k], *fa = &c->a->fr[k];
        if (strcmp(fb->function, fa->function))
            n = add_rename(out, n, max, "function", fb->function, fa->function);
        if (!same_file(fb->file, fa->file))
            n = add_rename(out, n, max, "file", fb->file, fa->file);
    }
    return n;
}
