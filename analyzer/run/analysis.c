/* Merged replay of several traces; see analysis.h. */
#define _GNU_SOURCE
#include "analysis.h"

#include <dirent.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "decode_ahead.h"
#include "grow_array.h"
#include "group_merge.h"
#include "heap_pages.h"
#include "input_files.h"
#include "stack_share.h"
#include "thread_count.h"

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

/* Traces that may share a GPU: one host, one session. Each group is
 * replayed alone (on one thread), with GPUs of its own, joined into
 * analysis->gpus in group order at the end. */
struct gpu_place {
    size_t input;
    uint64_t device1, gpu; /* device + 1, the group's GPU index */
};

struct vt_analysis_group {
    size_t *members; /* input indices, ascending */
    size_t n, cap;
    char *host, *session;
    bool keyed;      /* host and session known (else a group of its own) */
    bool read_ahead;
    struct vt_gpu *gpus;
    size_t ngpus, gpus_cap;
    struct vt_pair_map gpu_of; /* (input, device + 1) -> the group's GPU index */
    struct gpu_place *places;
    size_t nplaces, places_cap;
    bool out_of_memory;
    bool too_many_files; /* more traces than files may be open: not read */
    size_t threads;      /* that replay its traces (group_merge.h) */
    bool by_notes;       /* merged by notes: the replay does not add to its GPUs */
};

static void repoint_ledgers(struct vt_analysis *a, struct vt_analysis_group *grp);

static void free_gpu(struct vt_gpu *gp)
{
    free(gp->proc_now);
    free(gp->proc_peak);
    free(gp->proc_used);
    free(gp->members);
}

static long gpu_for(struct vt_analysis *a, size_t input, int64_t device)
{
    struct vt_analysis_group *grp = a->inputs[input].group;
    uint64_t *hit = vt_pair_map_get(&grp->gpu_of, input, (uint64_t)(device + 1));
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
    for (g = 0; g < grp->ngpus; g++)
        if (has_uuid && grp->gpus[g].has_uuid &&
            !memcmp(grp->gpus[g].uuid, dev->uuid, VT_UUID_SIZE) &&
            !strcmp(grp->gpus[g].hostname, host) && same_session(grp->gpus[g].session, session))
            break;
    if (g == grp->ngpus) {
        size_t cap = grp->gpus_cap;
        if (!vt_grow_array((void **)&grp->gpus, &grp->gpus_cap, grp->ngpus + 1, sizeof *grp->gpus))
            return -1;
        if (grp->gpus_cap != cap && !grp->by_notes)
            repoint_ledgers(a, grp); /* grown, so it may have moved */
        struct vt_gpu *gp = &grp->gpus[g];
        memset(gp, 0, sizeof *gp);
        gp->has_uuid = has_uuid;
        if (has_uuid)
            memcpy(gp->uuid, dev->uuid, VT_UUID_SIZE);
        gp->hostname = host;
        gp->session = session;
        /* the group's members are ascending: its span of inputs */
        gp->first_input = grp->members[0];
        gp->group_inputs = grp->members[grp->n - 1] - grp->members[0] + 1;
        gp->proc_now = calloc(gp->group_inputs, sizeof *gp->proc_now);
        gp->proc_peak = calloc(gp->group_inputs, sizeof *gp->proc_peak);
        gp->proc_used = calloc(gp->group_inputs, sizeof *gp->proc_used);
        if (!gp->proc_now || !gp->proc_peak || !gp->proc_used) {
            free_gpu(gp);
            return -1;
        }
        grp->ngpus++;
    }
    if (dev && !grp->gpus[g].name) {
        grp->gpus[g].name = dev->name;
        grp->gpus[g].total_bytes = dev->total_bytes;
    }
    if (!vt_grow_array((void **)&grp->places, &grp->places_cap, grp->nplaces + 1,
                       sizeof *grp->places) ||
        !vt_pair_map_put(&grp->gpu_of, input, (uint64_t)(device + 1), g))
        return -1;
    grp->places[grp->nplaces++] = (struct gpu_place){input, (uint64_t)(device + 1), g};
    return (long)g;
}

