/*
 * Replaying one process's trace: the live set, ledgers, phases and
 * out-of-memory diagnosis, in one streaming pass over its records.
 *
 * Live set: by the live-set rule the tracer's line at exit follows too
 * (live_rule.h: allocations, retained handles, replacements, frees across
 * kinds of a category, VMM mappings, failed calls), each allocation with
 * its size, stack and thread.
 * Live bytes are summed per ledger = (device, category) where category is
 * vt_kind_category(kind): device memory (plain, VMM physical handles,
 * arrays, graph memory), managed, pinned host. Address reservations,
 * mappings and IPC count in no ledger; a context of measured cost counts in
 * its device's (contexts.h).
 *
 * Memory use is O(live allocations + distinct sites x states), never
 * O(trace length).
 *
 * Phases: NVTX push/pop (per thread and domain, nested), start/end ranges
 * (by range id, may end on another thread) and vramtrace_phase_*. For each
 * phase name and ledger: the largest total while at least one range of that
 * name was open (the total at the moment it opened counts), when, and a
 * per-site state at that instant (see peak_tracker.h).
 *
 * A name is open from the range that opens it when none was open (its
 * "mark") until the last of its ranges ends. Its peak over that interval is
 * the largest total since its mark: a "max since mark", kept per ledger by
 * struct vt_phase_level (replay.c explains it), so that an allocation costs
 * one comparison however many phases are open, and a phase opening or
 * closing costs O(ledgers) plus a binary search. Phase records are found
 * through an index (name -> record), never by scanning.
 *
 * Ledgers: at most VT_LEDGERS_MAX (device, category) pairs per process;
 * memory events of further ones are counted (ledger_overflow_events), not
 * replayed: opening a phase visits every ledger, so their number must stay
 * bounded whatever device ordinals a file names.
 *
 * Out of memory: a failed ALLOC (result != 0) records the request, the
 * driver's free/total captured right after it, the bytes this process held
 * on the device by kind and by site, and then watches the same ledger for
 * VT_OOM_FLUSH_WINDOW_NS: frees in that window are the caching allocator
 * releasing its cache (PyTorch frees every unsplit cached segment and
 * retries once); an allocation of the same size on the same thread is the
 * retry. A failed retry is recorded as a failure of its own that says so
 * (retry_of_previous, retries): the report folds such a chain into one
 * request.
 * The verdict (vt_oom_verdict_of) is documented in verdict.c and docs/user/REPORT.md.
 * Contexts (contexts.h): what creating each cost (the tracer's estimate,
 * else NVML's figure less the process's allocations, else not measured);
 * the live contexts of the failing device separate this process's
 * context from the other processes' memory.
 */
#ifndef VRAMTRACE_ANALYZER_REPLAY_H
#define VRAMTRACE_ANALYZER_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "allocator_samples.h"
#include "contexts.h"
#include "ledger.h"
#include "live_rule.h"
#include "pair_map.h"
#include "parts.h"
#include "peak_tracker.h"
#include "replay_phases.h"
#include "trace_reader.h"

#define VT_OOM_FLUSH_WINDOW_NS 1000000000ull /* 1 s: PyTorch retries at once */
#define VT_OOM_TOP 8      /* sites kept per failure */
#define VT_OOM_OTHERS 8   /* other traced processes named per failure */
#define VT_OOM_MAX 4096   /* failures kept per ledger (more are counted) */
#define VT_MARKS_MAX 256
#define VT_LEDGERS_MAX 128 /* (device, category) pairs: 42 devices x 3 */

enum vt_verdict {             /* docs/user/REPORT.md, "Verdicts": the first row that holds */
    VT_VERDICT_UNKNOWN = 0,      /* the driver's free/total were not available */
    VT_VERDICT_LARGER_THAN_DEVICE, /* the request alone exceeds the device */
    VT_VERDICT_FRAGMENTED,       /* enough was free, not in one piece */
    VT_VERDICT_CONTENDED,        /* others hold enough that without them it fits */
    VT_VERDICT_OVERSIZED,        /* the request exceeds all this process holds */
    VT_VERDICT_EXHAUSTED,        /* this process holds the memory */
    /* Decided by the report alone (it needs the asking library's frames):
     * PyTorch's cache held what a request from outside it lacked. */
    VT_VERDICT_STARVED_BY_CACHE,
};
const char *vt_verdict_name(enum vt_verdict v);

