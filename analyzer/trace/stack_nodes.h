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
/* to (an empty table) takes t's nodes, and t is rebased on it wholly: it
 * hands out the same nodes, and to must outlive it. */
void vt_stack_nodes_move_to(struct vt_stack_nodes *t, struct vt_stack_nodes *to);
/* The nodes t keeps itself (not a base's). */
uint64_t vt_stack_nodes_own(const struct vt_stack_nodes *t);

#endif
