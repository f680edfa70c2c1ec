/*
 * Benchmark 3's input: a big trace made directly with the trace encoder
 * (preload/record/encoding/trace_encoder.h), without running anything.
 *
 *   synth_trace --events N --out FILE [--live K] [--stacks S] [--depth D]
 *               [--phase-every P] [--fail-every F] [--devices G]
 *   synth_trace --ranks R --gpus G --dir DIR [--events N] [--live K] ...
 *
 * The second form is a job: R rank traces of N events
 * each in DIR (job.rank0000.vtrace ...), one session, as torchrun writes
 * them: each process record says RANK, LOCAL_RANK, WORLD_SIZE, the
 * session and CUDA_VISIBLE_DEVICES; R / G ranks share each GPU (its UUID
 * in their device record, device 0 in each process), 8 GPUs a host, so a
 * host "node007" holds 8 GPUs and 8 R / G ranks; sizes are an eighth of
 * the single trace's, so that 8 ranks of a GPU fit its 80 GiB. Every rank has its own
 * random stream; all start at the same instant of their host's clock.
 *
 * The trace is what a long training job with a flat live set looks like:
 * first K allocations, then alternately the free of a random live one and
 * a new allocation in its place, so at most K allocations are ever live and
 * an analyzer whose memory grows with N (not K) shows it. Each allocation
 * comes from one of S stacks (default 512) of D frames (default 24) that
 * share prefixes as real call trees do (S leaves of a tree of branching 8),
 * chosen with a skewed distribution (a few hot stacks, a long tail); sizes
 * come from a table of 64 tensor-like sizes; time advances 1-4 us per
 * event. Chunks are closed at 1 MiB of records, as the writer does.
 *
 * --phase-every P: every P events the NVTX range "step" pushed before is
 * popped and a new one pushed, and the start/end range "epoch" likewise
 * (ids from 1); --fail-every F: every F events a failed allocation of
 * 1 TiB (out of memory), which counts as an event. The exports' caps
 * test uses both: a long trace whose every phase and failure must be
 * kept. --devices G: slot k's allocations on device k % G (default 1).
 *
 * Job form only: --dense-rank R: rank R writes 32 times the events, 32 times
 * as fast (many in one microsecond, as a busy rank beside quiet ones);
 * --truth FILE: the GPUs' combined peaks and each failure's other processes
 * as the events were written (synth_job_truth.h), the merged replay's truth;
 * --aslr 1: the frames are in a module (/bench/libtrain.so) each rank maps at a
 * base of its own, as address space randomization does: the same stacks
 * at other addresses in every rank.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth_job_truth.h"
#include "trace_encoder.h"

#define CHUNK_RAW (1u << 20)
#define API_ALLOC 1
#define API_FREE 2
#define THREAD_ID 1

struct synth {
    FILE *out;
    struct vt_encoder enc;
    void *cctx;
    struct vt_bytes frame;
    uint64_t chunks, events, time_ns, rng;
};

static uint64_t next_random(struct synth *s)
{ /* splitmix64 */
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void flush_chunk(struct synth *s)
{
    if (s->enc.raw.len == 0)
        return;
    if (vt_chunk_frame(&s->enc, s->cctx, &s->frame) != 0 ||
        fwrite(s->frame.data, 1, s->frame.len, s->out) != s->frame.len) {
        fprintf(stderr, "synth_trace: cannot write a chunk\n");
        exit(1);
    }
    s->chunks++;
    vt_encoder_begin_chunk(&s->enc);
}

/* Builds the stack tree and returns the node id of each of the S leaves.
 * Node ids are the order of the records, starting at 1; a parent (the
 * caller) is written before its children. The first B levels branch eight
 * ways (8^B >= S), so leaves share the prefixes of their base-8 numbers;
 * below that each path goes on alone to D frames. */
