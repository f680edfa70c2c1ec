/*
 * What `vramtrace top` watches: the traces under the directories and the
 * files it was given, followed together (follow_process.h). Each refresh
 * looks for traces that appeared since (a late rank, a restarted one) and
 * reads what every followed trace appended. A process that exited stays,
 * marked so, with its peak. A file that is not a trace, or breaks, is
 * named once (the view's notes) and skipped.
 *
 * A view is of one host: processes of one machine share its GPUs and its
 * clock (docs/user/TOP.md says how to watch a job of many nodes).
 */
#ifndef VRAMTRACE_FOLLOW_FOLLOW_VIEW_H
#define VRAMTRACE_FOLLOW_FOLLOW_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "follow_process.h"

enum vt_follow_file_state {
    VT_FOLLOW_FILE_PENDING,  /* empty so far: looked at again next time */
    VT_FOLLOW_FILE_FOLLOWED, /* a process of the view */
    VT_FOLLOW_FILE_SKIPPED,  /* not a trace (named once), or another session's */
};

struct vt_follow_file {
    char *path;
    enum vt_follow_file_state state;
    struct vt_follow_process *process; /* FOLLOWED */
};

/* A GPU of the view: its processes' device bytes now against its size. */
struct vt_follow_gpu {
    const char *host;
    bool has_uuid;
    uint8_t uuid[VT_UUID_SIZE];
    int64_t ordinal;       /* as the first process on it numbers it */
    const char *name;      /* NULL: unknown */
    uint64_t capacity;     /* 0: unknown */
    uint64_t bytes;        /* the running processes' device bytes now */
    size_t processes, running;
};

#define VT_FOLLOW_NOTE_MAX 512

struct vt_follow_view {
    char **sources;        /* directories and files, as given */
    size_t nsources;
    char *session;         /* only this session's traces; NULL: all */
    char this_host[256];
    struct vt_follow_file *files;
    size_t nfiles, files_cap;
    struct vt_follow_process **processes; /* followed and shown, in order of joining */
    size_t nprocesses, processes_cap;
    char **notes;          /* each file skipped or broken, once, in order */
    size_t nnotes, notes_cap;
    uint64_t refreshes;
};

/* sources: n paths (copied); session: NULL or the id to keep. False if
 * memory ran out. */
bool vt_follow_view_init(struct vt_follow_view *v, char *const *sources, size_t n,
                         const char *session);
void vt_follow_view_free(struct vt_follow_view *v);
/* Looks for new traces, then reads what each followed one appended. False
 * only if memory ran out. */
bool vt_follow_view_refresh(struct vt_follow_view *v);

enum vt_follow_sort {
    VT_FOLLOW_SORT_NOW,      /* device bytes now, most first */
    VT_FOLLOW_SORT_PEAK,     /* peak so far, largest first */
    VT_FOLLOW_SORT_GROWTH,   /* growth per step, fastest first */
    VT_FOLLOW_SORT_RANK,     /* rank (then pid), lowest first */
};
/* The processes' indexes in that order (order: nprocesses entries). */
void vt_follow_view_order(const struct vt_follow_view *v, enum vt_follow_sort key, size_t *order);

/* The GPUs, in order of first appearance; returns how many (at most max). */
size_t vt_follow_view_gpus(const struct vt_follow_view *v, struct vt_follow_gpu *out, size_t max);
/* The GPU a process's device ordinal belongs to: its index in what
 * vt_follow_view_gpus returns, -1 if none. */
long vt_follow_view_gpu_of(const struct vt_follow_gpu *gpus, size_t n,
                           const struct vt_follow_process *p, int64_t device);

/* The job's first failure (earliest in wall-clock time): false if none. */
bool vt_follow_view_first_failure(const struct vt_follow_view *v, size_t *process,
                                  struct vt_oom *oom);

#endif
