/* Stack node tables shared by an analysis's traces; see stack_share.h. */
#define _GNU_SOURCE
#include "stack_share.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pair_map.h"

/* Tables kept: each rank compares its nodes with every one, so a few. A
 * job's ranks mostly define one table; a rank or two (the one that logs,
 * checkpoints or evaluates) may diverge early and start another. */
#define VT_SHARED_TABLES 8
/* Slots of the modules of a shared table's nodes: 0 for a node in no module
 * (or a Python frame), so at most this many modules are told apart. */
#define VT_SLOTS_MAX UINT16_MAX

struct shared_module {
    uint64_t start, end;
    size_t record;           /* its index among the trace's module records */
    char *path;
    uint8_t *build_id;
    size_t build_id_len;
};

struct shared_table {
    struct vt_stack_nodes nodes; /* the first rank's, moved; first: see table_of */
    uint64_t ranks;              /* ranks rebased on it: the one a rank follows */
    uint16_t *slot;              /* per node: its module + 1, 0 none */
    struct shared_module *modules; /* that rank's, by start */
    size_t nmodules;
    /* vt_stack_share_records: made once, under the share's lock */
    uint8_t *records;
    uint32_t *record_at;
    bool records_made;
    bool records_deltas; /* made as version 7 writes them */
};

struct vt_stack_share {
    pthread_mutex_t lock;
    struct shared_table *tables[VT_SHARED_TABLES];
    size_t ntables;
};

struct vt_stack_share *vt_stack_share_new(void)
{
    struct vt_stack_share *s = calloc(1, sizeof *s);
    if (s)
        pthread_mutex_init(&s->lock, NULL);
    return s;
}

static void table_free(struct shared_table *e)
{
    if (!e)
        return;
    vt_stack_nodes_free(&e->nodes);
    free(e->slot);
    for (size_t i = 0; i < e->nmodules; i++) {
        free(e->modules[i].path);
        free(e->modules[i].build_id);
    }
    free(e->modules);
    free(e->records);
    free(e->record_at);
    free(e);
}

void vt_stack_share_free(struct vt_stack_share *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->ntables; i++)
        table_free(s->tables[i]);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static uint64_t path_hash(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; p && *p; p++)
        h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
    return h;
}

