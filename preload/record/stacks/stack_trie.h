/*
 * Instruction-pointer trie (heaptrack's tracetree idea): every distinct call
 * stack becomes one node id, and stacks share their common outer frames.
 *
 * A node is an edge (parent, ip). Node 0 is the empty stack; node ids are
 * handed out 1, 2, 3... in order of creation, which is the order in which
 * the writer emits their VT_REC_STACK_NODE records. An event carries the id
 * of its innermost frame; following parents walks outwards to main().
 *
 * Only the writer thread touches a trie, so it has no lock.
 */
#ifndef VRAMTRACE_PRELOAD_STACK_TRIE_H
#define VRAMTRACE_PRELOAD_STACK_TRIE_H

#include <stddef.h>
#include <stdint.h>

struct vt_trie_slot;

struct vt_stack_trie {
    struct vt_trie_slot *slots; /* open addressing on (parent, ip) */
    size_t cap;                 /* power of two */
    uint64_t nodes;             /* ids 1..nodes exist */
};

/* Called for each node created, in id order (the writer emits it). */
typedef void (*vt_trie_new_node)(void *ctx, uint64_t id, uint64_t parent, uint64_t ip);

void vt_trie_init(struct vt_stack_trie *t);
void vt_trie_free(struct vt_stack_trie *t);

/* ips[0] is the innermost frame (as unw_backtrace returns them). Returns the
 * node id of the whole stack (0 for n == 0), or UINT64_MAX if memory ran
 * out (then no node was created for the missing suffix). */
uint64_t vt_trie_insert(struct vt_stack_trie *t, const uint64_t *ips, size_t n,
                        vt_trie_new_node on_new, void *ctx);

#endif
