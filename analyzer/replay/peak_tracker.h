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
 *   - a state (struct vt_peak_state) holds per-site bytes at the time
 *     it was taken and the ledger's sequence number (bumped by every
 *     change) of that time;
 *   - changed sites are appended to a log of (sequence number, site), in
 *     order; to bring a state to "now" (on a new maximum), walk the log
 *     back from its end while the entries are newer than the state, and
 *     copy those sites' current bytes (a site logged twice is copied twice,
 *     harmlessly). Sites not reached are unchanged since the state;
 *   - a change logs its site only if no state was taken since the site
 *     was last logged: otherwise that entry is newer than every state,
 *     so every walk reaches it already. Between two states a site is
 *     logged once however often it changes, and a change touches no other
 *     site (O(1), one test in the common case).
 *
 * The log would grow with the trace, so when it is full it is compacted:
 * only each site's latest entry stays, in order. It holds room for twice
 * the sites, so a compaction halves it at least and costs O(1) per change
 * amortized; a walk is never longer than the log.
 *
 * The walk costs at most the number of changes since the previous
 * state, which is at most the number of events since then: the whole pass stays
 * O(events) per state kept (the device peak plus one per phase name),
 * and memory is O(sites) per state, independent of trace length.
 * Phases use the same states: one per level of open phases, brought to
 * "now" when the ledger exceeds that level's maximum, and copied into a
 * phase's own record when it closes (replay_phases.c).
 */
#ifndef VRAMTRACE_ANALYZER_PEAK_TRACKER_H
#define VRAMTRACE_ANALYZER_PEAK_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VT_SITE_NONE UINT32_MAX /* no site */

struct vt_site {
    uint64_t stack, thread;   /* the site's key */
    uint64_t bytes, count;    /* live now */
    uint64_t logged_at;       /* sequence number of its latest log entry, 0: none */
};

/* A slot of the sites' index: a site's number and bits of its key's hash
 * (the key itself is in the site). */
struct vt_site_slot {
    uint32_t site;            /* VT_SITE_NONE: empty */
    uint32_t tag;             /* low bits of vt_site_hash */
};

/* One entry of the change log. */
struct vt_site_change {
    uint64_t seq;             /* ledger sequence number of the change */
    uint32_t site;
};