enum vt_retry {
    VT_RETRY_NOT_SEEN = 0,   /* no allocation of that size followed in the window */
    VT_RETRY_SUCCEEDED,
    VT_RETRY_FAILED,
};
const char *vt_retry_name(enum vt_retry r);

struct vt_oom {
    uint64_t time_ns;
    uint64_t requested_bytes;
    uint64_t free_bytes, total_bytes;  /* as the driver said after the failure */
    bool driver_info;                  /* free/total were captured */
    uint64_t process_bytes;            /* this ledger's live bytes then, its contexts apart */
    uint64_t kind_bytes[VT_KIND_COUNT_];
    uint64_t outside_bytes;            /* total - free - process (if driver_info) */
    /* this process's live contexts on the device then */
    uint64_t context_bytes;            /* sum of their measured sizes */
    uint32_t contexts, contexts_unmeasured;
    bool retry_of_previous;            /* the failed retry of the previous failure */
    uint32_t retries;                  /* failed retries folded into this request */
    /* other traced processes on the same GPU then, largest first (the GPU
     * merge fills it, analysis.c) */
    struct vt_oom_other {
        uint32_t input;                /* index in the analysis */
        uint64_t bytes;
    } others[VT_OOM_OTHERS];
    size_t nothers;
    /* PyTorch's caching allocator at its latest sample before the failure
     * (allocator_samples.h; torch_known false: none) */
    bool torch_known;
    uint64_t torch_allocated, torch_reserved;
    /* the diagnosis, made when the replay ends (vt_oom_diagnose) */
    bool cached_known;                 /* a retry followed: the flush is known */
    uint64_t cached_bytes;             /* freed between the failure and its retry */
    bool context_known;                /* every live context was measured */
    uint64_t other_bytes;              /* other processes (+ the context if !context_known) */
    enum vt_verdict verdict;
    uint8_t kind;
    int64_t device;
    uint64_t stack, thread, api, label, result;
    /* The phases open at the failure (string ids, 0: none): the innermost
     * (the thread's innermost pushed range, else the process's range
     * opened last) and the outermost (the process's range open longest). */
    uint64_t phase, outer_phase;
    /* what followed */
    uint64_t released_bytes, released_count; /* frees in the window */
    enum vt_retry retry;
    struct vt_site_bytes top[VT_OOM_TOP];
    size_t ntop;
};

struct vt_mark {
    uint64_t time_ns, name, thread;
    uint64_t domain;       /* string id, 0: the default domain */
    uint64_t device_bytes; /* sum of this process's device ledgers then */
};


struct vt_replay;
/* Called after the total of a device-category ledger not yet in the GPU
 * merge (l->gpu.now NULL) changed. */
typedef void (*vt_ledger_change_fn)(void *ctx, struct vt_replay *rp, struct vt_ledger *l,
                                    uint64_t old_total, uint64_t time_ns);
/* Called when a change of a merged ledger took its GPU's total (already
 * updated) above its peak. */
typedef void (*vt_device_peak_fn)(void *ctx, struct vt_replay *rp, struct vt_ledger *l,
                                  uint64_t time_ns);
/* Called when an allocation of a ledger begins (begins) or ends, by the
 * live set's rules above: the allocation's kind, key, size and site. Lets
 * a consumer (the allocator model) follow the live set instead of keeping
 * rules of its own. Not called for allocations the analyzer could not
 * count (out of memory). */
typedef void (*vt_live_fn)(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                           const struct vt_live *e, bool begins);
/* Called when a device allocation failed (o is new in l->ooms). */
typedef void (*vt_oom_fn)(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o);
/* Called when a range (NVTX push or start, vramtrace_phase_push) of a phase
 * name opens (opens) or closes, at time_ns: each range, so a name is open
 * while more ranges of it opened than closed. Not on the hot path: ranges
 * are rare next to memory events. */
typedef void (*vt_range_fn)(void *ctx, struct vt_replay *rp, uint64_t name, uint64_t time_ns,
                            bool opens);
/* Called with each record other than a memory event (definitions, ranges,
 * marks, the process record), before the replay takes it: lets an
 * observer that writes records of its own (an exporter) see them during
 * the one read. Not on the hot path. */
