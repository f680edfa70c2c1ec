/*
 * A PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) read into
 * plain C structures: segments with their blocks (the final state), one
 * trace (ring buffer of allocator events) per device, record_function
 * annotations, and the allocator settings. Strings and frame lists point
 * into the pickle document, which the snapshot keeps alive.
 */
#ifndef VRAMTRACE_SNAPSHOT_SNAPSHOT_H
#define VRAMTRACE_SNAPSHOT_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pickle_reader.h"

/* The most elements (segments, blocks, trace entries and the frames of
 * each) a snapshot may expand to: this many per byte of the file, plus the
 * base. Past it vt_snap_load refuses the file (shared objects repeated: see
 * snapshot.c). Real snapshots have 0.19-0.48 per byte. */
#define VT_SNAP_ELEMENTS_PER_BYTE 4
#define VT_SNAP_ELEMENTS_BASE 1000000

/* Trace actions, as the snapshot names them. */
#define VT_SNAP_ACTIONS(X)              \
    X(ALLOC, "alloc")                   \
    X(FREE_REQUESTED, "free_requested") \
    X(FREE_COMPLETED, "free_completed") \
    X(SEGMENT_ALLOC, "segment_alloc")   \
    X(SEGMENT_FREE, "segment_free")     \
    X(SEGMENT_MAP, "segment_map")       \
    X(SEGMENT_UNMAP, "segment_unmap")   \
    X(SNAPSHOT, "snapshot")             \
    X(OOM, "oom")

enum vt_snap_action {
#define AS_ENUM(id, name) VT_SNAP_##id,
    VT_SNAP_ACTIONS(AS_ENUM)
#undef AS_ENUM
    VT_SNAP_UNKNOWN_ACTION,
};
const char *vt_snap_action_name(enum vt_snap_action a);

enum vt_snap_block_state { VT_BLOCK_ACTIVE_ALLOCATED, VT_BLOCK_ACTIVE_PENDING_FREE, VT_BLOCK_INACTIVE };

struct vt_snap_event {
    enum vt_snap_action action;
    uint64_t addr;
    uint64_t size;
    int64_t stream;
    bool has_time;
    int64_t time_us;
    uint64_t device_free;           /* oom only */
    const struct vt_pickle_value *frames; /* list of {filename, line, name}, may be NULL */
};

struct vt_snap_block {
    uint64_t addr, size, requested_size;
    enum vt_snap_block_state state;
    const struct vt_pickle_value *frames;
};

struct vt_snap_segment {
    int64_t device;
    uint64_t addr, total_size;
    int64_t stream;
    bool is_small;        /* segment_type 'small' */
    bool is_expandable;
    struct vt_snap_block *blocks;
    size_t nblocks;
};

struct vt_snap_annotation {
    bool start;           /* stage START, else END */
    const char *name;
    int64_t device;
    int64_t time_us;
};

#define VT_ROUNDUP_INTERVALS 16

struct vt_snap_settings {
    bool present;
    const char *conf;                 /* PYTORCH_CUDA_ALLOC_CONF as recorded */
    uint64_t max_split_size;          /* UINT64_MAX: unlimited */
    double garbage_collection_threshold;
    bool expandable_segments;
    uint64_t roundup_power2_divisions[VT_ROUNDUP_INTERVALS];
};

struct vt_snapshot {
    struct vt_pickle_doc *doc;
    const char *path;
    struct vt_snap_segment *segments;
    size_t nsegments;
    struct vt_snap_event **traces;    /* per device index */
    size_t *ntrace;
    size_t ndevices;                  /* entries of device_traces */
    struct vt_snap_annotation *annotations;
    size_t nannotations;
    struct vt_snap_settings settings;
    bool old_format;                  /* a bare list of segments */
};

/* True if the file starts with the pickle PROTO opcode (0x80). */
bool vt_snap_is_pickle(const char *path);
/* The same of a file's first n bytes, read by the caller (one look at a
 * file that may be one of several kinds). */
bool vt_snap_head_is_pickle(const void *head, size_t n);

/* Loads a snapshot. Returns 0, or 2 with "FILE: byte N: reason" in err. */
int vt_snap_load(const char *path, struct vt_snapshot *s, char *err, size_t errlen);
void vt_snap_free(struct vt_snapshot *s);

/* A frame of an event or block (i in 0..count-1), innermost first. */
size_t vt_snap_frame_count(const struct vt_pickle_value *frames);
bool vt_snap_frame(const struct vt_pickle_value *frames, size_t i, const char **filename,
                   const char **name, int64_t *line);
/* Python source frames are the ones a user wrote or reads (*.py). */
bool vt_snap_frame_is_python(const char *filename);
/* An allocation made by the autograd engine (backward): a frame of
 * torch::autograd::Engine on its stack. */
bool vt_snap_frames_backward(const struct vt_pickle_value *frames);
/* The frames that explain an allocation: its Python frames, innermost
 * first (fn called for each; returns how many). Without any, the
 * autograd node or operator frame that allocated. */
typedef void (*vt_snap_frame_fn)(void *ctx, const char *file, const char *name, int64_t line);
size_t vt_snap_explaining_frames(const struct vt_pickle_value *frames, vt_snap_frame_fn fn,
                                 void *ctx);

#endif