const struct vt_gpu *vt_analysis_gpu_of(const struct vt_analysis *a, size_t input, int64_t device)
{
    uint64_t *hit = vt_pair_map_get(&a->gpu_of, input, (uint64_t)(device + 1));
    return hit ? &a->gpus[*hit] : NULL;
}

/* The inputs at the combined peak: only the GPU's own processes (the others
 * hold nothing there), so a new maximum costs O(its processes), not
 * O(traces) - with a thousand ranks, most of the time of the merged pass. */
static inline void copy_peak(struct vt_gpu *gp)
{
    for (size_t k = 0; k < gp->nmembers; k++) {
        size_t at = gp->members[k] - gp->first_input;
        gp->proc_peak[at] = gp->proc_now[at];
    }
}

static bool add_member(struct vt_gpu *gp, size_t input)
{
    if (!vt_grow_array((void **)&gp->members, &gp->members_cap, gp->nmembers + 1,
                       sizeof *gp->members))
        return false;
    size_t at = gp->nmembers++;
    while (at > 0 && gp->members[at - 1] > input) {
        gp->members[at] = gp->members[at - 1];
        at--;
    }
    gp->members[at] = input;
    gp->proc_used[input - gp->first_input] = true;
    return true;
}

static inline bool add_to_gpu(struct vt_gpu *gp, size_t input, uint64_t delta, uint64_t time_ns)
{
    if (!gp->proc_used[input - gp->first_input] && !add_member(gp, input))
        return false;
    gp->now_bytes += delta; /* a decrease wraps, and the wrap cancels out */
    gp->proc_now[input - gp->first_input] += delta;
    if (!gp->has_peak || gp->now_bytes > gp->peak_bytes) {
        gp->has_peak = true;
        gp->peak_bytes = gp->now_bytes;
        gp->peak_time_ns = time_ns;
        copy_peak(gp);
    }
    return true;
}

/* Points a placed ledger at its GPU's totals, which the replay then updates
 * itself (struct vt_ledger, gpu). */
static void point_ledger(struct vt_gpu *gpus, struct vt_input *in, struct vt_ledger *l, long g)
{
    struct vt_gpu *gp = &gpus[g];
    l->gpu.now = &gp->now_bytes;
    l->gpu.peak = &gp->peak_bytes;
    l->gpu.share = &gp->proc_now[in->index - gp->first_input];
}

/* After the group's GPUs moved: its placed ledgers point at the new place. */
static void repoint_ledgers(struct vt_analysis *a, struct vt_analysis_group *grp)
{
    for (size_t k = 0; k < grp->n; k++) {
        struct vt_input *in = &a->inputs[grp->members[k]];
        for (size_t li = 0; li < in->replay.nledgers; li++)
            if (in->ledger_gpu[li] > 0)
                point_ledger(grp->gpus, in, &in->replay.ledgers[li], in->ledger_gpu[li] - 1);
    }
}

/* A ledger's first change (or a retry after running out of memory): finds
 * its GPU and adds the change; false if it is not placed (no device, or
 * out of memory: tried again at the next change). */
static bool place_on_gpu(struct vt_input *in, struct vt_ledger *l, size_t li, uint64_t delta,
                         uint64_t time_ns)
{
    if (l->device < 0) {
        in->ledger_gpu[li] = -1; /* no device: it cannot be placed on a GPU */
        return false;
    }
    struct vt_analysis_group *grp = in->group;
    long g = gpu_for(in->analysis, in->index, l->device);
    if (g < 0 || !add_to_gpu(&grp->gpus[g], in->index, delta, time_ns)) {
        grp->out_of_memory = true; /* tried again at the next change */
        return false;
    }
    in->ledger_gpu[li] = (int32_t)(g + 1);
    return true;
}

/* The same, and the replay adds the ledger's later changes itself. */
static void place_ledger(struct vt_input *in, struct vt_ledger *l, size_t li, uint64_t delta,
                         uint64_t time_ns)
{
    if (place_on_gpu(in, l, li, delta, time_ns))
        point_ledger(in->group->gpus, in, l, in->ledger_gpu[li] - 1);
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
    struct vt_gpu *gp = &in->group->gpus[in->ledger_gpu[l - rp->ledgers] - 1];
    gp->peak_bytes = gp->now_bytes;
    gp->peak_time_ns = time_ns;
    copy_peak(gp);
}

