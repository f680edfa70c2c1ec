/*
 * Ids defined before first use. See record_ids.h.
 */
#include "record_ids.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "python_codes.h"
#include "raw_event.h" /* VT_MAX_STACK_DEPTH */

/* Recently seen stacks -> their trie node. Most events repeat a stack seen
 * a moment ago (a training loop's few sites); a hit costs a hash and a
 * compare instead of a walk down the trie, one probe per frame, which was
 * half the writer thread's instructions at 32 frames (docs/internals/PERFORMANCE.md,
 * "Whole process"). Direct-mapped; a slot holds a stack and the node the
 * trie gave it, and the trie never forgets a node, so a hit is exact. */
#define STACK_CACHE_SLOTS 512
#define STACK_CACHE_DEPTH 64 /* deeper stacks always walk the trie */
struct vt_stack_cache_slot {
    uint64_t node; /* 0: empty */
    uint64_t hash;
    size_t n;
    uint64_t ips[STACK_CACHE_DEPTH];
};

void vt_ids_init(struct vt_record_ids *ids, struct vt_encoder *enc,
                 const char *(*api_name)(unsigned api))
{
    ids->enc = enc;
    ids->api_name = api_name;
    ids->api_defined = NULL;
    ids->api_cap = 0;
    ids->last_thread_id = 0;
    vt_trie_init(&ids->trie);
    ids->stack_cache = calloc(STACK_CACHE_SLOTS, sizeof *ids->stack_cache); /* NULL: no cache */
    vt_py_codes_reset();
    vt_strings_init(&ids->strings);
    vt_modules_init(&ids->modules);
}

void vt_ids_free(struct vt_record_ids *ids)
{
    vt_trie_free(&ids->trie);
    free(ids->stack_cache);
    ids->stack_cache = NULL;
    vt_strings_free(&ids->strings);
    vt_modules_free(&ids->modules);
    free(ids->api_defined);
    ids->api_defined = NULL;
    ids->api_cap = 0;
}

void vt_ids_forget(struct vt_record_ids *ids)
{
    memset(ids, 0, sizeof *ids);
}

static void define_module(void *ctx, const struct vt_module *m, bool loaded)
{
    struct vt_record_ids *ids = ctx;
    if (loaded)
        vt_encode_module(ids->enc, m->id, m->load_bias, m->start, m->end, m->path,
                         m->build_id, m->build_id_len);
    else
        vt_encode_module_unload(ids->enc, m->id);
}

void vt_ids_refresh_modules(struct vt_record_ids *ids, bool force)
{
    vt_modules_refresh(&ids->modules, force, define_module, ids);
}

static void define_stack_node(void *ctx, uint64_t id, uint64_t parent, uint64_t ip)
{
    struct vt_record_ids *ids = ctx;
    (void)id; /* ids follow the order of the records */
    vt_encode_stack_node(ids->enc, parent, ip);
}

static uint64_t stack_node(struct vt_record_ids *ids, const uint64_t *ips, size_t n)
{
    struct vt_stack_cache_slot *c = NULL;
    uint64_t h = n;
    if (ids->stack_cache && n <= STACK_CACHE_DEPTH) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ ips[i]) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 29;
        c = &ids->stack_cache[h & (STACK_CACHE_SLOTS - 1)];
        if (c->node && c->hash == h && c->n == n && !memcmp(c->ips, ips, n * sizeof *ips))
            return c->node;
    }
    uint64_t node = vt_trie_insert(&ids->trie, ips, n, define_stack_node, ids);
    if (node == UINT64_MAX)
        return 0;
    if (c && node) {
        c->node = node;
        c->hash = h;
        c->n = n;
        memcpy(c->ips, ips, n * sizeof *ips);
    }
    return node;
}

uint64_t vt_ids_stack(struct vt_record_ids *ids, const uint64_t *ips, size_t n,
                      bool python_frames)
{
    if (!python_frames)
        return stack_node(ids, ips, n);
    uint64_t py_ips[VT_MAX_STACK_DEPTH]; /* Python frames: ids of this file */
    return stack_node(ids, vt_py_codes_prepare(ids->enc, ips, n, py_ips), n);
}

uint64_t vt_ids_api(struct vt_record_ids *ids, uint64_t id)
{
    if (id == 0)
        return 0;
    if (id >= ids->api_cap) {
        size_t cap = ids->api_cap ? ids->api_cap : 256;
        while (cap <= id)
            cap *= 2;
        uint8_t *a = realloc(ids->api_defined, cap);
        if (!a)
            return id; /* cannot remember: name it again next time */
        memset(a + ids->api_cap, 0, cap - ids->api_cap);
        ids->api_defined = a;
        ids->api_cap = cap;
    }
    if (ids->api_cap > id && !ids->api_defined[id]) {
        const char *name = ids->api_name ? ids->api_name((unsigned)id) : NULL;
        char fallback[32];
        if (!name) {
            snprintf(fallback, sizeof fallback, "api#%llu", (unsigned long long)id);
            name = fallback;
        }
        vt_encode_api(ids->enc, id, name);
        ids->api_defined[id] = 1;
    }
    return id;
}

uint64_t vt_ids_string(struct vt_record_ids *ids, const char *text, size_t len, bool present)
{
    if (!present)
        return 0;
    int is_new;
    uint64_t id = vt_strings_intern(&ids->strings, text, len, &is_new);
    if (id == UINT64_MAX)
        return 0;
    if (is_new)
        vt_encode_string(ids->enc, text, len);
    return id;
}

void vt_ids_name_thread(struct vt_record_ids *ids, uint64_t *id, uint64_t os_tid,
                        const char *name, size_t name_len)
{
    if (!*id)
        *id = ++ids->last_thread_id;
    vt_encode_thread(ids->enc, *id, os_tid, name, name_len);
}
