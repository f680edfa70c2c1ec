/*
 * PyTorch's caching allocator's own figures over a run: the Python
 * bootstrap samples torch.cuda.memory_stats at every closing of the
 * model's forward, backward and optimizer (VT_PART_ALLOCATOR_SAMPLE
 * records; docs/user/PYTORCH.md, "Allocator samples"). The trace sees
 * segments; these say what the segments hold: allocated (tensors),
 * reserved (segments), the difference being the allocator's cache.
 *
 * Growth at the allocator's level: the rule of phase_growth.h applied to
 * the allocated bytes (a leak) and the reserved bytes (the cache grows
 * while the tensors do not) at the closings of the step - the optimizer,
 * the phase that repeats once a training step; the forward where no
 * optimizer ever closed (inference) - one rate per step, however many
 * phases a step has. The sites that grew are the trace's own (the device
 * ledger's sites, for PyTorch the segments' allocation stacks), copied at
 * the same closings by the same rule.
 *
 * Cost: nothing for a trace without samples; O(1) a sample plus the
 * growth rule's bounded site copies.
 */
#ifndef VRAMTRACE_REPLAY_ALLOCATOR_SAMPLES_H
#define VRAMTRACE_REPLAY_ALLOCATOR_SAMPLES_H

#include <stdbool.h>
#include <stdint.h>

#include "phase_growth.h"

struct vt_alloc_sample {
    uint64_t time_ns;
    int64_t device;
    uint64_t allocated, reserved, active; /* bytes, as memory_stats says */
    uint64_t retries, ooms;               /* num_alloc_retries, num_ooms */
    uint64_t phase;                       /* string id: the phase that closed */
};

/* One step phase's closings: the growth rule on two figures. */
struct vt_alloc_steps {
    struct vt_growth allocated, reserved;
    uint64_t copied;                      /* site words the growth copied */
    uint64_t first_ns, last_ns;           /* its first and latest closings */
    uint64_t last_device_bytes;           /* the device ledger's bytes at the latest */
    uint64_t run_start_reserved;          /* reserved where the allocated bytes' run began */
    uint64_t last_reserved;
};

struct vt_alloc_samples {
    uint64_t count;
    struct vt_alloc_sample last;          /* the latest sample */
    struct vt_alloc_sample peak;          /* the one with the most reserved (the earliest) */
    int64_t device;                       /* steps count on the first device sampled */
    struct vt_alloc_steps optimizer, forward;
};

/* One sample taken in (*samples made at the first): phase is the name of
 * the phase that closed (NULL: unknown), sites the sampled device's ledger
 * sites then (NULL: none yet). False when out of memory. */
bool vt_alloc_samples_take(struct vt_alloc_samples **samples, const struct vt_alloc_sample *s,
                           const char *phase, const struct vt_ledger_sites *sites);
void vt_alloc_samples_free(struct vt_alloc_samples *s);

/* The step's closings: the optimizer's where it closed, else the
 * forward's; NULL when neither did. *name says which. */
const struct vt_alloc_steps *vt_alloc_samples_steps(const struct vt_alloc_samples *s,
                                                    const char **name);
/* The step's mean duration (ns) over its closings; 0 when fewer than two. */
uint64_t vt_alloc_steps_duration(const struct vt_alloc_steps *st);

#endif