/* A device allocation failed: which other traced processes held memory on
 * its GPU at that instant, largest first (the report names them). */
static void note_others(struct vt_input *in, const struct vt_ledger *l, struct vt_oom *o)
{
    struct vt_analysis *a = in->analysis;
    if (l->category != VT_CAT_DEVICE || l->device < 0)
        return;
    long g = gpu_for(a, in->index, l->device);
    if (g < 0) {
        in->group->out_of_memory = true;
        return;
    }
    const struct vt_gpu *gp = &in->group->gpus[g];
    for (size_t k = 0; k < gp->nmembers; k++) {
        size_t j = gp->members[k];
        uint64_t bytes = gp->proc_now[j - gp->first_input];
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

static void on_oom(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    (void)rp;
    note_others(ctx, l, o);
}

/* ---- a group's GPU totals from the merge's notes ---- */

/* The group merge's notes (group_merge.h), in the group's time order: the
 * GPU totals as the replay and the hooks above keep them for one trace. */
static void merged_change(void *ctx, struct vt_input *in, size_t li, uint64_t delta,
                          uint64_t time_ns)
{
    (void)ctx;
    long g = in->ledger_gpu[li];
    if (g == 0) {
        place_on_gpu(in, &in->replay.ledgers[li], li, delta, time_ns);
        return;
    }
    if (g < 0)
        return;
    struct vt_gpu *gp = &in->group->gpus[g - 1];
    gp->now_bytes += delta; /* a decrease wraps, and the wrap cancels out */
    gp->proc_now[in->index - gp->first_input] += delta;
    if (gp->now_bytes > gp->peak_bytes) {
        gp->peak_bytes = gp->now_bytes;
        gp->peak_time_ns = time_ns;
        copy_peak(gp);
    }
}

static long merged_gpu_of(void *ctx, const struct vt_input *in, size_t li)
{
    (void)ctx;
    return in->ledger_gpu[li];
}

static bool merged_totals(void *ctx, const struct vt_input *in, size_t li, uint64_t *now,
                          uint64_t *peak)
{
    (void)ctx;
    long g = in->ledger_gpu[li];
    if (g <= 0)
        return false;
    const struct vt_gpu *gp = &in->group->gpus[g - 1];
    *now = gp->now_bytes;
    *peak = gp->peak_bytes;
    return true;
}

static void merged_oom(void *ctx, struct vt_input *in, size_t li, size_t oom)
{
    (void)ctx;
    struct vt_ledger *l = &in->replay.ledgers[li];
    note_others(in, l, &l->ooms[oom]);
}

/* ---- the merged pass ---- */

/* Traces read ahead on threads of their own: up to this many in a group
 * (each holds one more decompressed chunk, typically 1 MiB, at most 64 MiB),
 * and only when there are threads to spare. */
#define VT_READ_AHEAD_INPUTS 8

/* A trace's head read for its process record (host, session): the first
 * zstd block of its first chunk, which the tracer ends after that record
 * (trace_encoder.h); where it does not (older traces), the block holds it
 * with what follows; a record cut short is read again in full. */
#define VT_HEAD_BYTES 1u

static void feed_events(void *ctx, const struct vt_replay_mem *evs, size_t n)
{
    vt_replay_feed_mem_events(ctx, evs, n);
}

static void feed_record(void *ctx, const struct vt_record *rec)
{
    vt_replay_feed(ctx, rec);
}

/* One trace: nothing to merge, its records go in file order; the memory
 * events that succeeded (nearly all) in their compact form, anything else
 * as a whole record. With threads to spare (ahead) the records are decoded
 * on a thread of their own while this one replays them (decode_ahead.h). */
static void run_alone(struct vt_input *in, bool ahead)
{
    struct vt_decode_sink sink = {feed_events, feed_record, &in->replay, false};
    vt_replay_read_alone(&in->replay);
    int rc = ahead ? vt_decode_ahead(in->reader, &sink) : -2;
    in->state = rc == -2 ? vt_decode_inline(in->reader, &sink, UINT64_MAX) : rc; /* -2: no thread */
}

/* Several traces: in windows of time, their device ledgers' notes merged
 * into the GPU totals (group_merge.h). */
static bool run_merged(struct vt_analysis *a, struct vt_analysis_group *grp)
{
    struct vt_input **in = malloc(grp->n * sizeof *in);
    if (!in)
        return false;
    for (size_t k = 0; k < grp->n; k++)
        in[k] = &a->inputs[grp->members[k]];
    grp->by_notes = true; /* the ledgers stay unpointed: their changes are notes */
    struct vt_gpu_feed feed = {merged_change, merged_oom, merged_gpu_of, merged_totals, NULL};
    bool ok = vt_group_merge(in, grp->n, grp->threads, &feed);
    free(in);
    return ok;
}

/* The group's traces are read: their buffers and files go, so that memory
 * and open files hold the groups in flight, not every trace's. */
static void finish_group(struct vt_analysis *a, struct vt_analysis_group *grp)
{
    size_t fewest = SIZE_MAX;
    for (size_t k = 0; k < grp->n && grp->n > 1; k++) {
        size_t room = vt_replay_live_room(&a->inputs[grp->members[k]].replay);
        fewest = room < fewest ? room : fewest;
    }
    if (fewest != SIZE_MAX)
        __atomic_store_n(&a->live_hint, fewest, __ATOMIC_RELAXED); /* groups end side by side */
    for (size_t k = 0; k < grp->n; k++) {
        struct vt_input *in = &a->inputs[grp->members[k]];
        vt_replay_finish(&in->replay);
        vt_replay_settle(&in->replay); /* nothing is fed any more */
        vt_reader_release(in->reader); /* buffers and file, at its end */
        if (a->stacks) /* the nodes other ranks have too are kept once */
            vt_reader_share_stack_nodes(in->reader, a->stacks);
        vt_reader_suspend(in->reader); /* the file, if it did not get there */
    }
}

/* Each reader opens its file again at its first chunk (the analysis
 * suspended them once opened, unless there is one), so the group's files
 * are open from here to finish_group. */
static void run_group(struct vt_analysis *a, struct vt_analysis_group *grp)
{
    for (size_t k = 0; k < grp->n && a->stacks; k++) /* the earlier groups' nodes */
        vt_reader_follow_stack_share(a->inputs[grp->members[k]].reader, a->stacks);
    size_t live_hint = __atomic_load_n(&a->live_hint, __ATOMIC_RELAXED);
    for (size_t k = 0; k < grp->n && grp->n > 1 && live_hint; k++)
        vt_replay_expect_live(&a->inputs[grp->members[k]].replay, live_hint);
    for (size_t k = 0; k < grp->n && grp->read_ahead; k++)
        if (grp->n == 1) /* decoded ahead (run_alone): the two threads decompress too */
            vt_reader_read_ahead_shared(a->inputs[grp->members[k]].reader);
        else
            vt_reader_read_ahead(a->inputs[grp->members[k]].reader); /* best effort */
    for (size_t k = 0; k < grp->n && grp->n > 1 && !grp->read_ahead; k++)
        vt_reader_lean(a->inputs[grp->members[k]].reader);
    if (grp->n == 1)
        run_alone(&a->inputs[grp->members[0]], grp->read_ahead);
    else if (!run_merged(a, grp))
        grp->out_of_memory = true; /* nothing of the group is read */
    finish_group(a, grp);
}

/* ---- the pool ---- */

struct pool {
    size_t n;                  /* work items */
    _Atomic size_t next;
    void (*work)(void *ctx, size_t i);
    void *ctx;
};

static void *pool_main(void *arg)
{
    struct pool *p = arg;
    size_t i;
    while ((i = atomic_fetch_add(&p->next, 1)) < p->n)
        p->work(p->ctx, i);
    return NULL;
}

/* work(ctx, i) for i < n on up to nthreads threads, the caller's among them. */
static void pool_run(size_t nthreads, size_t n, void (*work)(void *, size_t), void *ctx)
{
    struct pool p = {.n = n, .work = work, .ctx = ctx};
    atomic_init(&p.next, 0);
    if (nthreads > n)
        nthreads = n;
    pthread_t *t = nthreads > 1 ? calloc(nthreads - 1, sizeof *t) : NULL;
    size_t started = 0;
    for (size_t k = 0; t && k + 1 < nthreads; k++, started++)
        if (pthread_create(&t[k], NULL, pool_main, &p) != 0)
            break; /* fewer threads: the same work */
    pool_main(&p);
    for (size_t k = 0; k < started; k++)
        pthread_join(t[k], NULL);
    free(t);
}

/* ---- groups ---- */

struct head {
    char *host, *session;
    bool keyed;
    uint64_t pid, start_ns; /* with host: the process */
};

/* Host and session from the process record at the trace's head. */
static void read_head(const char *path, struct head *h)
{
    for (int attempt = 0; attempt < 2 && !h->keyed; attempt++) {
        struct vt_reader *r;
        struct vt_read_error e;
        if (vt_reader_open_head(path, attempt ? 0 : VT_HEAD_BYTES, &r, &e) != 0)
            return;
        struct vt_record rec;
        if (vt_reader_next(r, &rec) > 0 && rec.type == VT_REC_PROCESS) {
            const struct vt_process_info *p = vt_reader_process(r);
            const char *session = vt_process_session(p);
            h->host = strdup(p && p->hostname ? p->hostname : "");
            h->session = session ? strdup(session) : NULL;
            h->keyed = h->host && (!session || h->session);
            h->pid = p->pid;
            h->start_ns = p->start_realtime_ns;
            if (!h->keyed) {
                free(h->host);
                free(h->session);
                h->host = h->session = NULL;
                attempt = 2; /* out of memory: a group of its own */
            }
        }
        vt_reader_close(r);
    }
}

struct head_job {
    struct vt_analysis *a;
    struct head *heads;
};

static void head_work(void *ctx, size_t i)
{
    struct head_job *j = ctx;
    read_head(j->a->inputs[i].path, &j->heads[i]);
}

/* ---- open files ---- */

/* Files left to the rest of the process: standard streams, the report's
 * output, a directory listing, a library's own. */
#define VT_FD_SPARE 16

/* Files open now (/proc/self/fd; 3 if it cannot be listed). */
static size_t files_open(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 3;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n > 0 ? n - 1 : 0; /* less the listing's own */
}

/* How many more files this process may open (the soft RLIMIT_NOFILE, less
 * those open and VT_FD_SPARE); SIZE_MAX without a limit. *soft: the limit. */
static size_t file_room(rlim_t *soft)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        *soft = RLIM_INFINITY;
        return SIZE_MAX;
    }
    *soft = rl.rlim_cur;
    size_t used = files_open() + VT_FD_SPARE;
    return rl.rlim_cur > used ? (size_t)(rl.rlim_cur - used) : 0;
}

