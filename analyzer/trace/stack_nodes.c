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
    free(t->shift);
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
    if (k >= t->cap || t->base)
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

/* Node index j's ip (j counted in t's own arrays). */
static inline uint64_t ip_at(const struct vt_stack_nodes *t, uint64_t j)
{
    return t->ip_wide ? t->ip_wide[j] : (uint64_t)t->spans[t->ip_span[j]] << 32 | t->ip_low[j];
}

/* Node index k's parent and ip, at index j of t's own arrays. */
static inline void own_node(const struct vt_stack_nodes *t, uint64_t k, uint64_t j,
                            uint64_t *parent, uint64_t *ip)
{
    uint64_t w = j / 64, below = (1ull << (j % 64)) - 1;
    if (t->chained[w] >> (j % 64) & 1)
        *parent = k;
    else
        *parent = t->apart[t->apart_before[w] +
                           (size_t)__builtin_popcountll(~t->chained[w] & below)];
    *ip = ip_at(t, j);
}

bool vt_stack_nodes_get(const struct vt_stack_nodes *t, uint64_t id, uint64_t *parent,
                        uint64_t *ip)
{
    if (id == 0 || id > t->n)
        return false;
    uint64_t k = id - 1;
    if (k >= t->nbase) {
        own_node(t, k, k - t->nbase, parent, ip);
        return true;
    }
    own_node(t->base, k, k, parent, ip); /* a base holds all its nodes itself */
    if (t->shift)
        *ip += (uint64_t)t->shift[t->base_slot[k]];
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

uint64_t vt_stack_nodes_own(const struct vt_stack_nodes *t)
{
    return t->n - t->nbase;
}

/* Where the ips of nodes [from, to) of t and base first differ (to: they
 * do not), base's shifted. */
static uint64_t first_other_ip(const struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                               const uint16_t *slot, const int64_t *shift, uint64_t from,
                               uint64_t to)
{
    for (uint64_t k = from; k < to; k++)
        if (ip_at(t, k) != ip_at(base, k) + (shift ? (uint64_t)shift[slot[k]] : 0))
            return k;
    return to;
}

/* Whether the ips of nodes [from, to) are the same, base's shifted: no
 * early exit, so that the compiler may run it several nodes at a time. */
static bool same_ips(const struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                     const uint16_t *slot, const int64_t *shift, bool bytes, uint64_t from,
                     uint64_t to)
{
    uint64_t other = 0;
    if (bytes)
        return !memcmp(t->ip_low + from, base->ip_low + from, (to - from) * sizeof *t->ip_low) &&
               !memcmp(t->ip_span + from, base->ip_span + from, to - from);
    if (!t->ip_wide && !base->ip_wide) {
        const uint32_t *tl = t->ip_low, *bl = base->ip_low, *tsp = t->spans, *bsp = base->spans;
        const uint8_t *ts = t->ip_span, *bs = base->ip_span;
        if (shift)
            for (uint64_t k = from; k < to; k++)
                other |= ((uint64_t)tsp[ts[k]] << 32 | tl[k]) ^
                         (((uint64_t)bsp[bs[k]] << 32 | bl[k]) + (uint64_t)shift[slot[k]]);
        else
            for (uint64_t k = from; k < to; k++)
                other |= ((uint64_t)tsp[ts[k]] << 32 | tl[k]) ^ ((uint64_t)bsp[bs[k]] << 32 | bl[k]);
        return !other;
    }
    return first_other_ip(t, base, slot, shift, from, to) == to;
}

uint64_t vt_stack_nodes_common(const struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                               const uint16_t *slot, const int64_t *shift)
{
    uint64_t n = t->n < base->n ? t->n : base->n;
    if (t->base || base->base)
        return 0;
    /* Nothing shifted and base's spans numbered alike in t (the first of
     * t's, which are all different): the same ips are the same bytes. */
    bool bytes = !t->ip_wide && !base->ip_wide && !shift && t->nspans >= base->nspans &&
                 !memcmp(t->spans, base->spans, sizeof t->spans[0] * base->nspans);
    /* The same bytes where all is the same (the common case): the words
     * of whole 64 nodes at once; the parents apart before a word follow from
     * the bits. */
    uint64_t w = 0, whole = n / 64;
    if (bytes && whole) {
        uint64_t apart = t->apart_before[whole - 1] +
                         (uint64_t)__builtin_popcountll(~t->chained[whole - 1]);
        if (!memcmp(t->chained, base->chained, whole * sizeof *t->chained) &&
            (!apart || !memcmp(t->apart, base->apart, apart * sizeof *t->apart)) &&
            !memcmp(t->ip_low, base->ip_low, whole * 64 * sizeof *t->ip_low) &&
            !memcmp(t->ip_span, base->ip_span, whole * 64))
            w = whole;
    }
    /* 64 nodes at a time: their parent bits, the parents apart, the ips */
    for (; w * 64 < n; w++) {
        uint64_t from = w * 64, to = n - from < 64 ? n : from + 64;
        uint64_t mask = to - from == 64 ? ~0ull : (1ull << (to - from)) - 1;
        uint64_t apart = (uint64_t)__builtin_popcountll(~t->chained[w] & mask);
        /* equal bits before this word: the same count of parents apart */
        if (((t->chained[w] ^ base->chained[w]) & mask) ||
            (apart && memcmp(t->apart + t->apart_before[w], base->apart + base->apart_before[w],
                             apart * sizeof *t->apart)) ||
            !same_ips(t, base, slot, shift, bytes, from, to)) {
            /* the first node of the word that differs */
            uint64_t k = from;
            for (; k < to; k++) {
                uint64_t p1, p2, ip1, ip2;
                vt_stack_nodes_get(t, k + 1, &p1, &ip1);
                vt_stack_nodes_get(base, k + 1, &p2, &ip2);
                if (p1 != p2 || ip1 != ip2 + (shift ? (uint64_t)shift[slot[k]] : 0))
                    break;
            }
            return k;
        }
    }
    return n;
}

bool vt_stack_nodes_rebase(struct vt_stack_nodes *t, const struct vt_stack_nodes *base, uint64_t m,
                           const uint16_t *slot, int64_t *shift)
{
    if (t->base || m > t->n || m > base->n)
        return false;
    /* The rest, nodes m + 1..n, into arrays of their own: the parent bits
     * moved down by m, the parents apart from the first of the rest's. */
    struct vt_stack_nodes own;
    vt_stack_nodes_init(&own);
    uint64_t rest = t->n - m;
    bool ok = !rest || (resize((void **)&own.chained, words(rest), sizeof *own.chained) &&
                        resize((void **)&own.apart_before, words(rest), sizeof *own.apart_before));
    if (rest && t->ip_wide)
        ok = ok && resize((void **)&own.ip_wide, rest, sizeof *own.ip_wide);
    else if (rest)
        ok = ok && resize((void **)&own.ip_low, rest, sizeof *own.ip_low) &&
             resize((void **)&own.ip_span, rest, sizeof *own.ip_span);
    uint64_t first_apart = 0;
    if (m < t->n) {
        uint64_t w = m / 64, below = (1ull << (m % 64)) - 1;
        first_apart = t->apart_before[w] + (uint64_t)__builtin_popcountll(~t->chained[w] & below);
    }
    size_t napart = rest ? t->napart - (size_t)first_apart : 0;
    if (ok && napart && !resize((void **)&own.apart, napart, sizeof *own.apart))
        ok = false;
    if (!ok) {
        vt_stack_nodes_free(&own);
        return false;
    }
    for (uint64_t j = 0, before = 0; j < rest; j += 64) {
        uint64_t k = m + j, s = k % 64;
        uint64_t bits = t->chained[k / 64] >> s;
        if (s && k / 64 + 1 < words(t->n))
            bits |= t->chained[k / 64 + 1] << (64 - s);
        uint64_t mask = rest - j < 64 ? (1ull << (rest - j)) - 1 : ~0ull;
        own.chained[j / 64] = bits & mask;
        own.apart_before[j / 64] = (uint32_t)before;
        before += (uint64_t)__builtin_popcountll(~bits & mask);
    }
    if (napart)
        memcpy(own.apart, t->apart + first_apart, napart * sizeof *own.apart);
    own.napart = own.apart_cap = napart;
    if (!rest) {
        /* nothing of its own */
    } else if (t->ip_wide) {
        memcpy(own.ip_wide, t->ip_wide + m, rest * sizeof *own.ip_wide);
    } else {
        memcpy(own.ip_low, t->ip_low + m, rest * sizeof *own.ip_low);
        memcpy(own.ip_span, t->ip_span + m, rest);
    }
    memcpy(own.spans, t->spans, sizeof own.spans);
    own.nspans = t->nspans;
    own.last_span = t->last_span;
    own.python = t->python;
    own.n = t->n;
    own.cap = rest;
    own.base = base;
    own.nbase = m;
    own.base_slot = slot;
    own.shift = shift;
    vt_stack_nodes_free(t);
    *t = own;
    return true;
}

void vt_stack_nodes_move_to(struct vt_stack_nodes *t, struct vt_stack_nodes *to)
{
    *to = *t;
    vt_stack_nodes_init(t);
    t->n = t->nbase = to->n;
    t->python = to->python;
    t->base = to;
}

void vt_stack_nodes_follow(struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                           const uint16_t *slot, int64_t *shift)
{
    vt_stack_nodes_free(t);
    t->base = base;
    t->base_slot = slot;
    t->shift = shift;
    t->following = true;
}

void vt_stack_nodes_follow_to(struct vt_stack_nodes *t, uint64_t j)
{
    const struct vt_stack_nodes *b = t->base;
    /* base's parents apart before node j + 1: those of the words before
     * its own, and the unchained among its word's nodes before it */
    uint64_t w = j / 64, below = (1ull << (j % 64)) - 1;
    t->base_apart = j == b->n ? b->napart
                              : b->apart_before[w] +
                                    (size_t)__builtin_popcountll(~b->chained[w] & below);
    t->n = t->nbase = j;
}

bool vt_stack_nodes_follow_shift(struct vt_stack_nodes *t, int64_t *shift)
{
    /* a node taken already was base's ip plus its slot's shift then */
    for (uint64_t k = 0; k < t->n; k++) {
        uint16_t s = t->base_slot[k];
        if ((t->shift ? t->shift[s] : 0) != (shift ? shift[s] : 0))
            return false;
    }
    free(t->shift);
    t->shift = shift;
    return true;
}

bool vt_stack_nodes_unfollow(struct vt_stack_nodes *t, uint64_t cap)
{
    struct vt_stack_nodes own;
    vt_stack_nodes_init(&own);
    if (!vt_stack_nodes_reserve(&own, cap > t->n ? cap : t->n + 1))
        return false;
    for (uint64_t id = 1; id <= t->n; id++) {
        uint64_t parent = 0, ip = 0;
        vt_stack_nodes_get(t, id, &parent, &ip);
        if (!vt_stack_nodes_add(&own, parent, ip)) {
            vt_stack_nodes_free(&own);
            return false;
        }
    }
    vt_stack_nodes_free(t); /* and the shift */
    *t = own;
    return true;
}

void vt_stack_nodes_follow_end(struct vt_stack_nodes *t)
{
    t->following = false;
}