typedef void (*vt_record_fn)(void *ctx, struct vt_replay *rp, const struct vt_record *rec);

struct vt_replay {
    const struct vt_reader *reader; /* names and tables */
    struct vt_live_rule live;       /* what is live, by the shared rule (live_rule.h) */
    size_t live_room_dropped;       /* the live set's room when vt_replay_drop_live freed it */
    size_t live_prefetch_slots;     /* a live set of this many slots or more has its
                                     * lookups fetched ahead (vt_replay_read_in_turns) */
    bool live_sparse_later;         /* the live set turns sparse once its events
                                     * outnumber its slots (vt_replay_read_in_turns) */

    struct vt_ledger *ledgers;
    size_t nledgers, ledgers_cap;
    size_t last_ledger;              /* where the previous lookup found one */
    struct vt_pair_map ledger_index; /* (device, category) -> index in ledgers */
    uint64_t ledger_overflow_events; /* memory events past VT_LEDGERS_MAX ledgers */

    struct vt_pair_map phase_stacks; /* (thread|domain<<32, depth) -> name; depth UINT64_MAX -> depth */
    struct vt_pair_map ranges;       /* (range id, 0) -> name */
    struct vt_open_phases phases;    /* names open now (replay_phases.h) */

    struct vt_context_entry *contexts; /* live contexts (few; contexts.h) */
    size_t ncontexts, contexts_cap;
    struct vt_context_made *contexts_made; /* every context made, in order */
    size_t ncontexts_made, contexts_made_cap;
    /* The process made a context in a trace that can measure its cost
     * (format version 6: NVML's figure where the free-memory drop is not
     * had): a view may say which were not measured. */
    bool contexts_measurable;

    /* The censuses of parts (parts.h): made at the process record of a
     * Python process of format version 5, or at the first census. */
    struct vt_parts *parts;
    /* PyTorch's caching allocator's samples (allocator_samples.h): made at
     * the first; NULL without any. */
    struct vt_alloc_samples *samples;

    /* at most VT_MARKS_MAX, grown as they come: a rank without marks
     * holds no room for them (a job has thousands of replays) */
    struct vt_mark *marks;
    size_t nmarks, marks_cap;
    uint64_t marks_total;

    uint64_t first_time_ns, last_time_ns;
    bool has_time;
    uint64_t last_data_ns;           /* see vt_replay_data_end */
    bool has_data;
    uint64_t mem_events, lost_events;
    uint64_t unmatched_frees, failed_frees, replaced_allocs, unmatched_pops, untracked_events;
    uint64_t ooms_dropped;
    bool out_of_memory;              /* the analyzer itself ran out */

    vt_ledger_change_fn on_change;
    vt_device_peak_fn on_device_peak;
    vt_oom_fn on_oom;
    void *on_change_ctx;
    vt_live_fn on_live;
    void *on_live_ctx;
    vt_range_fn on_range;
    void *on_range_ctx;
    vt_record_fn on_record;
    void *on_record_ctx;
    /* An observer's view of each failure, after on_oom (which the run
     * stage's GPU merge takes over): its own context, never replaced. */
    vt_oom_fn on_failure;
    void *on_failure_ctx;
};

void vt_replay_init(struct vt_replay *rp, const struct vt_reader *reader);
/* A replay that is read alone (not one of a group merged by time), before
 * it is fed: its live set is kept sparser (grown at an eighth full, not a
 * quarter), every event probing it, which one long trace gains from
 * (1.14x); a job's merged groups hold many sets at once, where the memory
 * costs more than the probes. */
void vt_replay_read_alone(struct vt_replay *rp);
/* A replay fed in turns with others (a merged group's): its tables have
 * gone cold by each of its turns, so its live set's lookups are fetched
 * ahead at any size, not only where the set outgrows the caches; and its
 * live set is kept at a quarter full until it has had as many events as
 * slots, sparse from then on (the probes of a long trace cost more than
 * the room; a short one's - a job of many small ranks - the other way). */
void vt_replay_read_in_turns(struct vt_replay *rp);
void vt_replay_free(struct vt_replay *rp);
/* Feeds one record (in file order). */
void vt_replay_feed(struct vt_replay *rp, const struct vt_record *rec);
/* Feeds n records, as n calls of vt_replay_feed would (without a call per
 * record). */
