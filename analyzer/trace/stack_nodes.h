/*
 * A trace's stack nodes (id -> parent id, instruction pointer), kept in
 * about 5 bytes a node rather than 16: a job keeps every rank's nodes to
 * name its sites after its replay, and they were most of what a rank kept.
 *
 * Two regularities of the tracer's trie make it small, each with a way out
 * that costs only memory:
 *  - a node is defined right after its parent, save where a stack branches
 *    off (a bit a node says "my parent is the node before me"; the other
 *    parents are listed apart, found by counting the bits before);
 *  - the code of a process lies in few 4 GiB spans (an ip is its low 32 bits
 *    and the index of its high 32 bits in a table of at most 256; a trace
 *    with more spans has its ips kept whole from then on).
 *
 * Nodes are only appended (ids 1, 2, ...); a lookup costs a few loads.
 *
 * A finished table may give its first nodes up to another table that holds
 * the same ones (vt_stack_nodes_rebase): the ranks of a job run the same
 * code and define the same stacks, each at its own module bases, so one
 * table keeps them for all, and a rank keeps only where it differs.
 */
#ifndef VRAMTRACE_ANALYZER_TRACE_STACK_NODES_H
#define VRAMTRACE_ANALYZER_TRACE_STACK_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_STACK_NODE_SPANS 256

struct vt_stack_nodes {
    uint64_t n;              /* nodes: ids 1..n */
    uint64_t cap;            /* room in the per-node arrays */
    uint64_t *chained;       /* bit k: node k + 1's parent is node k */
    uint32_t *apart_before;  /* per 64 nodes: nodes before them with a parent apart */
    uint32_t *apart;         /* those parents, in id order */
    size_t napart, apart_cap;
    uint32_t *ip_low;        /* NULL once wide */
    uint8_t *ip_span;        /* index in spans[] of the ip's high 32 bits */
    uint64_t *ip_wide;       /* every ip whole, once the spans ran out */
    uint32_t spans[VT_STACK_NODE_SPANS];
    unsigned nspans, last_span;
    bool python;             /* some ip has the top bit set: a Python frame */
    /* Rebased (vt_stack_nodes_rebase): nodes 1..nbase are base's, each ip
     * plus shift[base_slot[k]] (no shift array: plus 0), and the arrays
     * above hold nodes nbase + 1..n at indices 0.. (cap counts them: such a
     * table takes no more nodes). */
    const struct vt_stack_nodes *base;
    uint64_t nbase;
    const uint16_t *base_slot;
    int64_t *shift;          /* owned */
    /* Following (vt_stack_nodes_follow): every node so far is base's, and
     * nodes still coming are compared with base's next one, not stored;
     * base_apart counts base's parents apart among them. */
    bool following;
    size_t base_apart;
};

void vt_stack_nodes_init(struct vt_stack_nodes *t);
void vt_stack_nodes_free(struct vt_stack_nodes *t);
/* Room for at least cap nodes (the per-node arrays grown to it); false when
 * out of memory, with the table as it was. */
bool vt_stack_nodes_reserve(struct vt_stack_nodes *t, uint64_t cap);
/* Appends node n + 1 (parent <= n, < 2^32; room reserved); false when out of
 * memory, with the table as it was. */
bool vt_stack_nodes_add_any(struct vt_stack_nodes *t, uint64_t parent, uint64_t ip);
static inline bool vt_stack_nodes_add(struct vt_stack_nodes *t, uint64_t parent, uint64_t ip)
{
    /* Most nodes: the parent just before, the ip in the span of the last,
     * inside a word of bits begun: a few stores where a rank defines
     * thousands. The span being known, so is whether it is Python's. */
    uint64_t k = t->n;
    if (parent == k && k < t->cap && k % 64 && t->ip_low && t->nspans &&
        t->spans[t->last_span] == (uint32_t)(ip >> 32)) {
        t->chained[k / 64] |= 1ull << (k % 64);
        t->ip_low[k] = (uint32_t)ip;
        t->ip_span[k] = (uint8_t)t->last_span;
        t->n = k + 1;
        return true;
    }
    return vt_stack_nodes_add_any(t, parent, ip);
}
/* Node id's parent and ip; false if there is no such node. */
bool vt_stack_nodes_get(const struct vt_stack_nodes *t, uint64_t id, uint64_t *parent,
                        uint64_t *ip);
/* Whether some node's ip is a Python frame (its top bit set, the trace
 * format's tag): without one, and without symbols, no frame of any stack has a
 * function's name. */
bool vt_stack_nodes_has_python(const struct vt_stack_nodes *t);
/* No more nodes will come: spare room goes (best effort). */
void vt_stack_nodes_trim(struct vt_stack_nodes *t);

/* How many first nodes of t are base's: the same parents, and each ip
 * base's plus shift[slot[k]] for node k + 1 (slot: one index a node of
 * base; shift NULL: plus 0). t and base are tables of their own (not
 * rebased). Parents compared 64 at a time, ips in a tight loop: it runs
 * once a rank over every node. */
