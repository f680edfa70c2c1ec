/*
 * What device memory is made of, from the censuses the Python bootstrap
 * took (VT_REC_PART, format version 5; docs/user/PYTORCH.md, "Parts"):
 * which address ranges were parameters, buffers, gradients and optimizer
 * state, and when.
 *
 * A census names tensors by address; the trace names the driver's
 * allocations (for PyTorch: the caching allocator's segments). Each
 * tensor of a census is tied to the allocation that held it then (one
 * binary search in the census's sorted copy of the live device
 * allocations), and that allocation's lifetime is kept: when it began (a
 * map of begin times, kept from the process's start for Python processes,
 * the only ones with a bootstrap) and when it ended (a watch on its key).
 * The bytes of a part at an instant T are then those of the tensors of
 * the census nearest T whose allocation was live at T: the same memory,
 * not merely the same address. That is the segment level: a segment that
 * held a gradient at the census counts as gradient at T even if the
 * gradient was freed into the allocator's cache in between (the nearest
 * census keeps that short); the tensor level needs the allocator's own
 * blocks (report/parts/).
 *
 * Cost: nothing for processes that are not Python (rp->parts stays NULL);
 * for Python ones a map insert per allocation and a lookup per free,
 * O(live log live) per census, memory O(live + tensors told).
 */
#ifndef VRAMTRACE_REPLAY_PARTS_H
#define VRAMTRACE_REPLAY_PARTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "live_set.h"
#include "pair_map.h"
#include "trace_reader.h"

#define VT_PARTS_CENSUS_MAX 4096   /* censuses kept per process (more are counted) */
#define VT_PARTS_TENSORS_MAX 4000000 /* tensors kept per process (more are counted) */

/* One tensor of a census, tied to the allocation that held it. */
struct vt_part_tensor {
    uint32_t census;          /* index in censuses */
    uint8_t part;             /* enum vt_part */
    uint8_t ledger;           /* its allocation's ledger in the replay */
    bool held;                /* an allocation of the trace held it (else: bytes nowhere) */
    uint64_t addr, bytes, elements;
    uint64_t dtype, name;     /* string ids */
    uint64_t seg_addr, seg_size;
    uint64_t begin_ns;        /* its allocation began (0: before anything known) */
    uint64_t end_ns;          /* ... ended (UINT64_MAX: live at the end) */
    uint64_t next_open;       /* the next tensor watching the same allocation, + 1 */
};

struct vt_part_census {
    uint64_t number;          /* the bootstrap's */
    uint64_t time_ns;
    uint64_t why;             /* string id: first-step, oom, every */
    uint64_t optimizer;       /* string id: the optimizers' classes (0: none) */
    uint64_t steps;           /* optimizer steps before it */
    uint32_t saw;             /* VT_PART_SAW_* */
    size_t first, count;      /* its tensors in tensors[] */
    size_t unheld;            /* tensors no allocation held */
};

struct vt_parts {
    struct vt_part_census *censuses;
    size_t ncensuses, censuses_cap;
    uint64_t censuses_dropped;
    struct vt_part_tensor *tensors;
    size_t ntensors, tensors_cap;
    uint64_t tensors_dropped;
    struct vt_pair_map begins;  /* (kind, addr) -> begin time of a live allocation */
    struct vt_pair_map watched; /* (kind, addr) -> first tensor watching it, + 1 */
    bool begins_from_start;     /* begin times known from the process's start */
    struct vt_parts_held *live; /* the census being filled: the live set then */
    size_t nlive;
    bool open;
    bool out_of_memory;
};

struct vt_replay;
struct vt_parts_held;

struct vt_parts *vt_parts_new(bool from_start);
void vt_parts_free(struct vt_parts *p);
/* An allocation of a device ledger began or ended (the replay's rules). */
void vt_parts_live(struct vt_parts *p, const struct vt_live *e, bool begins, uint64_t time_ns);
/* A VT_REC_PART record. */
void vt_parts_record(struct vt_parts *p, const struct vt_replay *rp, const struct vt_record *rec);

/* The parts of one ledger at an instant. */
struct vt_parts_at {
    bool known;               /* a census of this process is there to go by */
    size_t census;            /* the census gone by (nearest the instant) */
    uint64_t bytes[VT_PART_COUNT_];   /* per part, live then */
    uint64_t tensors[VT_PART_COUNT_];
};
void vt_parts_at(const struct vt_parts *p, size_t ledger, uint64_t time_ns,
                 struct vt_parts_at *out);
/* The same with a census chosen by the caller (an index in censuses). */
void vt_parts_at_census(const struct vt_parts *p, size_t ledger, size_t census,
                        uint64_t time_ns, struct vt_parts_at *out);

#endif