static int by_start(const void *a, const void *b)
{
    const struct shared_module *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The slot of ip's module: the last by start that begins at or below the
 * address called from (a return address points after its call). */
static uint16_t slot_of(const struct shared_table *e, uint64_t ip)
{
    if (!ip || vt_ip_is_py_frame(ip))
        return 0;
    uint64_t pc = ip - 1;
    size_t lo = 0, hi = e->nmodules; /* the first that starts above pc */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->modules[mid].start <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && pc < e->modules[lo - 1].end && lo <= VT_SLOTS_MAX ? (uint16_t)lo : 0;
}

/* A table of the share made of t's modules (t itself is moved in once
 * there is room: table_publish); NULL when out of memory. */
static struct shared_table *table_new(const struct vt_stack_nodes *t,
                                      const struct vt_module_info *const *mods, size_t nmods)
{
    struct shared_table *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->modules = calloc(nmods ? nmods : 1, sizeof *e->modules);
    e->slot = malloc((size_t)(t->n ? t->n : 1) * sizeof *e->slot);
    if (!e->modules || !e->slot) {
        table_free(e);
        return NULL;
    }
    for (size_t i = 0; i < nmods; i++) {
        struct shared_module *m = &e->modules[e->nmodules++];
        m->start = mods[i]->start;
        m->end = mods[i]->end;
        m->record = i;
        m->path = strdup(mods[i]->path ? mods[i]->path : "");
        m->build_id_len = mods[i]->build_id_len;
        m->build_id = malloc(m->build_id_len ? m->build_id_len : 1);
        if (!m->path || !m->build_id) {
            table_free(e);
            return NULL;
        }
        if (m->build_id_len)
            memcpy(m->build_id, mods[i]->build_id, m->build_id_len);
    }
    qsort(e->modules, e->nmodules, sizeof *e->modules, by_start);
    for (uint64_t id = 1; id <= t->n; id++) {
        uint64_t parent, ip;
        vt_stack_nodes_get(t, id, &parent, &ip);
        e->slot[id - 1] = slot_of(e, ip);
    }
    return e;
}

static bool same_module(const struct shared_module *m, const struct vt_module_info *o)
{
    return o->end - o->start == m->end - m->start && o->build_id_len == m->build_id_len &&
           !memcmp(o->build_id, m->build_id, m->build_id_len) &&
           !strcmp(o->path ? o->path : "", m->path);
}

/* The rank's modules by (path, size): found for each of a table's. */
struct module_finder {
    const struct vt_module_info *const *mods;
    size_t nmods;
    struct vt_pair_map by_key; /* (path hash, size) -> index + 1, built when first asked */
    bool built, out_of_memory;
};

static const struct vt_module_info *find_module(struct module_finder *f,
                                                const struct shared_module *m)
{
    /* Ranks of one program load their libraries in the same order. */
    if (m->record < f->nmods && same_module(m, f->mods[m->record]))
        return f->mods[m->record];
    if (!f->built) {
        f->built = true;
        for (size_t i = f->nmods; i-- > 0;) /* the first record wins */
            if (!vt_pair_map_put(&f->by_key, path_hash(f->mods[i]->path),
                                 f->mods[i]->end - f->mods[i]->start, i + 1))
                f->out_of_memory = true;
    }
    uint64_t *hit = vt_pair_map_get(&f->by_key, path_hash(m->path), m->end - m->start);
    return hit && same_module(m, f->mods[*hit - 1]) ? f->mods[*hit - 1] : NULL;
}

/* Per slot of e, how far the rank mapped that module from where e's rank
 * did (0 where it has no such module: its ips there must be equal). *out
 * NULL: all 0. False when out of memory. */
static bool shifts_for(const struct shared_table *e, struct module_finder *f, int64_t **out)
{
    *out = NULL;
    int64_t *shift = NULL;
    for (size_t i = 0; i < e->nmodules && i < VT_SLOTS_MAX; i++) {
        const struct vt_module_info *o = find_module(f, &e->modules[i]);
        if (!o || o->start == e->modules[i].start)
            continue;
        if (!shift && !(shift = calloc(e->nmodules + 1, sizeof *shift)))
            return false;
        shift[i + 1] = (int64_t)(o->start - e->modules[i].start);
    }
    *out = shift; /* a module not found for want of memory: its nodes compare as they are */
    return true;
}

/* Moves t into e and makes e one of the share's tables, if there is room;
 * false (t as it was) if not. */
static bool table_publish(struct vt_stack_share *s, struct shared_table *e, struct vt_stack_nodes *t)
{
    pthread_mutex_lock(&s->lock);
    bool room = s->ntables < VT_SHARED_TABLES;
    if (room) {
        vt_stack_nodes_move_to(t, &e->nodes);
        s->tables[s->ntables++] = e;
    }
    pthread_mutex_unlock(&s->lock);
    return room;
}

/* The shared table whose nodes base is. */
static struct shared_table *table_of(const struct vt_stack_nodes *base)
{
    return (struct shared_table *)((char *)base - offsetof(struct shared_table, nodes));
}

static void count_rank(struct vt_stack_share *s, struct shared_table *e)
{
    pthread_mutex_lock(&s->lock);
    e->ranks++;
    pthread_mutex_unlock(&s->lock);
}

/* The shifts of t's modules for e's, found among mods; NULL and false: out
 * of memory. */
static bool shifts_among(const struct shared_table *e, const struct vt_module_info *const *mods,
                         size_t nmods, int64_t **shift)
{
    struct module_finder finder = {.mods = mods, .nmods = nmods};
    vt_pair_map_init(&finder.by_key);
    bool ok = shifts_for(e, &finder, shift) && !finder.out_of_memory;
    vt_pair_map_free(&finder.by_key);
    if (!ok) {
        free(*shift);
        *shift = NULL;
    }
    return ok;
}

bool vt_stack_share_follow(struct vt_stack_share *s, struct vt_stack_nodes *t,
                           const struct vt_module_info *const *mods, size_t nmods)
{
    if (!s || t->n || t->base)
        return false;
    struct shared_table *e = NULL;
    pthread_mutex_lock(&s->lock);
    for (size_t i = 0; i < s->ntables; i++)
        if (!e || s->tables[i]->ranks > e->ranks)
            e = s->tables[i];
    pthread_mutex_unlock(&s->lock);
    int64_t *shift;
    if (!e || !shifts_among(e, mods, nmods, &shift))
        return false;
    vt_stack_nodes_follow(t, &e->nodes, e->slot, shift);
    return true;
}

/* e's nodes as a trace's records (vt_stack_share_records), as format
 * version 7 writes them (deltas) or as the versions before; nothing when
 * out of memory or when their offsets would not fit in 32 bits. */
static void make_records(struct shared_table *e, bool deltas)
{
    const uint64_t n = e->nodes.n, longest = 1 + 2 * VT_UVARINT_MAX;
    if (n >= UINT32_MAX / longest)
        return;
    uint8_t *b = malloc((size_t)(n * longest + 1));
    uint32_t *at = malloc((size_t)(n + 1) * sizeof *at);
    if (!b || !at) {
        free(b);
        free(at);
        return;
    }
    size_t len = 0;
    uint64_t last_ip = 0;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t parent = 0, ip = 0;
        vt_stack_nodes_get(&e->nodes, k + 1, &parent, &ip);
        at[k] = (uint32_t)len;
        b[len++] = VT_REC_STACK_NODE;
        len += vt_put_uvarint(b + len, deltas ? k + 1 - parent : parent);
        len += vt_put_uvarint(b + len, deltas ? vt_zigzag((int64_t)(ip - last_ip)) : ip);
        last_ip = ip;
    }
    at[n] = (uint32_t)len;
    uint8_t *fit = realloc(b, len + 1);
    e->records = fit ? fit : b;
    e->record_at = at;
}