/* The same, after raising the soft limit toward the hard one if it leaves
 * less than want: the only change of a limit the analyzer makes (before it
 * would refuse a group, or replay fewer groups at once), and only for this
 * process - `vramtrace run` forks its program before any analysis. */
static size_t file_room_for(size_t want, rlim_t *soft)
{
    size_t room = file_room(soft);
    struct rlimit rl;
    if (room >= want || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
        (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= rl.rlim_cur))
        return room;
    rlim_t more = (rlim_t)(want - room);
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max - rl.rlim_cur < more
                      ? rl.rlim_max
                      : rl.rlim_cur + more;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        return room;
    return file_room(soft);
}

/* What the groups in flight share: the files they hold (a group takes one
 * per trace before it starts) and the threads (a group takes its crew's).
 * A group waits for others to end if it must, and gives its share back
 * when it ends; a group needing more files than all is not read. Which
 * group waits changes when, not what: the figures are the same. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    size_t room;          /* not taken; SIZE_MAX: no limit */
    size_t limit;         /* room when no group holds any */
};

static void gate_init(struct gate *g, size_t limit)
{
    g->room = g->limit = limit;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->freed, NULL);
}

static void gate_destroy(struct gate *g)
{
    pthread_cond_destroy(&g->freed);
    pthread_mutex_destroy(&g->lock);
}