void vt_replay_feed_batch(struct vt_replay *rp, const struct vt_record *recs, size_t n);
/* Feeds n memory events (vt_reader_next_mem_events), as vt_replay_feed
 * would their records. */
void vt_replay_feed_mem_events(struct vt_replay *rp, const struct vt_replay_mem *evs, size_t n);
/* Closes windows still open at the end of the data. */
void vt_replay_finish(struct vt_replay *rp);
/* After vt_replay_finish, where nothing is fed any more: the live set and
 * what only feeding uses (each ledger's site index and change log) go;
 * the figures stay, to be read. */
void vt_replay_settle(struct vt_replay *rp);
/* Where nothing is fed any more, before vt_replay_finish: the live set
 * goes (neither finishing nor the figures read it; vt_replay_settle
 * then has nothing of it to free). */
void vt_replay_drop_live(struct vt_replay *rp);
/* Before the first record: the live set made with room for count
 * allocations at once (best effort), as many as the replay expects to be
 * live at most. */
void vt_replay_expect_live(struct vt_replay *rp, size_t count);
/* Before vt_replay_settle: how many allocations its live set has room for
 * (about as many as were live at most), or had when vt_replay_drop_live
 * freed it. */
size_t vt_replay_live_room(const struct vt_replay *rp);

/* The ledger for (device, category), or NULL if it never held anything. */
struct vt_ledger *vt_replay_ledger(struct vt_replay *rp, int64_t device, enum vt_category cat);

/* The numbers a verdict is made of (docs/user/REPORT.md, "Verdicts"). */
struct vt_oom_numbers {
    uint64_t requested;       /* R */
    uint64_t free_bytes;      /* F, as the driver said */
    uint64_t total_bytes;     /* T, the device's capacity */
    uint64_t process_bytes;   /* P: this process's bytes on the device (live and cached) */
    uint64_t cached_bytes;    /* Ca: of those, cache the allocator gave back (0: unknown) */
    uint64_t context_bytes;   /* K: this process's contexts (0: unknown) */
    bool driver_info;         /* F and T were captured */
};
/* The verdict rule: the first row of the decision table that holds. */
enum vt_verdict vt_oom_verdict_of(const struct vt_oom_numbers *n);
/* The other processes' bytes X = T - F - P - K (0 if negative). */
uint64_t vt_oom_others_bytes(const struct vt_oom_numbers *n);
/* How much more the request needs than F and Ca give: R - F - Ca (0 if none). */
uint64_t vt_oom_shortfall(const struct vt_oom_numbers *n);
/* The numbers of a diagnosed failure. */
struct vt_oom_numbers vt_oom_numbers_of(const struct vt_oom *o);
/* Failures folded into requests (oom_requests.c): a request is a failure
 * and the failed retries after it. first indexes a failure that is not a
 * retry; the end is past its last attempt. */
size_t vt_oom_request_end(const struct vt_ledger *l, size_t first);
/* The request's last attempt failed too (no retry succeeded). */
bool vt_oom_request_failed(const struct vt_ledger *l, size_t first);
/* The requests of a ledger that finally failed: its out-of-memory count. */
size_t vt_ledger_failed_requests(const struct vt_ledger *l);
/* Fills the diagnosis fields of a failure once what followed it is known. */
void vt_oom_diagnose(struct vt_oom *o);

const char *vt_category_name(enum vt_category c);
/* "device 0", "managed 1", "pinned host": how people name a ledger. */
const char *vt_ledger_label(const struct vt_ledger *l, char *buf, size_t n);

/* Where a process's data ends: its last event that the page draws or
 * marks - a change of a ledger's bytes, a failed allocation, a phase
 * boundary (a range opening or closing) or a mark - so that the time axis
 * of its timeline ends with the data (docs/user/REPORT.md, "HTML
 * report"), not with the tracer's trailer, a context's release or a free of
 * nothing live that came later. Without such an event, its last event of
 * any kind. */
static inline uint64_t vt_replay_data_end(const struct vt_replay *rp)
{
    return rp->has_data ? rp->last_data_ns : rp->last_time_ns;
}

#endif
