/*
 * `vramtrace export`: a trace's allocations in the files other viewers
 * open (docs/user/REPORT.md, "Exports and diff"):
 *
 *   perfetto     Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing):
 *                a counter track per process and device, phases as slices,
 *                failures and peaks as instant events (export_perfetto.c)
 *   memory-viz   a PyTorch memory snapshot pickle for pytorch.org/memory_viz,
 *                each device allocation its own segment and block
 *                (export_memviz.c)
 *   folded       "frame;frame;... bytes" lines of the live set at one instant,
 *                for flamegraph.pl, inferno and speedscope (export_folded.c)
 *
 * Every allocation's begin and end is the replay's live set's (its on_live
 * hook), so the figures are the report's.
 */
#ifndef VRAMTRACE_EXPORT_EXPORT_H
#define VRAMTRACE_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ledger.h"
#include "symbolize.h"

#define VT_EXPORT_FORMATS(X)                                                    \
    X(PERFETTO, "perfetto", vt_export_perfetto, "Chrome trace-event JSON for ui.perfetto.dev") \
    X(MEMORY_VIZ, "memory-viz", vt_export_memviz, "a PyTorch memory snapshot for memory_viz") \
    X(FOLDED, "folded", vt_export_folded, "folded stacks of the live set for flame graphs")

enum vt_export_format {
#define AS_ENUM(id, name, fn, help) VT_EXPORT_##id,
    VT_EXPORT_FORMATS(AS_ENUM)
#undef AS_ENUM
    VT_EXPORT_FORMAT_COUNT_
};

/* The format named s; false if none is. */
bool vt_export_format_parse(const char *s, enum vt_export_format *out);
const char *vt_export_format_name(enum vt_export_format f);
const char *vt_export_format_help(enum vt_export_format f);

/* Which instant `folded` shows. */
enum vt_export_at_kind { VT_AT_PEAK, VT_AT_OOM, VT_AT_TIME };

struct vt_export_options {
    enum vt_export_at_kind at;
    uint64_t oom;            /* VT_AT_OOM: the Nth failed allocation, from 1 */
    uint64_t time_ns;        /* VT_AT_TIME: since the process started (as the report counts) */
    const char *phase;       /* folded: the live set at this phase's peak */
    bool has_device;
    int64_t device;
    bool has_pid;
    uint64_t pid;
    bool all;                /* everything: no cap, no downsampling */
    uint64_t max_entries;    /* memory-viz: the latest N trace entries (0: the default) */
    bool has_since, has_until;
    uint64_t since_ns, until_ns; /* memory-viz: the window, since the process started */
    bool until_at;           /* memory-viz: the window ends at `at` (peak or oom:N) */
    struct vt_symbolize_options sym;
};

/* A ledger folded and memory-viz write: device memory, of --device's
 * ordinal when given. */
static inline bool vt_export_ledger_selected(const struct vt_export_options *opt,
                                             const struct vt_ledger *l)
{
    return l->category == VT_CAT_DEVICE && (!opt->has_device || l->device == opt->device);
}

/* An export in two halves around the run stage's one read, which the
 * command starts (cli/cmd_export.c): the plan says what the read must
 * observe for it, and the file is written from the finished result; no
 * exporter reads a trace itself. */
struct vt_run_observers;
struct vt_run_result;
struct vt_export;

/* The plan of an export of the traces: obs filled with the observers the
 * read must run for it, *said with where the read's messages go (err, or
 * the exporter's own file when it says them only if the read fails). NULL
 * after a message on err. */
struct vt_export *vt_export_plan(enum vt_export_format f, char *const *traces, size_t n,
                                 const struct vt_export_options *opt,
                                 struct vt_run_observers *obs, FILE **said, FILE *err);
/* Writes the export to out from the read's result. Returns 0, or 2 after
 * a message on err (an input that cannot be read, a filter that selects
 * nothing). An input without device memory is not an error: the file is
 * valid and empty, and a note says so on err. */
int vt_export_write(struct vt_export *x, const struct vt_run_result *run, FILE *out, FILE *err);
void vt_export_free(struct vt_export *x);
/* Whether the read gave every one of the traces, in their order, read to
 * its end: what an export that writes each trace's notes needs. */
bool vt_export_read_all(const struct vt_run_result *run, char *const *traces, size_t n);

/* Each format's halves, behind vt_export_plan (export.c); state is the
 * format's own. */
#define AS_DECL(id, name, fn, help)                                                         \
    void *fn##_plan(char *const *traces, size_t n, const struct vt_export_options *opt,    \
                    struct vt_run_observers *obs, FILE **said, FILE *err);                 \
    int fn##_write(void *state, const struct vt_run_result *run, FILE *out, FILE *err);   \
    void fn##_free(void *state);
VT_EXPORT_FORMATS(AS_DECL)
#undef AS_DECL

#endif
