/*
 * The module map: every loaded object with its path, load bias, mapped
 * extent and GNU build-id, so that stacks can be symbolized offline.
 *
 * Read with dl_iterate_phdr, which takes the loader's lock: callers must
 * hold no tracer lock (memray deadlocked on that lock order). Only the
 * writer thread keeps a map, so the map itself has no lock.
 */
#ifndef VRAMTRACE_PRELOAD_MODULES_H
#define VRAMTRACE_PRELOAD_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vramtrace/trace_format.h"

struct vt_module {
    uint64_t id; /* id in the trace (1, 2, ...) */
    uint64_t load_bias;
    uint64_t start, end;
    char *path;
    uint8_t build_id[VT_BUILD_ID_MAX];
    size_t build_id_len;
    bool present; /* seen in the latest scan */
};

struct vt_module_map {
    struct vt_module *mods;
    size_t count, cap;
    uint64_t next_id;
    unsigned long long adds, subs; /* loader counters at the latest scan */
    bool scanned;
};

/* Called for each module that appeared (loaded) or went away (!loaded). */
typedef void (*vt_module_event)(void *ctx, const struct vt_module *m, bool loaded);

void vt_modules_init(struct vt_module_map *map);
void vt_modules_free(struct vt_module_map *map);

/* Re-reads the loaded objects if the loader's add/sub counters moved (or
 * always with force) and reports the differences. Returns -1 if memory ran
 * out (the map is then unchanged). */
int vt_modules_refresh(struct vt_module_map *map, bool force, vt_module_event ev, void *ctx);

/* The mapped extent of the object holding addr; *is_main tells whether it
 * is the main executable. Returns 0, or -1 if addr is in no object. */
int vt_modules_extent_of(const void *addr, uint64_t *start, uint64_t *end, bool *is_main);

/* The main executable's path (readlink /proc/self/exe) into buf. */
void vt_main_exe_path(char *buf, size_t len);

#endif
