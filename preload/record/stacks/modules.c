/* The module map. See modules.h. */
#define _GNU_SOURCE
#include "modules.h"

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vt_modules_init(struct vt_module_map *map)
{
    memset(map, 0, sizeof *map);
    map->next_id = 1;
}

void vt_modules_free(struct vt_module_map *map)
{
    for (size_t i = 0; i < map->count; i++)
        free(map->mods[i].path);
    free(map->mods);
    memset(map, 0, sizeof *map);
}

void vt_main_exe_path(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    buf[n > 0 ? (size_t)n : 0] = '\0';
}

static void extent(const struct dl_phdr_info *info, uint64_t *start, uint64_t *end)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr;
        uint64_t e = s + ph->p_memsz;
        if (s < lo)
            lo = s;
        if (e > hi)
            hi = e;
    }
    *start = lo == UINT64_MAX ? 0 : lo;
    *end = hi;
}

/* The NT_GNU_BUILD_ID note, read from the mapped PT_NOTE segments. */
static size_t build_id(const struct dl_phdr_info *info, uint8_t *out)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            size_t namesz = (nh->n_namesz + 3) & ~(size_t)3;
            size_t descsz = (nh->n_descsz + 3) & ~(size_t)3;
            const uint8_t *name = p + sizeof *nh;
            const uint8_t *desc = name + namesz;
            if (desc + descsz > end)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(name, "GNU", 4)) {
                size_t n = nh->n_descsz < VT_BUILD_ID_MAX ? nh->n_descsz : VT_BUILD_ID_MAX;
                memcpy(out, desc, n);
                return n;
            }
            p = desc + descsz;
        }
    }
    return 0;
}

struct scan {
    struct vt_module *found;
    size_t count, cap;
    unsigned long long adds, subs;
    bool oom;
};

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    struct scan *s = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        s->adds = info->dlpi_adds;
        s->subs = info->dlpi_subs;
    }
    if (s->count == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct vt_module *f = realloc(s->found, cap * sizeof *f);
        if (!f) {
            s->oom = true;
            return 1;
        }
        s->found = f;
        s->cap = cap;
    }
    struct vt_module *m = &s->found[s->count];
    memset(m, 0, sizeof *m);
    m->load_bias = info->dlpi_addr;
    extent(info, &m->start, &m->end);
    m->build_id_len = build_id(info, m->build_id);
    if (info->dlpi_name && info->dlpi_name[0]) {
        m->path = strdup(info->dlpi_name);
    } else if (s->count == 0) {
        /* the first object with an empty name is the main program */
        char exe[4096];
        vt_main_exe_path(exe, sizeof exe);
        m->path = strdup(exe);
    } else {
        m->path = strdup("");
    }
    if (!m->path) {
        s->oom = true;
        return 1;
    }
    s->count++;
    return 0;
}

static int counters_only(struct dl_phdr_info *info, size_t size, void *data)
{
    struct scan *s = data;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        s->adds = info->dlpi_adds;
        s->subs = info->dlpi_subs;
    }
    return 1; /* the counters are the same in every entry: stop at once */
}

static struct vt_module *find(struct vt_module_map *map, const struct vt_module *m)
{
    for (size_t i = 0; i < map->count; i++) {
        struct vt_module *k = &map->mods[i];
        if (k->present && k->load_bias == m->load_bias && k->start == m->start &&
            !strcmp(k->path, m->path))
            return k;
    }
    return NULL;
}

int vt_modules_refresh(struct vt_module_map *map, bool force, vt_module_event ev, void *ctx)
{
    struct scan s = {0};
    if (map->scanned && !force) {
        dl_iterate_phdr(counters_only, &s);
        if (s.adds == map->adds && s.subs == map->subs)
            return 0;
        memset(&s, 0, sizeof s);
    }
    dl_iterate_phdr(collect, &s);
    int rc = 0;
    if (s.oom) {
        rc = -1;
        goto out;
    }
    /* Room for every new module up front, so the update cannot fail half-way. */
    if (map->count + s.count > map->cap) {
        size_t cap = map->cap ? map->cap : 64;
        while (cap < map->count + s.count)
            cap *= 2;
        struct vt_module *mods = realloc(map->mods, cap * sizeof *mods);
        if (!mods) {
            rc = -1;
            goto out;
        }
        map->mods = mods;
        map->cap = cap;
    }
    bool *matched = calloc(map->count + s.count + 1, sizeof *matched);
    if (!matched) {
        rc = -1;
        goto out;
    }
    size_t old_count = map->count;
    for (size_t i = 0; i < s.count; i++) {
        struct vt_module *k = find(map, &s.found[i]);
        if (k) {
            matched[k - map->mods] = true;
            continue;
        }
        struct vt_module *m = &map->mods[map->count++];
        *m = s.found[i];
        s.found[i].path = NULL; /* moved */
        m->id = map->next_id++;
        m->present = true;
        if (ev)
            ev(ctx, m, true);
    }
    for (size_t i = 0; i < old_count; i++) {
        struct vt_module *k = &map->mods[i];
        if (k->present && !matched[i]) {
            k->present = false;
            if (ev)
                ev(ctx, k, false);
        }
    }
    free(matched);
    map->adds = s.adds;
    map->subs = s.subs;
    map->scanned = true;
out:
    for (size_t i = 0; i < s.count; i++)
        free(s.found[i].path);
    free(s.found);
    return rc;
}

struct extent_query {
    uint64_t addr, start, end;
    bool found, is_main, first;
};

static int find_extent(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct extent_query *q = data;
    bool first = q->first;
    q->first = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t s = info->dlpi_addr + ph->p_vaddr;
        if (q->addr >= s && q->addr < s + ph->p_memsz) {
            extent(info, &q->start, &q->end);
            q->found = true;
            q->is_main = first && (!info->dlpi_name || !info->dlpi_name[0]);
            return 1;
        }
    }
    return 0;
}

int vt_modules_extent_of(const void *addr, uint64_t *start, uint64_t *end, bool *is_main)
{
    struct extent_query q = {.addr = (uint64_t)(uintptr_t)addr, .first = true};
    dl_iterate_phdr(find_extent, &q);
    if (!q.found)
        return -1;
    *start = q.start;
    *end = q.end;
    *is_main = q.is_main;
    return 0;
}
