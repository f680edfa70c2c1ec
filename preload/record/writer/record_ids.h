/*
 * The ids a trace's records refer to - threads, api names, interned
 * strings, stack nodes, modules, Python code objects - each defined in the
 * trace (its own record, through the encoder) before the first record that
 * uses it. The writer asks for an id; this file writes the definition when
 * the id is new, so the writer only ever encodes records that use ids.
 * Writer thread only.
 */
#ifndef VRAMTRACE_PRELOAD_RECORD_IDS_H
#define VRAMTRACE_PRELOAD_RECORD_IDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "modules.h"
#include "stack_trie.h"
#include "string_table.h"
#include "trace_encoder.h"

struct vt_stack_cache_slot;

struct vt_record_ids {
    struct vt_encoder *enc; /* where definitions are written */
    struct vt_stack_trie trie;
    struct vt_stack_cache_slot *stack_cache; /* NULL: none (no memory) */
    struct vt_string_table strings;
    struct vt_module_map modules;
    const char *(*api_name)(unsigned api); /* NULL: none known */
    uint8_t *api_defined;                  /* by api id: its name is written */
    size_t api_cap;
    uint64_t last_thread_id;
};

/* Empty tables writing into enc; api_name names api ids (NULL:
 * "api#<id>"). */
void vt_ids_init(struct vt_record_ids *ids, struct vt_encoder *enc,
                 const char *(*api_name)(unsigned api));
void vt_ids_free(struct vt_record_ids *ids);
/* In a forked child: the tables are the parent's and may be mid-update,
 * so they are dropped unfreed (a small leak) rather than touched. */
void vt_ids_forget(struct vt_record_ids *ids);

/* Writes a thread record (its name: name_len bytes, maybe none) for the
 * thread whose id is *id; 0 there takes a new id first. A thread named
 * again keeps its id. */
void vt_ids_name_thread(struct vt_record_ids *ids, uint64_t *id, uint64_t os_tid,
                        const char *name, size_t name_len);
/* The api id, its name written before its first use (0 stays 0: none). */
uint64_t vt_ids_api(struct vt_record_ids *ids, uint64_t api);
/* The id of a string, 0 when !present, or when the table is out of
 * memory. */
uint64_t vt_ids_string(struct vt_record_ids *ids, const char *text, size_t len, bool present);
/* The trie node of a stack of n frames (0 if the trie ran out of memory).
 * With python_frames (VT_RAW_PY_FRAMES) the stack holds the thread's
 * Python frames (python_codes.h), turned into ids of this file first. */
uint64_t vt_ids_stack(struct vt_record_ids *ids, const uint64_t *ips, size_t n,
                      bool python_frames);
/* Re-reads the module map when force, or when it may have changed, and
 * writes the loads and unloads found. */
void vt_ids_refresh_modules(struct vt_record_ids *ids, bool force);

#endif