bool vt_stack_share_records(struct vt_stack_share *s, const struct vt_stack_nodes *base,
                            bool deltas, const uint8_t **records, const uint32_t **at)
{
    struct shared_table *e = table_of(base);
    pthread_mutex_lock(&s->lock);
    if (!e->records_made) {
        e->records_made = true;
        e->records_deltas = deltas;
        make_records(e, deltas);
    }
    pthread_mutex_unlock(&s->lock);
    *records = e->records;
    *at = e->record_at;
    return e->records != NULL && e->records_deltas == deltas;
}

bool vt_stack_share_refollow(struct vt_stack_nodes *t, const struct vt_module_info *const *mods,
                             size_t nmods)
{
    int64_t *shift;
    if (!t->following || !shifts_among(table_of(t->base), mods, nmods, &shift))
        return false;
    if (vt_stack_nodes_follow_shift(t, shift))
        return true;
    free(shift);
    return false;
}

void vt_stack_share_offer(struct vt_stack_share *s, struct vt_stack_nodes *t,
                          const struct vt_module_info *const *mods, size_t nmods)
{
    if (s && t->following) { /* every node of its was the table's */
        vt_stack_nodes_follow_end(t);
        count_rank(s, table_of(t->base));
        return;
    }
    if (!s || !t->n || t->base)
        return;
    struct shared_table *tables[VT_SHARED_TABLES];
    pthread_mutex_lock(&s->lock);
    size_t ntables = s->ntables;
    memcpy(tables, s->tables, ntables * sizeof *tables);
    pthread_mutex_unlock(&s->lock);

    struct module_finder finder = {.mods = mods, .nmods = nmods};
    vt_pair_map_init(&finder.by_key);
    struct shared_table *best = NULL;
    int64_t *best_shift = NULL;
    uint64_t best_m = 0;
    for (size_t i = 0; i < ntables && best_m < t->n; i++) {
        int64_t *shift;
        if (!shifts_for(tables[i], &finder, &shift))
            continue;
        uint64_t m = vt_stack_nodes_common(t, &tables[i]->nodes, tables[i]->slot, shift);
        if (m > best_m) {
            free(best_shift);
            best = tables[i];
            best_shift = shift;
            best_m = m;
        } else {
            free(shift);
        }
    }
    vt_pair_map_free(&finder.by_key);

    /* Much of its own: its table is shared for the ranks like it, while
     * there is room. */
    uint64_t rest = t->n - best_m;
    if (rest > t->n / 4 && ntables < VT_SHARED_TABLES) {
        struct shared_table *e = table_new(t, mods, nmods);
        if (e && table_publish(s, e, t)) {
            free(best_shift);
            return;
        }
        table_free(e);
    }
    if (!best_m || !vt_stack_nodes_rebase(t, &best->nodes, best_m, best->slot, best_shift))
        free(best_shift);
    else
        count_rank(s, best);
}