static void gate_take(struct gate *g, size_t n)
{
    if (g->limit == SIZE_MAX)
        return;
    pthread_mutex_lock(&g->lock);
    while (g->room < n)
        pthread_cond_wait(&g->freed, &g->lock);
    g->room -= n;
    pthread_mutex_unlock(&g->lock);
}

static void gate_give(struct gate *g, size_t n)
{
    if (g->limit == SIZE_MAX)
        return;
    pthread_mutex_lock(&g->lock);
    g->room += n;
    pthread_cond_broadcast(&g->freed);
    pthread_mutex_unlock(&g->lock);
}

struct group_job {
    struct vt_analysis *a;
    struct gate files, threads;
};

/* Files first, then threads, in every group: no two wait on each other. */
static void group_work(void *ctx, size_t i)
{
    struct group_job *j = ctx;
    struct vt_analysis_group *grp = &j->a->groups[j->a->group_order[i]];
    if (grp->n > j->files.limit) {
        grp->too_many_files = true; /* said after the run (analysis_run_with) */
        finish_group(j->a, grp);
        return;
    }
    gate_take(&j->files, grp->n);
    gate_take(&j->threads, grp->threads);
    vt_heap_pages_advise(); /* where the groups before grew it */
    run_group(j->a, grp);
    gate_give(&j->threads, grp->threads);
    gate_give(&j->files, grp->n);
}

