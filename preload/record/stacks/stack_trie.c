/* Instruction-pointer trie. See stack_trie.h. */
#include "stack_trie.h"

#include <stdlib.h>
#include <string.h>

struct vt_trie_slot {
    uint64_t parent;
    uint64_t ip;
    uint64_t id; /* 0: empty slot */
};

void vt_trie_init(struct vt_stack_trie *t)
{
    memset(t, 0, sizeof *t);
}

void vt_trie_free(struct vt_stack_trie *t)
{
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static size_t hash_edge(uint64_t parent, uint64_t ip)
{
    uint64_t h = ip * 0x9e3779b97f4a7c15ull ^ (parent + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h ^ (h >> 29));
}

static struct vt_trie_slot *find_slot(struct vt_trie_slot *slots, size_t cap,
                                      uint64_t parent, uint64_t ip)
{
    size_t i = hash_edge(parent, ip) & (cap - 1);
    for (;;) {
        struct vt_trie_slot *s = &slots[i];
        if (!s->id || (s->parent == parent && s->ip == ip))
            return s;
        i = (i + 1) & (cap - 1);
    }
}

static int grow(struct vt_stack_trie *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    struct vt_trie_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->cap; i++)
        if (t->slots[i].id)
            *find_slot(slots, cap, t->slots[i].parent, t->slots[i].ip) = t->slots[i];
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

uint64_t vt_trie_insert(struct vt_stack_trie *t, const uint64_t *ips, size_t n,
                        vt_trie_new_node on_new, void *ctx)
{
    uint64_t parent = 0;
    for (size_t i = n; i-- > 0;) { /* outermost frame first */
        /* keep the load factor under 1/2 so probes stay short */
        if ((t->nodes + 1) * 2 > t->cap && grow(t))
            return UINT64_MAX;
        struct vt_trie_slot *s = find_slot(t->slots, t->cap, parent, ips[i]);
        if (!s->id) {
            s->parent = parent;
            s->ip = ips[i];
            s->id = ++t->nodes;
            if (on_new)
                on_new(ctx, s->id, parent, ips[i]);
        }
        parent = s->id;
    }
    return parent;
}
