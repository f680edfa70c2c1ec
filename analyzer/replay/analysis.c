/* Merged replay of several traces; see analysis.h. */
#define _GNU_SOURCE
#include "analysis.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "input_files.h"

const char *vt_process_env(const struct vt_process_info *p, const char *name)
{
    if (!p)
        return NULL;
    for (uint64_t i = 0; i < p->nenv; i++)
        if (p->env[i].name && !strcmp(p->env[i].name, name))
            return p->env[i].value;
    return NULL;
}

static long first_number(const struct vt_process_info *p, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = vt_process_env(p, names[i]);
        if (!v || !*v)
            continue;
        char *end;
        long x = strtol(v, &end, 10);
        return *end || x < 0 ? -1 : x;
    }
    return -1;
}

long vt_process_rank(const struct vt_process_info *p)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    return first_number(p, names, 4);
}

long vt_process_local_rank(const struct vt_process_info *p)
{
    static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID"};
    return first_number(p, names, 4);
}

long vt_process_world_size(const struct vt_process_info *p)
{
    static const char *const names[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS"};
    return first_number(p, names, 4);
}

const char *vt_process_session(const struct vt_process_info *p)
{
    const char *s = vt_process_env(p, "VRAMTRACE_SESSION");
    return s && *s ? s : NULL;
}

/* ---- jobs ---- */

static bool same_session(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* Each input's job: its session's, in order of first appearance (once
 * the process records are read); each GPU's, its processes'. */
static bool assign_jobs(struct vt_analysis *a)
{
    size_t cap = 0;
    for (size_t i = 0; i < a->ninputs; i++) {
        const struct vt_process_info *p = vt_reader_process(a->inputs[i].reader);
        if (!p) { /* broken before its process record: nothing to report */
            a->inputs[i].job = VT_NO_JOB;
            continue;
        }
        const char *s = vt_process_session(p);
        size_t k = 0;
        while (k < a->njobs && !same_session(a->jobs[k].session, s))
            k++;
        if (k == a->njobs) {
            if (!vt_grow_array((void **)&a->jobs, &cap, a->njobs + 1, sizeof *a->jobs))
                return false;
            a->jobs[a->njobs++] = (struct vt_job){s, 0};
        }
        a->inputs[i].job = k;
        a->jobs[k].ninputs++;
    }
    for (size_t g = 0; g < a->ngpus; g++)
        for (size_t k = 0; k < a->njobs; k++)
            if (same_session(a->gpus[g].session, a->jobs[k].session))
                a->gpus[g].job = k;
    return true;
}

/* ---- GPUs ---- */

static void repoint_ledgers(struct vt_analysis *a);

static long gpu_for(struct vt_analysis *a, size_t input, int64_t device)
{
    uint64_t *hit = vt_pair_map_get(&a->gpu_of, input, (uint64_t)(device + 1));
    if (hit)
        return (long)*hit;
    const struct vt_reader *r = a->inputs[input].reader;
    const struct vt_device_info *dev = device >= 0 ? vt_reader_device(r, (uint64_t)device) : NULL;
    const struct vt_process_info *p = vt_reader_process(r);
    const char *host = p && p->hostname ? p->hostname : "";
    const char *session = vt_process_session(p);
    static const uint8_t zero[VT_UUID_SIZE];
    bool has_uuid = dev && memcmp(dev->uuid, zero, VT_UUID_SIZE) != 0;
    size_t g;
    for (g = 0; g < a->ngpus; g++)
        if (has_uuid && a->gpus[g].has_uuid && !memcmp(a->gpus[g].uuid, dev->uuid, VT_UUID_SIZE) &&
            !strcmp(a->gpus[g].hostname, host) && same_session(a->gpus[g].session, session))
            break;
    if (g == a->ngpus) {
        size_t cap = a->gpus_cap;
        if (!vt_grow_array((void **)&a->gpus, &a->gpus_cap, a->ngpus + 1, sizeof *a->gpus))
            return -1;
        if (a->gpus_cap != cap)
            repoint_ledgers(a); /* grown, so it may have moved */
        struct vt_gpu *gp = &a->gpus[g];
        memset(gp, 0, sizeof *gp);
        gp->has_uuid = has_uuid;
        if (has_uuid)
            memcpy(gp->uuid, dev->uuid, VT_UUID_SIZE);
        gp->hostname = host;
        gp->session = session;
        gp->proc_now = calloc(a->ninputs, sizeof *gp->proc_now);
        gp->proc_peak = calloc(a->ninputs, sizeof *gp->proc_peak);
        gp->proc_used = calloc(a->ninputs, sizeof *gp->proc_used);
        if (!gp->proc_now || !gp->proc_peak || !gp->proc_used) {
            free(gp->proc_now);
            free(gp->proc_peak);
            free(gp->proc_used);
            return -1;
        }
        a->ngpus++;
    }
    if (dev && !a->gpus[g].name) {
        a->gpus[g].name = dev->name;
        a->gpus[g].total_bytes = dev->total_bytes;
    }
    if (!vt_pair_map_put(&a->gpu_of, input, (uint64_t)(device + 1), g))
        return -1;
    return (long)g;
}

const struct vt_gpu *vt_analysis_gpu_of(const struct vt_analysis *a, size_t input, int64_t device)
{
    uint64_t *hit = vt_pair_map_get(&a->gpu_of, input, (uint64_t)(device + 1));
    return hit ? &a->gpus[*hit] : NULL;
}

static inline void add_to_gpu(struct vt_analysis *a, size_t input, struct vt_gpu *gp,
                              uint64_t delta, uint64_t time_ns)
{
    gp->now_bytes += delta; /* a decrease wraps, and the wrap cancels out */
    gp->proc_now[input] += delta;
    gp->proc_used[input] = true;
    if (!gp->has_peak || gp->now_bytes > gp->peak_bytes) {
        gp->has_peak = true;
        gp->peak_bytes = gp->now_bytes;
        gp->peak_time_ns = time_ns;
        memcpy(gp->proc_peak, gp->proc_now, a->ninputs * sizeof *gp->proc_now);
    }
}

/* Points a placed ledger at its GPU's totals, which the replay then updates
 * itself (struct vt_ledger, gpu). */
static void point_ledger(struct vt_analysis *a, struct vt_input *in, struct vt_ledger *l, long g)
{
    struct vt_gpu *gp = &a->gpus[g];
    l->gpu.now = &gp->now_bytes;
    l->gpu.peak = &gp->peak_bytes;
    l->gpu.share = &gp->proc_now[in->index];
}

/* After a->gpus moved: the placed ledgers point at the new place. */
static void repoint_ledgers(struct vt_analysis *a)
{
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
        for (size_t li = 0; li < in->replay.nledgers; li++)
            if (in->ledger_gpu[li] > 0)
                point_ledger(a, in, &in->replay.ledgers[li], in->ledger_gpu[li] - 1);
    }
}

/* A ledger's first change (or a retry after running out of memory): finds
 * its GPU, adds the change and hands the later ones to the replay. */
static void place_ledger(struct vt_input *in, struct vt_ledger *l, size_t li, uint64_t delta,
                         uint64_t time_ns)
{
    if (l->device < 0) {
        in->ledger_gpu[li] = -1; /* no device: it cannot be placed on a GPU */
        return;
    }
    long g = gpu_for(in->analysis, in->index, l->device);
    if (g < 0) {
        in->analysis->out_of_memory = true; /* tried again at the next change */
        return;
    }
    in->ledger_gpu[li] = g + 1;
    add_to_gpu(in->analysis, in->index, &in->analysis->gpus[g], delta, time_ns);
    point_ledger(in->analysis, in, l, g);
}

/* A change of a ledger not placed yet (once placed, the replay adds its
 * changes itself; with no device it is never placed). */
static void on_device_change(void *ctx, struct vt_replay *rp, struct vt_ledger *l,
                             uint64_t old_total, uint64_t time_ns)
{
    struct vt_input *in = ctx;
    size_t li = (size_t)(l - rp->ledgers);
    /* A ledger's GPU never changes: it is found once, at the first change. */
    if (in->ledger_gpu[li] == 0)
        place_ledger(in, l, li, l->sites.total_bytes - old_total, time_ns);
}

/* A placed ledger's change took its GPU above its peak (the replay has
 * added it, and the GPU had a peak since the ledger was placed). */
static void on_device_peak(void *ctx, struct vt_replay *rp, struct vt_ledger *l, uint64_t time_ns)
{
    struct vt_input *in = ctx;
    struct vt_analysis *a = in->analysis;
    struct vt_gpu *gp = &a->gpus[in->ledger_gpu[l - rp->ledgers] - 1];
    gp->peak_bytes = gp->now_bytes;
    gp->peak_time_ns = time_ns;
    memcpy(gp->proc_peak, gp->proc_now, a->ninputs * sizeof *gp->proc_now);
}

/* A device allocation failed: which other traced processes held memory on
 * its GPU at that instant, largest first (the report names them). */
static void on_oom(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    (void)rp;
    struct vt_input *in = ctx;
    struct vt_analysis *a = in->analysis;
    if (l->category != VT_CAT_DEVICE || l->device < 0)
        return;
    long g = gpu_for(a, in->index, l->device);
    if (g < 0) {
        a->out_of_memory = true;
        return;
    }
    const struct vt_gpu *gp = &a->gpus[g];
    for (size_t j = 0; j < a->ninputs; j++) {
        uint64_t bytes = gp->proc_now[j];
        if (j == in->index || bytes == 0)
            continue;
        size_t at = o->nothers; /* insertion into the sorted top */
        while (at > 0 && o->others[at - 1].bytes < bytes)
            at--;
        if (at == VT_OOM_OTHERS)
            continue;
        size_t n = o->nothers < VT_OOM_OTHERS ? o->nothers + 1 : VT_OOM_OTHERS;
        memmove(&o->others[at + 1], &o->others[at], (n - 1 - at) * sizeof o->others[0]);
        o->others[at] = (struct vt_oom_other){(uint32_t)j, bytes};
        o->nothers = n;
    }
}

/* ---- the merged pass ---- */

/* Traces read ahead on threads of their own: up to this many (each holds
 * one more decompressed chunk, typically 1 MiB, at most 64 MiB). */
#define VT_READ_AHEAD_INPUTS 8

/* Records decoded at once when there is nothing to merge: few enough to
 * stay in the first-level cache (about 4 KiB). */
#define VT_ANALYSIS_BATCH 32

/* Feeds untimed records (definitions) at once and stops at the next timed
 * one, which waits in in->peek for its turn in the merge. */
static void advance(struct vt_input *in)
{
    int rc;
    while ((rc = vt_reader_next(in->reader, &in->peek)) > 0) {
        if (vt_record_is_timed(in->peek.type)) {
            in->state = 1;
            return;
        }
        vt_replay_feed(&in->replay, &in->peek);
    }
    in->state = rc;
}

int vt_analysis_run(struct vt_analysis *a, char *const *paths, size_t npaths, FILE *err)
{
    return vt_analysis_run_with(a, paths, npaths, err, NULL, NULL);
}

int vt_analysis_run_with(struct vt_analysis *a, char *const *paths, size_t npaths, FILE *err,
                         vt_analysis_prepare_fn prepare, void *ctx)
{
    memset(a, 0, sizeof *a);
    vt_pair_map_init(&a->gpu_of);
    int status = 0;
    struct vt_input_files files = {0};
    static const char *const traces[] = {".vtrace", NULL};
    for (size_t i = 0; i < npaths; i++)
        if (!vt_input_files_add(&files, paths[i], traces, "*.vtrace", err))
            status = 2;
    a->inputs = calloc(files.n ? files.n : 1, sizeof *a->inputs);
    if (!a->inputs) {
        fprintf(err, "vramtrace: out of memory\n");
        vt_input_files_free(&files);
        return 2;
    }
    a->nfiles = files.n;
    for (size_t i = 0; i < files.n; i++) {
        struct vt_read_error e;
        struct vt_reader *r;
        if (vt_reader_open(files.paths[i], &r, &e) != 0) {
            fprintf(err, "vramtrace: %s\n", e.message);
            free(files.paths[i]);
            a->skipped++;
            status = 2;
            continue;
        }
        struct vt_input *in = &a->inputs[a->ninputs++];
        in->path = files.paths[i];
        in->reader = r;
    }
    free(files.paths);
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
        /* Decompression on threads of their own (best effort): a chunk
         * buffer more per trace, so not for a directory of many traces. */
        if (a->ninputs <= VT_READ_AHEAD_INPUTS)
            vt_reader_read_ahead(in->reader);
        vt_replay_init(&in->replay, in->reader);
        in->analysis = a;
        in->index = i;
        in->replay.on_change = on_device_change;
        in->replay.on_device_peak = on_device_peak;
        in->replay.on_oom = on_oom;
        in->replay.on_change_ctx = in;
        if (prepare)
            prepare(ctx, in);
    }
    if (a->ninputs == 1) {
        /* One trace: nothing to merge, its records go in file order; the
         * memory events that succeeded (nearly all) in their compact form,
         * anything else as a whole record. */
        struct vt_input *in = &a->inputs[0];
        struct vt_replay_mem batch[VT_ANALYSIS_BATCH];
        int n, rc;
        for (;;) {
            n = vt_reader_next_mem_events(in->reader, batch, VT_ANALYSIS_BATCH);
            vt_replay_feed_mem_events(&in->replay, batch, (size_t)n);
            if (n == VT_ANALYSIS_BATCH)
                continue;
            if ((rc = vt_reader_next(in->reader, &in->peek)) <= 0)
                break;
            vt_replay_feed(&in->replay, &in->peek);
        }
        in->state = rc;
    } else {
        for (size_t i = 0; i < a->ninputs; i++)
            advance(&a->inputs[i]);
    }
    for (;;) {
        struct vt_input *next = NULL;
        for (size_t i = 0; i < a->ninputs; i++) {
            struct vt_input *in = &a->inputs[i];
            if (in->state == 1 && (!next || in->peek.time_ns < next->peek.time_ns))
                next = in;
        }
        if (!next)
            break;
        vt_replay_feed(&next->replay, &next->peek);
        advance(next);
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
        vt_replay_finish(&in->replay);
        if (in->state < 0) {
            fprintf(err, "vramtrace: %s\n", vt_reader_error(in->reader)->message);
            a->skipped++;
            status = 2;
        }
        if (in->replay.out_of_memory)
            a->out_of_memory = true;
        if (in->replay.ledger_overflow_events)
            fprintf(err, "vramtrace: warning: %s: more than %d (device, memory kind) pairs; "
                         "%" PRIu64 " memory events of the others ignored\n",
                    in->path, VT_LEDGERS_MAX, in->replay.ledger_overflow_events);
    }
    if (!assign_jobs(a))
        a->out_of_memory = true;
    if (a->out_of_memory)
        fprintf(err, "vramtrace: warning: the analyzer ran out of memory; figures are partial\n");
    return status;
}

void vt_analysis_free(struct vt_analysis *a)
{
    for (size_t i = 0; i < a->ninputs; i++) {
        vt_replay_free(&a->inputs[i].replay);
        vt_reader_close(a->inputs[i].reader);
        free(a->inputs[i].path);
    }
    free(a->inputs);
    for (size_t g = 0; g < a->ngpus; g++) {
        free(a->gpus[g].proc_now);
        free(a->gpus[g].proc_peak);
        free(a->gpus[g].proc_used);
    }
    free(a->gpus);
    free(a->jobs);
    vt_pair_map_free(&a->gpu_of);
    memset(a, 0, sizeof *a);
}