static void free_groups(struct vt_analysis *a)
{
    for (size_t g = 0; g < a->ngroups; g++) {
        struct vt_analysis_group *grp = &a->groups[g];
        for (size_t k = 0; k < grp->ngpus; k++)
            free_gpu(&grp->gpus[k]);
        free(grp->gpus);
        free(grp->members);
        free(grp->host);
        free(grp->session);
        free(grp->places);
        vt_pair_map_free(&grp->gpu_of);
    }
    free(a->groups);
    free(a->group_order);
    a->groups = NULL;
    a->group_order = NULL;
    a->ngroups = 0;
}

/* Inputs of one host and session together (those of no known process
 * record alone), in order of their first input. */
/* A trace read twice (a copy of another: the same host, pid and start
 * time) counts once: the later is left out, said on err. */
static void drop_repeats(struct vt_analysis *a, struct head *heads, FILE *err)
{
    struct vt_pair_map first; /* (pid, start) -> index kept */
    vt_pair_map_init(&first);
    size_t kept = 0;
    for (size_t i = 0; i < a->ninputs; i++) {
        struct head *h = &heads[i];
        uint64_t *k = h->keyed ? vt_pair_map_get(&first, h->pid, h->start_ns) : NULL;
        if (k && !strcmp(heads[*k].host, h->host)) {
            fprintf(err, "vramtrace: %s: the same process as %s (its host, pid %" PRIu64
                         " and start): read once\n",
                    a->inputs[i].path, a->inputs[*k].path, h->pid);
            vt_reader_close(a->inputs[i].reader);
            free(a->inputs[i].path);
            free(h->host);
            free(h->session);
            a->nfiles--;
            continue;
        }
        if (h->keyed && !k)
            vt_pair_map_put_new(&first, h->pid, h->start_ns, kept); /* out of memory: kept all */
        heads[kept] = *h;
        a->inputs[kept++] = a->inputs[i];
    }
    a->ninputs = kept;
    vt_pair_map_free(&first);
}

static bool make_groups(struct vt_analysis *a, size_t nthreads, FILE *err)
{
    struct head *heads = calloc(a->ninputs, sizeof *heads);
    if (!heads)
        return false;
    if (a->ninputs > 1) {
        /* a file open per thread */
        rlim_t soft;
        size_t room = file_room(&soft);
        struct head_job job = {a, heads};
        pool_run(room < nthreads ? (room ? room : 1) : nthreads, a->ninputs, head_work, &job);
        drop_repeats(a, heads, err);
    }
    a->groups = calloc(a->ninputs, sizeof *a->groups);
    a->group_order = calloc(a->ninputs, sizeof *a->group_order);
    bool ok = a->groups && a->group_order;
    for (size_t i = 0; ok && i < a->ninputs; i++) {
        struct head *h = &heads[i];
        size_t g = 0;
        if (h->keyed)
            while (g < a->ngroups && !(a->groups[g].keyed && !strcmp(a->groups[g].host, h->host) &&
                                       same_session(a->groups[g].session, h->session)))
                g++;
        else
            g = a->ngroups;
        struct vt_analysis_group *grp = &a->groups[g];
        if (g == a->ngroups) {
            a->ngroups++;
            vt_pair_map_init(&grp->gpu_of);
            grp->host = h->host;
            grp->session = h->session;
            grp->keyed = h->keyed;
            h->host = h->session = NULL;
        }
        if (!vt_grow_array((void **)&grp->members, &grp->cap, grp->n + 1, sizeof *grp->members)) {
            ok = false;
            break;
        }
        grp->members[grp->n++] = i;
        a->inputs[i].group = grp;
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        free(heads[i].host);
        free(heads[i].session);
    }
    free(heads);
    if (!ok)
        return false;
    /* The biggest groups first, so that the last to end is a small one. */
    for (size_t g = 0; g < a->ngroups; g++) {
        size_t at = g;
        while (at > 0 && a->groups[a->group_order[at - 1]].n < a->groups[g].n) {
            a->group_order[at] = a->group_order[at - 1];
            at--;
        }
        a->group_order[at] = g;
    }
    return true;
}

