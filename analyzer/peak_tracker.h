/*
 * Live bytes per allocation site, and what each site held at a peak.
 *
 * A ledger is one live set: one process, one device, one category (device
 * memory, managed, pinned host). It keeps, per site - a (stack node, thread)
 * pair - the bytes and the number of allocations live right now, and the
 * sum over all sites.
 *
 * The question a peak report answers is "which stacks held the memory AT the
 * peak instant" (heaptrack's peaktracker idea; its merged per-stack maxima
 * add up to more than the peak and are wrong). Copying every site at every
 * new maximum would cost O(sites) per allocation while memory grows. Instead:
 *
 *   - every site carries the sequence number of its last change, and the
 *     sites sit in one intrusive list ordered by that number (a change moves
 *     the site to the tail, O(1));
 *   - a snapshot (struct vt_peak_snapshot) holds per-site bytes at the time
 *     it was taken and the sequence number of that time;
 *   - to bring a snapshot to "now" (on a new maximum), walk the list from
 *     the tail while a site's last change is newer than the snapshot, and
 *     copy only those sites. Sites older than that are already right.
 *
 * The walk costs the number of sites changed since the previous snapshot,
 * which is at most the number of events since then: the whole pass stays
 * O(events) per snapshot kept (the device peak plus one per phase name),
 * and memory is O(sites) per snapshot, independent of trace length.
 * Phases use the same snapshots: one per level of open phases, brought to
 * "now" when the ledger exceeds that level's maximum, and copied into a
 * phase's own record when it closes (replay_phases.c).
 */
#ifndef VRAMTRACE_ANALYZER_PEAK_TRACKER_H
#define VRAMTRACE_ANALYZER_PEAK_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pair_map.h"

#define VT_SITE_NONE UINT32_MAX /* no site (end of the change list) */

struct vt_site {
    uint64_t stack, thread;   /* the site's key */
    uint64_t bytes, count;    /* live now */
    uint64_t last_change;     /* ledger sequence number */
    uint32_t prev, next;      /* change-order list, UINT32_MAX: none */
};

struct vt_peak_snapshot {
    uint64_t peak_bytes;      /* largest total seen (while tracked) */
    uint64_t peak_count;      /* live allocations then */
    uint64_t peak_time_ns;
    bool has_peak;
    uint64_t taken_at;        /* ledger sequence number of the copy */
    uint64_t *bytes, *count;  /* per site index, valid for [0, cap) */
    size_t cap;
};

struct vt_ledger_sites {
    struct vt_site *sites;
    uint32_t nsites, cap;
    struct vt_pair_map index; /* (stack, thread) -> site index */
    uint32_t head, tail;      /* oldest .. newest change */
    uint64_t seq;             /* bumps at every change */
    uint64_t total_bytes, total_count;
};

void vt_sites_init(struct vt_ledger_sites *l);
void vt_sites_free(struct vt_ledger_sites *l);
/* Adds (delta > 0) or removes bytes and allocations of a site. Returns the
 * site index, or -1 when out of memory. */
long vt_sites_change(struct vt_ledger_sites *l, uint64_t stack, uint64_t thread,
                     int64_t delta_bytes, int64_t delta_count);
/* The two halves of vt_sites_change, for a caller that remembers the index
 * (sites are never removed, so an index stays valid for the ledger's life):
 * the index of a site, created with nothing live if new (-1 when out of
 * memory), and the change of a site by index. */
long vt_sites_find_or_add(struct vt_ledger_sites *l, uint64_t stack, uint64_t thread);
static inline void vt_sites_change_at(struct vt_ledger_sites *l, uint32_t site,
                                      int64_t delta_bytes, int64_t delta_count);

/* Inline: every event changes one site. */
static inline void vt_sites_change_at(struct vt_ledger_sites *l, uint32_t i, int64_t delta_bytes,
                                      int64_t delta_count)
{
    struct vt_site *s = &l->sites[i];
    bool linked = s->last_change != 0; /* changed before: in the list */
    s->bytes += (uint64_t)delta_bytes;
    s->count += (uint64_t)delta_count;
    l->total_bytes += (uint64_t)delta_bytes;
    l->total_count += (uint64_t)delta_count;
    s->last_change = ++l->seq;
    if (l->tail == i)
        return; /* already the newest change */
    if (linked) { /* unlink */
        if (s->prev != VT_SITE_NONE)
            l->sites[s->prev].next = s->next;
        else
            l->head = s->next;
        /* not the tail, so a next exists */
        l->sites[s->next].prev = s->prev;
    }
    /* append at the tail */
    s->prev = l->tail;
    s->next = VT_SITE_NONE;
    if (l->tail != VT_SITE_NONE)
        l->sites[l->tail].next = i;
    else
        l->head = i;
    l->tail = i;
}

void vt_snapshot_init(struct vt_peak_snapshot *s);
void vt_snapshot_free(struct vt_peak_snapshot *s);
/* If the ledger's total exceeds the snapshot's peak (or it has none yet),
 * records the new peak at time_ns and brings the per-site copy up to date.
 * Returns true if it was a new peak. */
bool vt_snapshot_offer(struct vt_peak_snapshot *s, const struct vt_ledger_sites *l,
                       uint64_t time_ns);
/* Makes dst the copy of src (both snapshots of the ledger l, src taken
 * with vt_snapshot_offer): peak, time and per-site bytes at src's instant.
 * Only sites changed since the older of the two copies can differ, so this
 * walks those (as vt_snapshot_offer does), not every site. Returns false
 * when out of memory (dst is then unchanged). */
bool vt_snapshot_copy(struct vt_peak_snapshot *dst, const struct vt_peak_snapshot *src,
                      const struct vt_ledger_sites *l);
/* Whether vt_snapshot_offer would take a new peak now: inline, because most
 * allocations are not new peaks and the test is all they cost. */
static inline bool vt_snapshot_is_new_peak(const struct vt_peak_snapshot *s,
                                           const struct vt_ledger_sites *l)
{
    return !s->has_peak || l->total_bytes > s->peak_bytes;
}

/* One site's bytes in a ranking. */
struct vt_site_bytes {
    uint64_t stack, thread, bytes, count;
};

/* The n largest sites of a snapshot (or of the live state if s is NULL),
 * largest first; returns how many were written (sites with 0 bytes are
 * left out). */
size_t vt_sites_top(const struct vt_ledger_sites *l, const struct vt_peak_snapshot *s,
                    struct vt_site_bytes *out, size_t n);

#endif
