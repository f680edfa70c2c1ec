/*
 * One process followed while it runs (`vramtrace top`): its trace read as
 * it grows - each poll decodes only the records appended since the last
 * (vt_reader_follow), a last chunk still being written is waited for -
 * and fed to a replay of its own (replay.h), the report's live sets,
 * ledgers and failures. On top of the replay it keeps what a followed view
 * shows and a report does not: the device bytes over the last minute, the
 * phase open now and whether the process is still there. Growth across
 * openings is the replay's own (phase_growth.h), the report's figure.
 *
 * Memory is the replay's (live allocations and sites) plus one chunk
 * buffer, never the trace's length.
 */
#ifndef VRAMTRACE_FOLLOW_FOLLOW_PROCESS_H
#define VRAMTRACE_FOLLOW_FOLLOW_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"
#include "trace_reader.h"

/* The last minute, one bucket a second: the largest device total it saw. */
#define VT_FOLLOW_HISTORY_SECONDS 60

/* A phase name of the process, for the one open now. */
struct vt_follow_phase {
    uint64_t name;            /* string id in the process's trace */
    uint64_t open;            /* its ranges open now */
    uint64_t opened_order;    /* when it last opened from closed (counts up): the
                                 open phase with the largest is the innermost */
};

/* What grows, the report's way (docs/user/REPORT.md, "Growth across
 * openings"): of the process's device ledgers' phases, the one that grows
 * the most per opening. */
struct vt_follow_growth {
    bool repeated;            /* a phase closed more than VT_GROWTH_MIN_RISES times */
    bool grows;               /* one of them grows: the fields below say which */
    const struct vt_ledger *ledger;
    const struct vt_phase_peak *phase;
    struct vt_growth_result result;
};

struct vt_follow_process {
    char *path;
    struct vt_reader *reader;
    struct vt_replay replay;
    /* from the process record (NULL / -1 until it was read) */
    const struct vt_process_info *info;
    long rank, local_rank;
    const char *session;
    char command[512];
    /* device memory, every device of the process together */
    uint64_t device_bytes;
    uint64_t peak_bytes, peak_time_ns; /* monotonic ns of the trace */
    bool has_peak;
    struct {
        uint64_t second;     /* monotonic second it covers */
        uint64_t max_bytes;
    } history[VT_FOLLOW_HISTORY_SECONDS];
    uint64_t history_first, history_last; /* the first and latest second noted */
    bool has_history;
    struct vt_follow_phase *phases;
    size_t nphases, phases_cap;
    uint64_t phase_openings;
    /* where it stands */
    bool exited;             /* its trailer was read, or its pid is gone (this host) */
    bool broken;             /* the trace is corrupt past some point: error says */
    char error[512];
    uint64_t records;        /* read so far */
};

/* Opens path for following. 0: *out is ready (its records not read yet);
 * 1: not yet a trace to read (an empty file: its writer has just made
 * it), try again later; -1: not a trace (err says why). */
int vt_follow_process_open(const char *path, struct vt_follow_process **out,
                           struct vt_read_error *err);
void vt_follow_process_free(struct vt_follow_process *p);

/* Reads what was appended since the last poll (the whole trace the first
 * time), at most max records (0: no limit; 1: the process record, which
 * comes first, to know whose trace it is before reading it all).
 * this_host: the host name of the machine looking, for telling whether a
 * process without a trailer is still alive. Returns false when the trace
 * turned out corrupt (p->broken, p->error): what came before stays. */
bool vt_follow_process_poll(struct vt_follow_process *p, const char *this_host, uint64_t max);

/* The process's device bytes in the last minute before now_ns (monotonic),
 * in n columns of equal time, oldest first: each the largest total its
 * seconds saw; VT_FOLLOW_NO_HISTORY for a column all before its first
 * allocation. */
#define VT_FOLLOW_NO_HISTORY UINT64_MAX
void vt_follow_process_history(const struct vt_follow_process *p, uint64_t now_ns, uint64_t *out,
                               size_t n);
/* The innermost phase open now (its name), NULL if none. */
const char *vt_follow_process_phase(const struct vt_follow_process *p);
/* Growth across openings, the report's figure (above). */
struct vt_follow_growth vt_follow_process_growth(const struct vt_follow_process *p);
/* Its allocation failures that finally failed (a retry that succeeded does
 * not count), over its device ledgers; *first and *last (each may be NULL)
 * the earliest and the latest, diagnosed with what is known so far. */
size_t vt_follow_process_failures(const struct vt_follow_process *p, struct vt_oom *first,
                                  struct vt_oom *last);
/* Unix epoch ns of a monotonic time of the process (its clocks' pairing). */
uint64_t vt_follow_process_wall_ns(const struct vt_follow_process *p, uint64_t mono_ns);

#endif
