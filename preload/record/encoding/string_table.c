/* Interned strings. See string_table.h. */
#include "string_table.h"

#include <stdlib.h>
#include <string.h>

struct vt_string_slot {
    char *text; /* NULL: empty slot */
    size_t len;
    uint64_t hash;
    uint64_t id;
};

void vt_strings_init(struct vt_string_table *t)
{
    memset(t, 0, sizeof *t);
}

void vt_strings_free(struct vt_string_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        free(t->slots[i].text);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static struct vt_string_slot *find_slot(struct vt_string_slot *slots, size_t cap, uint64_t h,
                                        const char *s, size_t len)
{
    size_t i = (size_t)h & (cap - 1);
    for (;;) {
        struct vt_string_slot *e = &slots[i];
        if (!e->text || (e->hash == h && e->len == len && !memcmp(e->text, s, len)))
            return e;
        i = (i + 1) & (cap - 1);
    }
}

static int grow(struct vt_string_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 64;
    struct vt_string_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        struct vt_string_slot *e = &t->slots[i];
        if (e->text)
            *find_slot(slots, cap, e->hash, e->text, e->len) = *e;
    }
    free(t->slots);
    t->slots = slots;
    t->cap = cap;
    return 0;
}

uint64_t vt_strings_intern(struct vt_string_table *t, const char *text, size_t len, int *is_new)
{
    *is_new = 0;
    if ((t->count + 1) * 2 > t->cap && grow(t))
        return UINT64_MAX;
    uint64_t h = hash_bytes(text, len);
    struct vt_string_slot *e = find_slot(t->slots, t->cap, h, text, len);
    if (e->text)
        return e->id;
    char *copy = malloc(len + 1);
    if (!copy)
        return UINT64_MAX;
    memcpy(copy, text, len);
    copy[len] = '\0';
    e->text = copy;
    e->len = len;
    e->hash = h;
    e->id = ++t->count;
    *is_new = 1;
    return e->id;
}
