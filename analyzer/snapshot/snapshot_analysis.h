/*
 * What `vramtrace report` says about a memory snapshot, per device:
 * allocated and reserved peaks, who held memory at the allocated peak
 * (grouped by Python stack), phases, every OOM with the segment map at
 * that moment, and the segment map at the peak. docs/user/SNAPSHOTS.md
 * describes every number.
 */
#ifndef VRAMTRACE_SNAPSHOT_SNAPSHOT_ANALYSIS_H
#define VRAMTRACE_SNAPSHOT_SNAPSHOT_ANALYSIS_H

#include "segment_map.h"
#include "snapshot_timeline.h"

/* A group of live blocks at the peak with the same Python stack. */
struct vt_snap_site {
    uint64_t bytes, count;
    const struct vt_pickle_value *frames; /* one representative stack */
    bool backward;                 /* allocated by the autograd engine */
    bool before_window;            /* allocated before the trace starts: stack unknown */
    uint64_t key;
};

struct vt_snap_phase {
    const char *name;
    bool annotation;        /* from record_function START/END, else from frames */
    uint64_t peak_bytes;    /* allocated bytes */
    size_t peak_index;      /* events applied at the peak */
    size_t allocs;          /* allocations attributed to the phase */
    size_t ranges;          /* START annotations seen (annotation phases) */
};

enum vt_snap_verdict { VT_SNAP_FRAGMENTED, VT_SNAP_EXHAUSTED, VT_SNAP_LIMITED };
const char *vt_snap_verdict_name(enum vt_snap_verdict v);

struct vt_snap_oom {
    size_t index;                   /* trace index of the oom entry */
    const struct vt_snap_event *ev; /* size: rounded request; device_free */
    uint64_t segment_bytes;         /* what cudaMalloc was asked for */
    struct vt_snap_state state;     /* after the allocator's flush */
    struct vt_segmap map;
    uint64_t largest_free_same_pool;
    enum vt_snap_verdict verdict;
};

/* The verdict of an OOM from the allocator's state after its flush
 * (o->map built), for a rounded request of `rounded` bytes on stream with
 * device_free bytes free on the device: fills segment_bytes,
 * largest_free_same_pool and verdict. The snapshot's own oom entries and
 * a trace's failure with the snapshot taken at it (report_torch.c) are
 * judged by this one rule. */
/* The live blocks of st grouped by stack, largest first (*out: free it). */
bool vt_snap_group_sites(const struct vt_snap_state *st, struct vt_snap_site **out, size_t *n);

void vt_snap_oom_judge(struct vt_snap_oom *o, uint64_t rounded, int64_t stream,
                       uint64_t device_free);

struct vt_snap_device {
    int64_t device;
    struct vt_snap_timeline tl;
    size_t counts[VT_SNAP_UNKNOWN_ACTION + 1];
    uint64_t peak_allocated;
    size_t peak_allocated_index;    /* events applied at the peak */
    uint64_t peak_reserved;
    size_t peak_reserved_index;
    struct vt_snap_state at_peak;
    struct vt_segmap map_at_peak;
    struct vt_snap_site *sites;     /* sorted by bytes, largest first */
    size_t nsites;
    struct vt_snap_phase *phases;
    size_t nphases;
    bool annotations_unplaced;      /* trace has no time_us */
    struct vt_snap_oom *ooms;
    size_t nooms;
    struct vt_segmap map_final;
    struct vt_snap_state final_state;
};

struct vt_snap_analysis {
    struct vt_snapshot snap;
    struct vt_alloc_config cfg;
    struct vt_snap_device *devices;
    size_t ndevices;
};

/* Loads and analyses a snapshot. Returns 0, or 2 with "FILE: byte N:
 * reason" in err. Free with vt_snap_analysis_free either way. */
int vt_snap_analysis_run(struct vt_snap_analysis *a, const char *path, char *err, size_t errlen);
void vt_snap_analysis_free(struct vt_snap_analysis *a);

/* The time of event index i (or of the closest earlier event with one);
 * false if the trace has no times. */
bool vt_snap_time_at(const struct vt_snap_device *d, size_t index, int64_t *time_us);

#endif