struct vt_peak_state {
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
    /* (stack, thread) -> site: open addressing, linear probing, at most
     * a quarter full (peak_tracker.c, index_fit). 8-byte slots (a pair
     * map's are 32) keep it small enough to stay cached beside the live
     * set: every allocation looks here. Sites are never removed, so there
     * is no deletion rule. */
    struct vt_site_slot *index;
    size_t index_cap;         /* power of two, or 0 */
    unsigned index_shift;     /* 64 - log2(index_cap): home = hash >> shift */
    struct vt_site_change *log; /* oldest .. newest change */
    size_t nlog, log_cap;     /* log_cap >= 2 * cap */
    uint64_t seq;             /* bumps at every change */
    uint64_t state_seq;       /* the newest taken_at of a state of these sites */
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
static inline long vt_sites_find_or_add(struct vt_ledger_sites *l, uint64_t stack,
                                        uint64_t thread);
static inline void vt_sites_change_at(struct vt_ledger_sites *l, uint32_t site,
                                      int64_t delta_bytes, int64_t delta_count);

/* A site known to be absent from the index: made (out of line: once per
 * site). */
long vt_sites_add(struct vt_ledger_sites *l, uint64_t stack, uint64_t thread);

/* Two multiplications: the top bits (the home slot) depend on every bit of
 * both; the low bits only filter. */
static inline uint64_t vt_site_hash(uint64_t stack, uint64_t thread)
{
    return stack * 0x9e3779b97f4a7c15ull ^ thread * 0xc2b2ae3d27d4eb4full;
}

static inline long vt_sites_find_or_add(struct vt_ledger_sites *l, uint64_t stack,
                                        uint64_t thread)
{
    if (l->index_cap) {
        uint64_t h = vt_site_hash(stack, thread);
        size_t mask = l->index_cap - 1;
        for (size_t i = (size_t)(h >> l->index_shift);; i = (i + 1) & mask) {
            struct vt_site_slot slot = l->index[i];
            if (slot.site == VT_SITE_NONE)
                break;
            if (slot.tag == (uint32_t)h && l->sites[slot.site].stack == stack &&
                l->sites[slot.site].thread == thread)
                return (long)slot.site;
        }
    }
    return vt_sites_add(l, stack, thread);
}

/* Keeps each site's latest log entry only (out of line: O(1) amortized). */
void vt_sites_compact_log(struct vt_ledger_sites *l);
/* The replay is over: the index, the change log and the spare room go (a
 * job keeps every rank's sites to report them, and these were half of
 * them). Only reading follows: no change, no state. */
void vt_sites_settle(struct vt_ledger_sites *l);

/* Inline: every event changes one site. */
static inline void vt_sites_change_at(struct vt_ledger_sites *l, uint32_t i, int64_t delta_bytes,
                                      int64_t delta_count)
{
    struct vt_site *s = &l->sites[i];
    /* The ledger's and the site's fields in turn, not each pair at once:
     * GCC otherwise loads and stores a pair as one vector on a free's
     * path, where an allocation's path stores the two one at a time, and
     * such a load cannot take its data from the two stores before it (it
     * waits for them to reach the cache). A store to the site between the
     * ledger's two loads keeps them apart (they may alias). */
    l->total_bytes += (uint64_t)delta_bytes;
    s->bytes += (uint64_t)delta_bytes;
    l->total_count += (uint64_t)delta_count;
    s->count += (uint64_t)delta_count;
    l->seq++;
    if (s->logged_at > l->state_seq)
        return; /* logged since the newest state: every walk reaches it */
    if (l->nlog == l->log_cap)
        vt_sites_compact_log(l);
    s->logged_at = l->seq;
    l->log[l->nlog++] = (struct vt_site_change){l->seq, i};
}

void vt_peak_state_init(struct vt_peak_state *s);
void vt_peak_state_free(struct vt_peak_state *s);
/* The replay is over and its ledger has nsites sites: the arrays' room
 * past them goes (they grow by doubling, and a job keeps every rank's
 * states: memory the kernel clears page by page). */
void vt_peak_state_settle(struct vt_peak_state *s, size_t nsites);
/* If the ledger's total exceeds the state's peak (or it has none yet),
 * records the new peak at time_ns and brings the per-site copy up to date.
 * Returns true if it was a new peak. */
bool vt_peak_state_offer(struct vt_peak_state *s, struct vt_ledger_sites *l,
                         uint64_t time_ns);
/* The same whatever the total: the state becomes the ledger now (its
 * "peak" the total now, at time_ns). False when out of memory (the older,
 * consistent copy is kept). */
bool vt_peak_state_take(struct vt_peak_state *s, struct vt_ledger_sites *l, uint64_t time_ns);
/* Makes dst the copy of src (both states of the ledger l, src taken
 * with vt_peak_state_offer): peak, time and per-site bytes at src's instant.
 * Only sites changed since the older of the two copies can differ, so this
 * walks those (as vt_peak_state_offer does), not every site. Returns false
 * when out of memory (dst is then unchanged). */
bool vt_peak_state_copy(struct vt_peak_state *dst, const struct vt_peak_state *src,
                        const struct vt_ledger_sites *l);
/* Whether vt_peak_state_offer would take a new peak now: inline, because most
 * allocations are not new peaks and the test is all they cost. */
static inline bool vt_peak_state_is_new_peak(const struct vt_peak_state *s,
                                             const struct vt_ledger_sites *l)
{
    return !s->has_peak || l->total_bytes > s->peak_bytes;
}

/* One site's bytes in a ranking. */
struct vt_site_bytes {
    uint64_t stack, thread, bytes, count;
};

/* The n largest sites of a state (or of the ledger now if s is NULL),
 * largest first; returns how many were written (sites with 0 bytes are
 * left out). */
size_t vt_sites_top(const struct vt_ledger_sites *l, const struct vt_peak_state *s,
                    struct vt_site_bytes *out, size_t n);

#endif
