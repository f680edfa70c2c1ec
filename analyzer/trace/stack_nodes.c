/* A trace's stack nodes, compact; see stack_nodes.h. */
#include "stack_nodes.h"

#include <stdlib.h>
#include <string.h>

void vt_stack_nodes_init(struct vt_stack_nodes *t)
{
    memset(t, 0, sizeof *t);
}

void vt_stack_nodes_free(struct vt_stack_nodes *t)
{
    free(t->chained);
    free(t->apart_before);
    free(t->apart);
    free(t->ip_low);
    free(t->ip_span);
    free(t->ip_wide);
    vt_stack_nodes_init(t);
}

/* *p resized to n elements of size elem (at least one); false if it could
 * not be, *p unchanged. */
static bool resize(void **p, uint64_t n, size_t elem)
{
    if (n > SIZE_MAX / elem)
        return false;
    void *q = realloc(*p, (size_t)(n ? n : 1) * elem);
    if (!q)
        return false;
    *p = q;
    return true;
}

static uint64_t words(uint64_t nodes)
{
    return (nodes + 63) / 64;
}

/* The arrays sized for cap nodes (grown or shrunk); false if one could not
 * be, the others then sized for at least min(cap, the old room). */
static bool size_for(struct vt_stack_nodes *t, uint64_t cap)
{
    bool ok = resize((void **)&t->chained, words(cap), sizeof *t->chained) &&
              resize((void **)&t->apart_before, words(cap), sizeof *t->apart_before);
    if (t->ip_wide)
        ok = ok && resize((void **)&t->ip_wide, cap, sizeof *t->ip_wide);
    else
        ok = ok && resize((void **)&t->ip_low, cap, sizeof *t->ip_low) &&
             resize((void **)&t->ip_span, cap, sizeof *t->ip_span);
    return ok;
}

bool vt_stack_nodes_reserve(struct vt_stack_nodes *t, uint64_t cap)
{
    if (cap <= t->cap)
        return true;
    if (!size_for(t, cap))
        return false;
    t->cap = cap;
    return true;
}

/* The ips kept whole from here on: more spans than the table holds. */
static bool go_wide(struct vt_stack_nodes *t)
{
    uint64_t *wide = malloc((size_t)(t->cap ? t->cap : 1) * sizeof *wide);
    if (!wide)
        return false;
    for (uint64_t k = 0; k < t->n; k++)
        wide[k] = (uint64_t)t->spans[t->ip_span[k]] << 32 | t->ip_low[k];
    free(t->ip_low);
    free(t->ip_span);
    t->ip_low = NULL;
    t->ip_span = NULL;
    t->ip_wide = wide;
    return true;
}

/* The index of ip's span, added if new; -1: the table is full. */
static int span_of(struct vt_stack_nodes *t, uint64_t ip)
{
    uint32_t hi = (uint32_t)(ip >> 32);
    if (t->nspans && t->spans[t->last_span] == hi)
        return (int)t->last_span;
    for (unsigned s = 0; s < t->nspans; s++)
        if (t->spans[s] == hi)
            return (int)(t->last_span = s);
    if (t->nspans == VT_STACK_NODE_SPANS)
        return -1;
    t->spans[t->nspans] = hi;
    return (int)(t->last_span = t->nspans++);
}

bool vt_stack_nodes_add_any(struct vt_stack_nodes *t, uint64_t parent, uint64_t ip)
{
    uint64_t k = t->n; /* the node's index; its id is k + 1 */
    if (k >= t->cap)
        return false;
    bool chained = parent == k;
    if (!chained && t->napart == t->apart_cap) {
        size_t ncap = t->apart_cap ? 2 * t->apart_cap : 16;
        if (!resize((void **)&t->apart, ncap, sizeof *t->apart))
            return false;
        t->apart_cap = ncap;
    }
    int span = 0;
    if (!t->ip_wide && (span = span_of(t, ip)) < 0 && !go_wide(t))
        return false;
    uint64_t w = k / 64, bit = 1ull << (k % 64);
    if (k % 64 == 0) {
        t->chained[w] = 0;
        t->apart_before[w] = (uint32_t)t->napart;
    }
    if (chained)
        t->chained[w] |= bit;
    else
        t->apart[t->napart++] = (uint32_t)parent;
    t->python |= ip >> 63;
    if (t->ip_wide) {
        t->ip_wide[k] = ip;
    } else {
        t->ip_low[k] = (uint32_t)ip;
        t->ip_span[k] = (uint8_t)span;
    }
    t->n = k + 1;
    return true;
}

bool vt_stack_nodes_get(const struct vt_stack_nodes *t, uint64_t id, uint64_t *parent,
                        uint64_t *ip)
{
    if (id == 0 || id > t->n)
        return false;
    uint64_t k = id - 1, w = k / 64, below = (1ull << (k % 64)) - 1;
    if (t->chained[w] >> (k % 64) & 1)
        *parent = k;
    else
        *parent = t->apart[t->apart_before[w] +
                           (size_t)__builtin_popcountll(~t->chained[w] & below)];
    *ip = t->ip_wide ? t->ip_wide[k] : (uint64_t)t->spans[t->ip_span[k]] << 32 | t->ip_low[k];
    return true;
}

bool vt_stack_nodes_has_python(const struct vt_stack_nodes *t)
{
    return t->python;
}

void vt_stack_nodes_trim(struct vt_stack_nodes *t)
{
    if (t->n < t->cap && size_for(t, t->n))
        t->cap = t->n;
    if (t->napart < t->apart_cap && resize((void **)&t->apart, t->napart, sizeof *t->apart))
        t->apart_cap = t->napart ? t->napart : 1;
}
