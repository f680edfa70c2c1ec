/*
 * A process's memory over time, downsampled to a screen's resolution while
 * the replay runs: the series the HTML report draws
 * (docs/internals/REPORT_INTERNALS.md, "HTML report").
 *
 * The time from the process's first to its last event is cut into
 * `buckets` equal columns (about one pixel each), and every ledger's total
 * is downsampled onto them by common/column_series.h: each column that saw
 * a change keeps two points, its maximum (the first instant the ledger's
 * total reached it, with the bytes of each tracked site then) and its last
 * value (the total and tracked sites after its last change). Nothing
 * between two changes is lost that a pixel could show, and the maximum is
 * exact: the column holding the ledger's peak has the peak's bytes at the
 * peak's time, split by site as the report's peak breakdown splits it. The
 * tracked sites are chosen before it is fed (the top sites at the peak,
 * known once the read is over: timeline_notes.h); the rest of a total is
 * "other".
 *
 * Phases: for each name, the spans during which a range of it was open,
 * spans less than a column apart merged (so at most about `buckets` spans
 * a name, however many steps a run has).
 *
 * Fed with the replay's changes and ranges (replay.h's on_live and
 * on_range, as noted during the read): O(tracked
 * sites) per memory event (at most 8 counters copied); memory
 * O(buckets x (ledgers + phase names)), never O(trace length).
 */
#ifndef VRAMTRACE_RUN_TIMELINE_H
#define VRAMTRACE_RUN_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "column_series.h"
#include "replay.h"

#define VT_TIMELINE_SITES VT_COLUMN_PARTS_MAX /* tracked sites a ledger, at most */
#define VT_TIMELINE_BUCKETS_DEFAULT 1600
#define VT_TIMELINE_BUCKETS_MAX 100000

struct vt_timeline_site {
    uint64_t stack, thread;
};

struct vt_timeline_series {
    int64_t device;
    enum vt_category category;
    struct vt_timeline_site sites[VT_TIMELINE_SITES];
    size_t nsites;
    /* the points, in time order: cols.t[i] (trace ns), cols.total[i], and
     * the bytes of each tracked site then, cols.parts[i * nsites + k] */
    struct vt_column_series cols;
    /* while it runs */
    uint8_t *slot_of;        /* per site index of the ledger: 0 not looked up, 1 untracked, 2 + k */
    size_t nslot_of;
    uint64_t cur[VT_TIMELINE_SITES];
};

struct vt_timeline_phase {
    uint64_t name;           /* string id of the process's trace */
    uint64_t open;           /* ranges of it open now */
    uint64_t *spans;         /* start, end pairs (ns) */
    size_t nspans, cap;
};

struct vt_timeline {
    struct vt_column_grid grid; /* t0, t1: the process's first and last event (ns) */
    struct vt_timeline_series *series;
    size_t nseries;
    long series_of[VT_LEDGERS_MAX]; /* per ledger index of the replay: series + 1, 0 unknown, -1 none */
    struct vt_timeline_phase *phases;
    size_t nphases, phases_cap;
    bool out_of_memory;
};

/* An empty timeline over [t0, t1] in `buckets` columns. */
void vt_timeline_init(struct vt_timeline *tl, uint64_t t0, uint64_t t1, size_t buckets);
void vt_timeline_free(struct vt_timeline *tl);
/* Follows the ledger (device, category), tracking the given sites (at
 * most VT_TIMELINE_SITES; more are ignored). Before the replay. */
bool vt_timeline_add_series(struct vt_timeline *tl, int64_t device, enum vt_category category,
                            const struct vt_timeline_site *sites, size_t nsites);
/* A change of a ledger's total: an allocation of a site began or ended. */
struct vt_timeline_change {
    uint64_t time_ns;        /* the process's latest time then */
    uint64_t size;
    uint64_t total_bytes;    /* the ledger's total after it */
    uint32_t site;           /* index in the ledger's sites */
    bool begins;
};
/* Feeds one change of ledger l (index li of its replay's ledgers). */
void vt_timeline_change(struct vt_timeline *tl, const struct vt_ledger *l, size_t li,
                        const struct vt_timeline_change *c);
/* Feeds a range of a phase name opening (opens) or closing at time_ns. */
void vt_timeline_range(struct vt_timeline *tl, uint64_t name, uint64_t time_ns, bool opens);
/* Ends the last columns and the phases still open (at t1). */
void vt_timeline_finish(struct vt_timeline *tl);

#endif