static uint64_t *make_stacks(struct synth *s, unsigned nstacks, unsigned depth, uint64_t base)
{
    unsigned branch_levels = 1;
    while ((1ull << (3 * branch_levels)) < nstacks)
        branch_levels++;
    uint64_t *leaf = malloc(nstacks * sizeof *leaf);
    uint64_t *node = calloc((size_t)depth * nstacks, sizeof *node);
    if (!leaf || !node) {
        perror("synth_trace");
        exit(1);
    }
    uint64_t next_id = 1;
    for (unsigned i = 0; i < nstacks; i++) {
        uint64_t parent = 0;
        for (unsigned level = 0; level < depth; level++) {
            unsigned prefix =
                level < branch_levels ? i >> (3 * (branch_levels - 1 - level)) : i;
            uint64_t *id = &node[(size_t)level * nstacks + prefix];
            if (!*id) {
                uint64_t ip = base + 0x400000u + level * 0x10000u + prefix * 0x10u + 0xbu;
                vt_encode_stack_node(&s->enc, parent, ip);
                *id = next_id++;
            }
            parent = *id;
        }
        leaf[i] = parent;
    }
    free(node);
    return leaf;
}

static void usage(const char *argv0)
{
    fprintf(stderr,
            "usage: %s --events N --out FILE [--live K] [--stacks S] [--depth D]\n"
            "       %s --ranks R --gpus G --dir DIR [--events N] [--live K] [--stacks S] "
            "[--depth D]\n",
            argv0, argv0);
    exit(2);
}

/* One process of a job: rank < 0 for the single-trace form. */
struct rank_info {
    long rank, world, gpus;
};

#define GPUS_PER_HOST 8
#define SESSION "synth-job-0001"

struct extras {
    long long phase_every, fail_every;
    long devices;
    long dense_rank;       /* -1: none */
    long scale;            /* --scale: every size times this */
    int truth;             /* note every change for --truth */
    int aslr;              /* --aslr: the frames in a module at a base a rank */
    long rank;             /* the rank being written, and its GPU's UUID */
    uint8_t uuid[VT_UUID_SIZE];
    uint64_t next_phase, next_fail; /* the event counts they next turn at */
    /* what was written, printed for the tests' truth */
    uint64_t pushes, starts, failures, live_bytes, peak_bytes;
};

static int write_trace(const char *path, long long events, long live, unsigned nstacks,
                       unsigned depth, const struct rank_info *ri, struct extras *x);

/* A time as the trace keeps it: in whole time units. */
static uint64_t stored_time(const struct synth *s, uint64_t time_ns)
{
    return time_ns / s->enc.time_unit_ns * s->enc.time_unit_ns;
}

/* For --truth: a change of the rank's bytes on its device's GPU. */
static void note_truth(const struct synth *s, const struct extras *x, long device,
                       uint64_t time_ns, int64_t delta, int failed)
{
    uint8_t uuid[VT_UUID_SIZE];
    memcpy(uuid, x->uuid, sizeof uuid);
    uuid[6] = (uint8_t)device;
    truth_event(x->rank, uuid, stored_time(s, time_ns), delta, failed);
}

