/*
 * One trace replayed for an exporter: the replay of analyzer/replay/ (its
 * live set decides when an allocation begins and ends, through its on_live
 * hook), fed record by record so that an exporter also sees each record
 * (phases, marks) and its time, and the helpers every exporter needs:
 * symbolized frames of a stack, a frame's one-line label, a process's name.
 */
#ifndef VRAMTRACE_EXPORT_EXPORT_TRACE_H
#define VRAMTRACE_EXPORT_EXPORT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export_input.h" /* vt_export_frame_label */
#include "replay.h"
#include "symbolize.h"
#include "trace_reader.h"

struct vt_export_trace;

struct vt_export_hooks {
    /* Before the replay sees rec; false stops the replay there (rec unseen). */
    bool (*on_record)(void *ctx, struct vt_export_trace *t, const struct vt_record *rec);
    /* An allocation began or ended (replay.h, vt_live_fn), at t->now_ns. */
    void (*on_live)(void *ctx, struct vt_export_trace *t, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins);
    /* A device allocation failed (replay.h, vt_oom_fn); diagnosed only when
     * the replay ends. */
    void (*on_oom)(void *ctx, struct vt_export_trace *t, struct vt_ledger *l, struct vt_oom *o);
    void *ctx;
};

struct vt_export_trace {
    const char *path;
    struct vt_reader *reader;
    struct vt_replay replay;
    bool replay_open;
    uint64_t now_ns;              /* time of the record being fed */
    struct vt_export_hooks hooks;
    const struct vt_symbolize_options *sym_opt;
    struct vt_symbolizer *sym;    /* made on first use */
};

/* Opens path and replays it to its end (or until on_record says stop),
 * then finishes the replay (failures diagnosed). Returns 0, or 2 with
 * "vramtrace: FILE: byte N: reason" on err. Free with vt_export_trace_free
 * either way. */
int vt_export_trace_run(struct vt_export_trace *t, const char *path,
                        const struct vt_export_hooks *hooks,
                        const struct vt_symbolize_options *sym, FILE *err);
void vt_export_trace_free(struct vt_export_trace *t);

/* The frames of a stack of the exporter's trace (vt_stack_frames; its
 * symbolizer made on first use); returns how many fn saw. */
size_t vt_export_frames(struct vt_export_trace *t, uint64_t stack, vt_frame_fn fn,
                        void *ctx);
/* A stack of an exporter's trace, walked as stack_where.h walks one. */
struct vt_export_stack {
    struct vt_export_trace *t;
    uint64_t stack;
};
size_t vt_export_stack_walk(void *src, vt_frame_fn fn, void *ctx);
/* The name every view gives the site of a stack (stack_where.h,
 * vt_stack_site_frame): "grow_kv_cache (train.c:175)"; NULL if none. */
const char *vt_export_site_frame(struct vt_export_trace *t, uint64_t stack, char *buf, size_t n);

/* The process's pid (0 if the trace has no process record) and rank
 * (vt_process_rank; -1 if none). */
uint64_t vt_export_pid(const struct vt_reader *r);
long vt_export_rank(const struct vt_reader *r);
/* "train_eval_phases (pid 5662, rank 0, host node1)": how exports name a
 * process. */
const char *vt_export_process_name(const struct vt_export_trace *t, char *buf, size_t n);
#endif
