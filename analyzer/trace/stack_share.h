/*
 * Stack node tables shared by the traces of one analysis: the ranks of a
 * job run the same code and define the same stacks in the same order, so
 * after its group a rank hands its table's common first nodes to a table
 * the share keeps once, and keeps only the rest (stack_nodes.h, rebased
 * tables). Without it each of a job's ranks kept its own copy of the same
 * nodes: most of what a rank kept after its replay.
 *
 * Module-relative: each rank maps its libraries at bases of its own
 * (ASLR), so a node is common when its parent is the same and its ip the
 * same offset in the same module (the same path, build-id and size; ips in
 * no module, and Python frames, which name the rank's own code records,
 * must be equal). Which nodes are common is checked node by node against
 * the rank's own table, so a rank that diverges midway, loads a module
 * late or maps one elsewhere keeps what differs: every node a table hands
 * out afterwards is the one it read.
 *
 * The tables kept are the first ranks' own, moved (a rank whose rest would
 * be a large part of its nodes gives its table instead, up to a few), so
 * sharing keeps no node twice. Thread-safe: ranks of groups replayed side
 * by side offer their tables at once.
 */
#ifndef VRAMTRACE_ANALYZER_TRACE_STACK_SHARE_H
#define VRAMTRACE_ANALYZER_TRACE_STACK_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "stack_nodes.h"
#include "trace_reader.h"

struct vt_stack_share;

/* NULL when out of memory (nothing is shared then). */
struct vt_stack_share *vt_stack_share_new(void);
/* Only after every table rebased on it is freed. */
void vt_stack_share_free(struct vt_stack_share *s);

/* t: a trace's finished table (no more nodes come), mods[0..nmods) the
 * trace's modules (every record, unloaded ones too). Its common first
 * nodes become the share's, or t becomes one of the share's tables; out of
 * memory, t stays as it was. */
void vt_stack_share_offer(struct vt_stack_share *s, struct vt_stack_nodes *t,
                          const struct vt_module_info *const *mods, size_t nmods);

/* t (an empty table) follows the share's table that most ranks took so
 * far (stack_nodes.h: vt_stack_nodes_follow), its modules found among
 * mods[0..nmods), the trace's modules so far, as an offer finds them; false
 * (t as it was) when the share has no table yet, or out of memory. Offered
 * at its end, a table that followed to the end is the share's already. */
bool vt_stack_share_follow(struct vt_stack_share *s, struct vt_stack_nodes *t,
                           const struct vt_module_info *const *mods, size_t nmods);
/* The records a trace writes for the nodes of base, a table of s that a
 * table follows (each a type byte and two varints, as the tracer encodes
 * them, back to back; deltas: as format version 7 does, each ip a
 * difference to the node before's), and where each begins: at[k] for node
 * k + 1, at[n] their end. A rank whose next bytes are these from at[k] on
 * defines base's nodes from k + 1 on, with their ips unshifted (deltas:
 * if its last node's ip was base's node k's). Made at the first ask, in
 * its encoding; false where they could not be (out of memory, too many
 * bytes) or were made in the other. */
bool vt_stack_share_records(struct vt_stack_share *s, const struct vt_stack_nodes *base,
                            bool deltas, const uint8_t **records, const uint32_t **at);
/* t follows a table of the share: its modules found again among
 * mods[0..nmods), which the trace has recorded more of since; true if
 * that changed t's shifts (vt_stack_nodes_follow_shift). */
bool vt_stack_share_refollow(struct vt_stack_nodes *t, const struct vt_module_info *const *mods,
                             size_t nmods);

#endif