int main(int argc, char **argv)
{
    long long events = 1000000;
    long live = 1000, ranks = 0, gpus = 0;
    unsigned nstacks = 512, depth = 24;
    const char *path = NULL, *dir = NULL, *truth = NULL;
    struct extras x = {.devices = 1, .dense_rank = -1, .scale = 1};
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc)
            usage(argv[0]);
        if (!strcmp(argv[i], "--events"))
            events = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--out"))
            path = argv[++i];
        else if (!strcmp(argv[i], "--live"))
            live = atol(argv[++i]);
        else if (!strcmp(argv[i], "--stacks"))
            nstacks = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--depth"))
            depth = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ranks"))
            ranks = atol(argv[++i]);
        else if (!strcmp(argv[i], "--gpus"))
            gpus = atol(argv[++i]);
        else if (!strcmp(argv[i], "--dir"))
            dir = argv[++i];
        else if (!strcmp(argv[i], "--phase-every"))
            x.phase_every = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--fail-every"))
            x.fail_every = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--devices"))
            x.devices = atol(argv[++i]);
        else if (!strcmp(argv[i], "--scale"))
            x.scale = atol(argv[++i]);
        else if (!strcmp(argv[i], "--dense-rank"))
            x.dense_rank = atol(argv[++i]);
        else if (!strcmp(argv[i], "--truth"))
            truth = argv[++i];
        else if (!strcmp(argv[i], "--aslr"))
            x.aslr = atoi(argv[++i]);
        else
            usage(argv[0]);
    }
    if (events < 2 || live < 1 || nstacks < 1 || depth < 1 || x.phase_every < 0 ||
        x.fail_every < 0 || x.devices < 1 || x.devices > 64)
        usage(argv[0]);
    if (!dir) {
        if (!path || ranks)
            usage(argv[0]);
        return write_trace(path, events, live, nstacks, depth, NULL, &x);
    }
    if (path || ranks < 1 || gpus < 1 || ranks % gpus)
        usage(argv[0]);
    x.truth = truth != NULL;
    for (long r = 0; r < ranks; r++) {
        char name[4096];
        snprintf(name, sizeof name, "%s/job.rank%04ld.vtrace", dir, r);
        struct rank_info ri = {r, ranks, gpus};
        long long n = r == x.dense_rank ? 32 * events : events;
        if (write_trace(name, n, live, nstacks, depth, &ri, &x) != 0)
            return 1;
    }
    if (truth) {
        FILE *f = fopen(truth, "w");
        if (!f || truth_write(f) != 0 || fclose(f) != 0) {
            perror(truth);
            return 1;
        }
    }
    return 0;
}

#define STR_STEP 1  /* string ids: the order of their records, from 1 */
#define STR_EPOCH 2

/* Every phase_every events: the step and epoch ranges turn over. */
static void phases(struct synth *s, struct extras *x, uint64_t *epoch)
{
    if (!x->phase_every || s->events < x->next_phase)
        return;
    x->next_phase += (uint64_t)x->phase_every;
    if (*epoch) {
        vt_encode_range_pop(&s->enc, THREAD_ID, s->time_ns, 0);
        vt_encode_range_end(&s->enc, THREAD_ID, s->time_ns, *epoch);
    }
    ++*epoch;
    x->pushes++;
    x->starts++;
    vt_encode_range_push(&s->enc, THREAD_ID, s->time_ns, 0, STR_STEP);
    vt_encode_range_start(&s->enc, THREAD_ID, s->time_ns, *epoch, 0, STR_EPOCH);
}

/* Every fail_every events: an allocation the device cannot hold. */
static void failure(struct synth *s, struct extras *x, uint64_t stack)
{
    if (!x->fail_every || s->events < x->next_fail)
        return;
    x->next_fail += (uint64_t)x->fail_every;
    struct vt_mem_record m = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = API_ALLOC,
                              .thread = THREAD_ID, .device = 0, .size = 1ull << 40,
                              .stack = stack, .result = 2 /* CUDA_ERROR_OUT_OF_MEMORY */,
                              .free_bytes = 1ull << 30, .total_bytes = 80ull << 30};
    s->time_ns += 1000;
    vt_encode_mem(&s->enc, s->time_ns, &m);
    if (x->truth)
        note_truth(s, x, 0, s->time_ns, 0, 1);
    s->events++;
    x->failures++;
}