/* Traces a crew thread should have at least: with fewer, a window's
 * slowest trace holds the others at its end. */
#define VT_CREW_MIN_TRACES 4

/* The threads that replay a group's traces together (group_merge.h): as
 * many as it has traces for, so that a big group takes every thread and
 * the groups run one at a time (the threads gate: memory holds one
 * group's chunks and notes, not one group's per thread: 1024x100k took
 * 612 MiB with two groups at once, where one thread took 469), and small
 * groups run side by side. A group of one trace has no crew (its reading
 * ahead is the groups' read_ahead). */
static size_t crew_size(const struct vt_analysis_group *grp, size_t ngroups, size_t nthreads)
{
    if (grp->n < 2)
        return 1;
    size_t crew = grp->n / VT_CREW_MIN_TRACES;
    if (ngroups < nthreads && crew < nthreads / ngroups)
        crew = nthreads / ngroups; /* threads the groups leave unused */
    return crew < 1 ? 1 : crew > nthreads ? nthreads : crew;
}

/* The groups' GPUs become the analysis's, in group order. */
static bool join_gpus(struct vt_analysis *a)
{
    bool ok = true;
    for (size_t g = 0; g < a->ngroups; g++) {
        struct vt_analysis_group *grp = &a->groups[g];
        size_t base = a->ngpus;
        if (grp->ngpus && !vt_grow_array((void **)&a->gpus, &a->gpus_cap, base + grp->ngpus,
                                         sizeof *a->gpus)) {
            ok = false;
            for (size_t k = 0; k < grp->ngpus; k++)
                free_gpu(&grp->gpus[k]);
            grp->ngpus = 0;
            continue;
        }
        if (grp->ngpus) /* a group without a GPU has no array (memcpy wants one) */
            memcpy(&a->gpus[base], grp->gpus, grp->ngpus * sizeof *grp->gpus);
        a->ngpus += grp->ngpus;
        for (size_t k = 0; k < grp->nplaces; k++)
            if (!vt_pair_map_put(&a->gpu_of, grp->places[k].input, grp->places[k].device1,
                                 base + grp->places[k].gpu))
                ok = false;
        for (size_t k = 0; k < grp->n; k++) {
            struct vt_input *in = &a->inputs[grp->members[k]];
            for (size_t li = 0; li < in->replay.nledgers; li++)
                if (in->ledger_gpu[li] > 0)
                    in->ledger_gpu[li] += (int32_t)base;
        }
        grp->ngpus = 0; /* the analysis's now */
        if (grp->out_of_memory)
            ok = false;
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
        for (size_t li = 0; li < in->replay.nledgers; li++)
            if (in->ledger_gpu[li] > 0)
                point_ledger(a->gpus, in, &in->replay.ledgers[li], in->ledger_gpu[li] - 1);
        in->group = NULL;
    }
    return ok;
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
    uint64_t work_bytes = 0; /* of the traces: how many threads pay */
    for (size_t i = 0; i < files.n; i++) {
        struct vt_read_error e;
        struct vt_reader *r;
        if (vt_reader_open(files.paths[i], &r, &e) != 0) {
            vt_input_error(&a->errors, err, e.message);
            free(files.paths[i]);
            a->skipped++;
            status = 2;
            continue;
        }
        /* Many files are opened again when their group is read, so that
         * those waiting hold none; one alone keeps its file: there is
         * nothing to make room for, and opening it once is enough. */
        if (files.n > 1)
            vt_reader_suspend(r);
        work_bytes += vt_reader_file_size(r); /* its size when opened */
        struct vt_input *in = &a->inputs[a->ninputs++];
        in->path = files.paths[i];
        in->reader = r;
    }
    free(files.paths);
    vt_pair_map_free(&files.seen); /* the paths are the inputs' now; the map of what was seen is not */
    if (a->ninputs > 1)
        a->stacks = vt_stack_share_new(); /* NULL: nothing shared */
    size_t nthreads = vt_analysis_threads(work_bytes);
    if (!make_groups(a, nthreads, err)) {
        fprintf(err, "vramtrace: out of memory\n");
        free_groups(a);
        return 2;
    }
    for (size_t g = 0; g < a->ngroups; g++)
        /* Decompression on threads of their own too (best effort): a chunk
         * buffer more per trace, so only for small groups, and only where
         * the groups leave threads unused. */
    {
        a->groups[g].read_ahead = a->groups[g].n <= VT_READ_AHEAD_INPUTS && nthreads > 1 &&
                                  (a->ngroups == 1 || a->ngroups < nthreads);
        a->groups[g].threads = crew_size(&a->groups[g], a->ngroups, nthreads);
    }
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
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
    /* Files: those of the biggest groups that run at once (as many as
     * their crews leave threads for), if the limit allows (group_order is
     * biggest first). */
    size_t want = 0;
    for (size_t k = 0, taken = 0; k < a->ngroups && taken < nthreads; k++) {
        want += a->groups[a->group_order[k]].n;
        taken += a->groups[a->group_order[k]].threads;
    }
    struct group_job gjob = {.a = a};
    rlim_t soft;
    size_t file_limit = file_room_for(want, &soft);
    gate_init(&gjob.files, file_limit ? file_limit : 1); /* 0: a try, the error is the file's */
    gate_init(&gjob.threads, nthreads);
    pool_run(nthreads, a->ngroups, group_work, &gjob);
    gate_destroy(&gjob.threads);
    gate_destroy(&gjob.files);
    for (size_t g = 0; g < a->ngroups; g++) {
        struct vt_analysis_group *grp = &a->groups[g];
        if (!grp->too_many_files)
            continue;
        size_t need = (size_t)soft - gjob.files.limit + grp->n;
        fprintf(err,
                "vramtrace: %zu traces of host %s%s%s share its GPUs: they are replayed "
                "together, with their %zu files open at once, and the limit of open files "
                "(`ulimit -n`: %llu) leaves room for %zu; they are not read (raise it: "
                "`ulimit -n %zu` or more)\n",
                grp->n, grp->host ? grp->host : "?", grp->session ? ", session " : "",
                grp->session ? grp->session : "", grp->n, (unsigned long long)soft,
                gjob.files.limit, need);
        a->skipped += grp->n;
        a->not_read += grp->n;
        status = 2;
    }
    if (!join_gpus(a))
        a->out_of_memory = true;
    free_groups(a);
    for (size_t i = 0; i < a->ninputs; i++) {
        struct vt_input *in = &a->inputs[i];
        if (in->state < 0) {
            vt_input_error(&a->errors, err, vt_reader_error(in->reader)->message);
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
    vt_input_errors_summary(&a->errors, err);
    if (!assign_jobs(a))
        a->out_of_memory = true;
    if (a->out_of_memory)
        fprintf(err, "vramtrace: warning: the analyzer ran out of memory; figures are partial\n");
    return status;
}

void vt_analysis_free(struct vt_analysis *a)
{
    vt_input_errors_free(&a->errors);
    for (size_t i = 0; i < a->ninputs; i++) {
        vt_replay_free(&a->inputs[i].replay);
        vt_reader_close(a->inputs[i].reader);
        free(a->inputs[i].path);
    }
    free(a->inputs);
    vt_stack_share_free(a->stacks); /* after the readers, whose tables it holds */
    for (size_t g = 0; g < a->ngpus; g++)
        free_gpu(&a->gpus[g]);
    free(a->gpus);
    free(a->jobs);
    vt_pair_map_free(&a->gpu_of);
    memset(a, 0, sizeof *a);
}
