/*
 * What grows step over step. A phase that opens again and again (forward,
 * optimizer, an NVTX iteration) closes each time with the ledger's bytes
 * live; in a steady loop, once warm, they are the same at every closing.
 * Where they rise at VT_GROWTH_MIN_RISES closings in a row up to the last,
 * the loop keeps memory it should not: the growth per opening, from which
 * opening, and the sites whose live bytes grew between the first and the
 * last closing of that run (phase_growth.c says how they are kept cheaply).
 *
 * Driver bytes: with a caching allocator the trace sees segments, which
 * grow in steps the tensors do not (a 1 MiB-per-step leak adds a 20 MiB
 * segment every 20 steps and is seen only if it rises at every closing).
 */
#ifndef VRAMTRACE_REPLAY_PHASE_GROWTH_H
#define VRAMTRACE_REPLAY_PHASE_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "peak_tracker.h"

#define VT_GROWTH_MIN_RISES 3
/* The latest closings whose times are kept: the tensors' growth is judged
 * at them from PyTorch's allocator history (report/torch/), whose own
 * window is bounded too. */
#define VT_GROWTH_TIMES 1024

struct vt_growth {
    uint64_t closings;        /* closings seen */
    uint64_t last_bytes;      /* the ledger's total at the latest closing */
    uint64_t rises;           /* closings in a row, up to the latest, each above the one before */
    uint64_t run_start;       /* the closing those rises count from (1 = the first) */
    uint64_t run_start_bytes;
    uint64_t *start_sites;    /* each site's live bytes at the run's start */
    uint64_t *last_sites;     /* ... at the latest closing (kept once rises >= MIN) */
    uint32_t nstart_sites, nlast_sites;
    size_t start_cap, last_cap;
    bool sites_dropped;       /* out of the copies' budget or memory: no sites */
    uint64_t *close_ns;       /* the latest closings' times, a ring of VT_GROWTH_TIMES (NULL:
                               * out of memory) */
};

/* The per-ledger budget of site copies (words), so that a phase closed a
 * million times over a thousand sites costs what a report may cost. */
#define VT_GROWTH_COPY_BUDGET (64ull << 20)

/* A closing of the phase; *copied counts the ledger's copies so far (past
 * the budget, or out of memory, the sites are dropped, the figures kept). */
void vt_growth_close(struct vt_growth *g, const struct vt_ledger_sites *sites, uint64_t *copied,
                     uint64_t time_ns);
void vt_growth_free(struct vt_growth *g);

struct vt_growth_result {
    uint64_t per_opening;     /* bytes, averaged over the run */
    uint64_t from_opening;    /* the first opening that ended higher (1 = the first) */
    uint64_t openings;        /* openings in the run that rose */
    uint64_t closings;        /* all closings of the phase */
    uint64_t first_bytes, last_bytes; /* live at the run's start and at its last closing */
};
/* False when the phase does not grow (fewer than VT_GROWTH_MIN_RISES rises
 * in a row up to its last closing). */
bool vt_growth_of(const struct vt_growth *g, struct vt_growth_result *r);

/* The times of the latest closings, oldest first, into out (room for
 * VT_GROWTH_TIMES); returns how many. */
size_t vt_growth_times(const struct vt_growth *g, uint64_t *out);

/* The rule on a series of totals at closings, as the replay applies it
 * (vt_growth_of): for totals the trace does not see, such as the tensors
 * PyTorch's allocator holds. */
bool vt_growth_of_series(const uint64_t *totals, size_t n, struct vt_growth_result *r);

struct vt_growth_site {
    uint32_t site;            /* index in the ledger's sites */
    uint64_t per_opening;     /* bytes its live bytes grew per opening of the run */
};
/* The sites that grew over the run, most first; at most n. 0 when the
 * phase does not grow or its sites were dropped. */
size_t vt_growth_sites(const struct vt_growth *g, struct vt_growth_site *out, size_t n);

#endif