uint64_t vt_stack_nodes_common(const struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                               const uint16_t *slot, const int64_t *shift);
/* t's first m nodes (m <= vt_stack_nodes_common(t, base, slot, shift))
 * become base's: t keeps the rest only, and shift, which it now owns;
 * base and slot must outlive t. The nodes t hands out are exactly the ones
 * it held. False when out of memory, with t as it was (shift still the
 * caller's). */
bool vt_stack_nodes_rebase(struct vt_stack_nodes *t, const struct vt_stack_nodes *base, uint64_t m,
                           const uint16_t *slot, int64_t *shift);
/* t (empty) follows base while it is filled: each node that is base's
 * next, base's ip plus shift[slot[k]] (shift NULL: plus 0; t owns it), is
 * taken as base's (vt_stack_nodes_follow_next), with nothing stored; the
 * first that is not ends it (vt_stack_nodes_unfollow). For the ranks of a
 * job, which define the nodes of a shared table before their first event:
 * a table that would be filled only to be dropped for base's is never
 * filled. base and slot must outlive t. */
void vt_stack_nodes_follow(struct vt_stack_nodes *t, const struct vt_stack_nodes *base,
                           const uint16_t *slot, int64_t *shift);
/* A following table's place in its base, held in registers while a run
 * of nodes is compared (a rank defines thousands before its first event):
 * vt_stack_follow_begin, vt_stack_follow_next for each node, then
 * vt_stack_follow_end before the table is used again. */
struct vt_stack_follow {
    const uint64_t *chained, *ip_wide;
    const uint32_t *apart, *ip_low, *spans;
    const uint8_t *ip_span;
    const int64_t *shift;
    const uint16_t *slot;
    uint64_t k, n;     /* the next node's index; base's nodes */
    size_t apart_i;    /* base's parents apart before node k */
    uint64_t python;   /* a node taken was a Python frame */
};

static inline void vt_stack_follow_begin(const struct vt_stack_nodes *t, struct vt_stack_follow *f)
{
    const struct vt_stack_nodes *b = t->base;
    *f = (struct vt_stack_follow){
        .chained = b->chained, .ip_wide = b->ip_wide, .apart = b->apart, .ip_low = b->ip_low,
        .spans = b->spans, .ip_span = b->ip_span, .shift = t->shift, .slot = t->base_slot,
        .k = t->n, .n = b->n, .apart_i = t->base_apart, .python = 0,
    };
}

/* Takes the next node if it is base's next one (true), else changes
 * nothing (false). */
static inline bool vt_stack_follow_next(struct vt_stack_follow *f, uint64_t parent, uint64_t ip)
{
    uint64_t k = f->k;
    if (k >= f->n)
        return false;
    uint64_t chained = f->chained[k / 64] >> (k % 64) & 1;
    uint64_t want_parent = k;
    if (!chained)
        want_parent = f->apart[f->apart_i];
    uint64_t want_ip = f->ip_wide ? f->ip_wide[k]
                                  : (uint64_t)f->spans[f->ip_span[k]] << 32 | f->ip_low[k];
    if (f->shift)
        want_ip += (uint64_t)f->shift[f->slot[k]];
    if (parent != want_parent || ip != want_ip)
        return false;
    f->apart_i += !chained;
    f->python |= ip;
    f->k = k + 1;
    return true;
}

static inline void vt_stack_follow_end(struct vt_stack_nodes *t, const struct vt_stack_follow *f)
{
    t->n = t->nbase = f->k;
    t->base_apart = f->apart_i;
    t->python |= f->python >> 63;
}

/* Following t: takes node n + 1 if it is base's next one (true), else
 * changes nothing (false). */
static inline bool vt_stack_nodes_follow_next(struct vt_stack_nodes *t, uint64_t parent,
                                              uint64_t ip)
{
    struct vt_stack_follow f;
    vt_stack_follow_begin(t, &f);
    bool taken = vt_stack_follow_next(&f, parent, ip);
    vt_stack_follow_end(t, &f);
    return taken;
}
/* Following t: base's nodes up to id j (> t->n, <= base's count) are
 * taken at once, as vt_stack_follow_next would take each; for a caller
 * that knows they are base's (the same bytes, no shift, no Python frame). */
void vt_stack_nodes_follow_to(struct vt_stack_nodes *t, uint64_t j);
/* Following t: shift (owned) replaces t's where no node taken so far lies
 * in a slot whose shift it changes (true); else nothing changes and the
 * caller keeps shift (false). For a module the trace recorded after t began
 * to follow. */
bool vt_stack_nodes_follow_shift(struct vt_stack_nodes *t, int64_t *shift);
/* Following t stops: its nodes go into arrays of its own with room for
 * cap nodes (at least one more than it has), and it takes nodes as any
 * table; false when out of memory, t as it was. */
bool vt_stack_nodes_unfollow(struct vt_stack_nodes *t, uint64_t cap);
/* Following t takes no more nodes: it stays rebased on base, wholly. */
void vt_stack_nodes_follow_end(struct vt_stack_nodes *t);

/* to (an empty table) takes t's nodes, and t is rebased on it wholly: it
 * hands out the same nodes, and to must outlive it. */
void vt_stack_nodes_move_to(struct vt_stack_nodes *t, struct vt_stack_nodes *to);
/* The nodes t keeps itself (not a base's). */
uint64_t vt_stack_nodes_own(const struct vt_stack_nodes *t);

#endif