static int write_trace(const char *path, long long events, long live, unsigned nstacks,
                       unsigned depth, const struct rank_info *ri, struct extras *x)
{
    x->next_phase = (uint64_t)x->phase_every;
    x->next_fail = (uint64_t)x->fail_every;
    x->pushes = x->starts = x->failures = x->live_bytes = x->peak_bytes = 0;
    struct synth s = {.rng = 7, .time_ns = 1000000000ull};
    /* A job's ranks share GPUs: sizes an eighth, so 8 ranks fit 80 GiB */
    unsigned size_shift = ri ? 3 : 0;
    long per_gpu = ri ? ri->world / ri->gpus : 1;
    long gpu = ri ? ri->rank / per_gpu : 0;
    long host = gpu / GPUS_PER_HOST;
    long per_host = per_gpu * GPUS_PER_HOST;
    char hostname[32] = "bench", v_rank[24], v_local[24], v_world[24], v_cvd[24];
    struct vt_env_var env[5];
    size_t nenv = 0;
    if (ri) {
        s.rng = 7 + 0x1000193ull * (uint64_t)(ri->rank + 1);
        snprintf(hostname, sizeof hostname, "node%03ld", host);
        snprintf(v_rank, sizeof v_rank, "%ld", ri->rank);
        snprintf(v_local, sizeof v_local, "%ld", ri->rank % per_host);
        snprintf(v_world, sizeof v_world, "%ld", ri->world);
        snprintf(v_cvd, sizeof v_cvd, "%ld", gpu % GPUS_PER_HOST);
        env[nenv++] = (struct vt_env_var){"RANK", v_rank};
        env[nenv++] = (struct vt_env_var){"LOCAL_RANK", v_local};
        env[nenv++] = (struct vt_env_var){"WORLD_SIZE", v_world};
        env[nenv++] = (struct vt_env_var){"CUDA_VISIBLE_DEVICES", v_cvd};
        env[nenv++] = (struct vt_env_var){"VRAMTRACE_SESSION", SESSION};
    }
    s.out = fopen(path, "wb");
    s.cctx = vt_chunk_cctx_new();
    if (!s.out || !s.cctx) {
        perror(path);
        if (s.out)
            fclose(s.out);
        return 1;
    }
    vt_encoder_init(&s.enc);
    vt_encoder_set_time_unit(&s.enc, VT_TIME_UNIT_NS_DEFAULT); /* as the recorder writes */
    uint8_t preamble[VT_PREAMBLE_SIZE];
    vt_encode_preamble(preamble, s.enc.time_unit_ns);
    fwrite(preamble, 1, sizeof preamble, s.out);

    const char *args[] = {"synth_trace"};
    struct vt_process_info facts = {
        .pid = ri ? 10000 + (uint64_t)ri->rank : 4242, .ppid = 1,
        .start_realtime_ns = 1700000000000000000ull,
        .start_mono_ns = s.time_ns, .hostname = hostname, .exe = "/bench/train.py",
        .argc = 1, .argv = args, .nenv = nenv, .env = env, .tool_version = "synth",
        .stack_depth = depth, .flush_interval_ms = 100,
    };
    vt_encode_process(&s.enc, &facts);
    vt_encode_thread(&s.enc, THREAD_ID, 4242, "python", 6);
    uint8_t uuid[VT_UUID_SIZE] = {1, 2, 3};
    if (ri) { /* one UUID per GPU of the job */
        uuid[4] = (uint8_t)(gpu >> 8);
        uuid[5] = (uint8_t)gpu;
    }
    memcpy(x->uuid, uuid, sizeof uuid);
    x->rank = ri ? ri->rank : 0;
    for (long d = 0; d < x->devices; d++) {
        uuid[6] = (uint8_t)d;
        vt_encode_device(&s.enc, (uint64_t)d, uuid, "Synthetic GPU", 13, 80ull << 30);
    }
    vt_encode_api(&s.enc, API_ALLOC, "cuMemAlloc_v2");
    vt_encode_api(&s.enc, API_FREE, "cuMemFree_v2");
    vt_encode_string(&s.enc, "step", 4);   /* STR_STEP */
    vt_encode_string(&s.enc, "epoch", 5);  /* STR_EPOCH */
    uint64_t epoch = 0, base = 0;
    if (x->aslr && ri) {
        static const uint8_t build_id[] = {0x5e, 0x17, 0xb0, 0x0c};
        base = 0x7f0000000000ull + 0x200000000ull * (uint64_t)(ri->rank + 1);
        vt_encode_module(&s.enc, 1, base, base, base + 0x10000000u, "/bench/libtrain.so",
                         build_id, sizeof build_id);
    }
    uint64_t *leaf = make_stacks(&s, nstacks, depth, base);

    /* A flat live set: slot k holds one allocation at a fixed address. */
    uint64_t *slot_size = calloc((size_t)live, sizeof *slot_size);
    uint64_t *slot_stack = calloc((size_t)live, sizeof *slot_stack);
    static const uint64_t unit[4] = {512, 4096, 1u << 20, 16u << 20};
    struct vt_mem_record m = {.kind = VT_KIND_DEVICE, .thread = THREAD_ID, .device = 0};
    long long k_next = 0;
    unsigned speed = ri && ri->rank == x->dense_rank ? 32 : 1;
    while (s.events < (uint64_t)events) {
        uint64_t r = next_random(&s);
        long k;
        if (k_next < live) {
            k = (long)k_next++;
        } else {
            k = (long)(r % (uint64_t)live);
            m.op = VT_OP_FREE;
            m.api = API_FREE;
            m.device = k % x->devices;
            m.addr = 0x200000000000ull + (uint64_t)k * (64ull << 20);
            m.size = slot_size[k];
            m.stack = slot_stack[k];
            x->live_bytes -= m.size;
            s.time_ns += (1000 + (r >> 40) % 3000) / speed;
            vt_encode_mem(&s.enc, s.time_ns, &m);
            if (x->truth)
                note_truth(&s, x, (long)m.device, s.time_ns, -(int64_t)m.size, 0);
            s.events++;
            r = next_random(&s);
        }
        /* Skewed stack choice: the minimum of two uniform draws. */
        unsigned a = (unsigned)(r % nstacks), b = (unsigned)((r >> 16) % nstacks);
        slot_stack[k] = leaf[a < b ? a : b];
        slot_size[k] = (unit[(r >> 32) & 3] * (1 + ((r >> 34) & 15)) >> size_shift) *
                       (uint64_t)x->scale;
        m.op = VT_OP_ALLOC;
        m.api = API_ALLOC;
        m.device = k % x->devices;
        m.addr = 0x200000000000ull + (uint64_t)k * (64ull << 20);
        m.size = slot_size[k];
        m.stack = slot_stack[k];
        x->live_bytes += m.size;
        if (x->live_bytes > x->peak_bytes)
            x->peak_bytes = x->live_bytes;
        s.time_ns += (1000 + (r >> 44) % 3000) / speed;
        vt_encode_mem(&s.enc, s.time_ns, &m);
        if (x->truth)
            note_truth(&s, x, (long)m.device, s.time_ns, (int64_t)m.size, 0);
        s.events++;
        phases(&s, x, &epoch);
        if (s.events < (uint64_t)events)
            failure(&s, x, m.stack);
        if (s.enc.raw.len >= CHUNK_RAW)
            flush_chunk(&s);
    }
    vt_encode_trailer(&s.enc, s.time_ns, s.events, s.chunks + 1, 0);
    flush_chunk(&s);
    fclose(s.out);
    if (!ri || ri->rank == ri->world - 1)
        printf("synth_trace events=%llu chunks=%llu%s\n", (unsigned long long)s.events,
               (unsigned long long)s.chunks, ri ? " (per rank)" : "");
    if (!ri) /* the truth an export test checks against */
        printf("pushes=%llu starts=%llu failures=%llu live=%ld peak_bytes=%llu "
               "final_bytes=%llu\n",
               (unsigned long long)x->pushes, (unsigned long long)x->starts,
               (unsigned long long)x->failures, live, (unsigned long long)x->peak_bytes,
               (unsigned long long)x->live_bytes);
    vt_encoder_free(&s.enc);
    vt_bytes_free(&s.frame);
    vt_chunk_cctx_free(s.cctx);
    free(leaf);
    free(slot_size);
    free(slot_stack);
    return 0;
}
