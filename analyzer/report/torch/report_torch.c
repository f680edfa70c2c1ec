/*
 * A trace's allocation failure, told again with PyTorch's own numbers when
 * the Python bootstrap (python/, docs/user/PYTORCH.md) wrote the allocator's
 * snapshot at it: the "vramtrace.torch" mark that follows the failure
 * names the snapshot (beside the trace) and the observer's figures;
 * the snapshot is read and judged by the snapshot analysis's own rule
 * (vt_snap_oom_judge), so the driver's view - which cannot see inside
 * segments - gets the allocator's: reserved, allocated, reserved but
 * unallocated, the largest free block against the request, the live
 * tensors by Python stack, and the advice that fits - checked by the
 * allocator model (analyzer/simulate/): whether the failed request would
 * have fit with expandable_segments:True on this device, with the
 * recorded settings as the control that must fail again. Text and JSON
 * ("allocator_view" of a failure) say the same, from one struct torch_view.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "sim_input.h"
#include "sim_run.h"
#include "snapshot_analysis.h"
#include "snapshot_render.h"

#define TORCH_DOMAIN "vramtrace.torch"

struct torch_mark {
    int64_t device;
    uint64_t n, alloc, device_allocated, device_free;
    char snapshot[256];
};

/* "key=value" among the blank-separated words of text. */
static bool field(const char *text, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, " ");
        if (len > klen && !strncmp(p, key, klen) && p[klen] == '=') {
            size_t v = len - klen - 1;
            if (v >= n)
                return false;
            memcpy(out, p + klen + 1, v);
            out[v] = '\0';
            return true;
        }
        p += len;
        while (*p == ' ')
            p++;
    }
    return false;
}

static bool field_u64(const char *text, const char *key, uint64_t *v)
{
    char buf[32], *end;
    if (!field(text, key, buf, sizeof buf) || !buf[0])
        return false;
    *v = strtoull(buf, &end, 10);
    return *end == '\0';
}

/* The bootstrap's mark for the request ooms[first .. end) of l: the first
 * "oom" mark of the vramtrace.torch domain on its device after its first
 * failure and before the next request's. */
static bool mark_for(struct vt_report *rep, size_t input, const struct vt_ledger *l, size_t first,
                     size_t end, struct torch_mark *m)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    const struct vt_oom *o = &l->ooms[first];
    uint64_t until = end < l->nooms ? l->ooms[end].time_ns : UINT64_MAX;
    for (size_t k = 0; k < rp->nmarks; k++) {
        const struct vt_mark *mk = &rp->marks[k];
        if (mk->time_ns < o->time_ns || mk->time_ns >= until || !mk->domain ||
            strcmp(vt_report_string(rep, input, mk->domain), TORCH_DOMAIN) != 0)
            continue;
        const char *text = vt_report_string(rep, input, mk->name);
        uint64_t dev;
        if (strncmp(text, "oom ", 4) != 0 || !field_u64(text, "device", &dev) ||
            (int64_t)dev != o->device)
            continue;
        memset(m, 0, sizeof *m);
        m->device = (int64_t)dev;
        field_u64(text, "n", &m->n);
        field_u64(text, "alloc", &m->alloc);
        field_u64(text, "device_allocated", &m->device_allocated);
        field_u64(text, "device_free", &m->device_free);
        if (!field(text, "snapshot", m->snapshot, sizeof m->snapshot))
            m->snapshot[0] = '\0';
        return true;
    }
    return false;
}

static const char *b(uint64_t v, char *buf)
{
    return vt_format_bytes(v, buf, 32);
}

const char *vt_report_mark_text(struct vt_report *rep, size_t input, const struct vt_mark *mk,
                                char *buf, size_t n)
{
    const char *text = vt_report_string(rep, input, mk->name);
    if (!text)
        return "?";
    if (!mk->domain || strcmp(vt_report_string(rep, input, mk->domain), TORCH_DOMAIN) != 0)
        return text;
    char snap[256], b1[32], b2[32];
    if (!strncmp(text, "exit ", 5) && field(text, "snapshot", snap, sizeof snap) && snap[0]) {
        snprintf(buf, n, "PyTorch's allocator at exit (with its history): snapshot %s", snap);
        return buf;
    }
    if (strncmp(text, "oom ", 4) != 0)
        return text;
    uint64_t obs = 0, dev = 0, alloc = 0, device_free = 0;
    if (!field_u64(text, "n", &obs) || !field_u64(text, "device", &dev) ||
        !field_u64(text, "alloc", &alloc) || !field_u64(text, "device_free", &device_free))
        return text;
    if (!field(text, "snapshot", snap, sizeof snap) || !snap[0] || !strcmp(snap, "-"))
        snprintf(snap, sizeof snap, "none written");
    snprintf(buf, n, "PyTorch out of memory #%" PRIu64 " on device %" PRIu64 ": a %s segment "
             "asked, %s free on the device; snapshot %s", obs + 1, dev, b(alloc, b1),
             b(device_free, b2), snap);
    return buf;
}

/* The what-if the advice is checked with (the runs `vramtrace simulate
 * -a recorded -a pytorch:expandable_segments:True -c CAPACITY SNAPSHOT`
 * makes): the snapshot's history replayed to its oom entry. */
#define TORCH_SIM_RUNS 2
static const char *const sim_labels[TORCH_SIM_RUNS] = {"recorded",
                                                       "pytorch:expandable_segments:True"};

struct torch_sim_run {
    struct vt_sim_result res;
    bool served;                 /* every request that failed when recorded served */
    bool at_recorded_failure;    /* failed at a request that failed when recorded */
};

struct torch_sim {
    bool ran;
    const char *not_run;         /* why not (ran false) */
    uint64_t capacity;
    size_t failed_requests;      /* oom entries in the history */
    struct torch_sim_run runs[TORCH_SIM_RUNS];
};

/* One failure told with the allocator's snapshot. */
struct torch_view {
    struct torch_mark m;
    char path[4096];             /* "" when no snapshot was written */
    char error[512];             /* "" when it was read */
    struct vt_snap_analysis a;
    bool has_analysis;
    bool has_device;             /* the snapshot holds the failure's device */
    struct vt_snap_oom o;        /* judged; map and state borrowed from a */
    uint64_t request;
    bool request_known;          /* the allocator's rounded request (history) */
    uint64_t allocated;
    size_t partly_used;
    struct torch_sim *sim;       /* NULL: out of memory */
};

static void simulate(struct torch_view *v, const struct vt_snap_device *d)
{
    struct torch_sim *s = v->sim;
    if (!d->nooms) {
        s->not_run = "the snapshot has no history: the failed request and the allocations "
                     "before it are not in it (`vramtrace run --torch-history` records them)";
        return;
    }
    /* The device as this process had it: what it held after the flush and
     * what the driver still had free. */
    const struct vt_snap_oom *o = &d->ooms[d->nooms - 1];
    s->capacity = o->state.reserved + o->ev->device_free;
    struct vt_sim_input in;
    char err[512];
    if (vt_sim_input_load(&in, v->path, d->device, err, sizeof err) != 0) {
        s->not_run = "the allocator model could not read the snapshot";
        vt_sim_input_free(&in);
        return;
    }
    s->failed_requests = in.nfailed;
    s->ran = true;
    for (size_t k = 0; k < TORCH_SIM_RUNS && s->ran; k++) {
        struct vt_alloc_config cfg;
        vt_alloc_config_default(&cfg);
        if (k == 0 && in.has_recorded_cfg)
            cfg = in.recorded_cfg;
        else if (k > 0 && !vt_alloc_config_parse(&cfg, sim_labels[k] + 8, err, sizeof err))
            s->ran = false;
        struct torch_sim_run *r = &s->runs[k];
        if (s->ran && !vt_sim_run(&in, &cfg, s->capacity, 0, &r->res))
            s->ran = false;
        if (!s->ran) {
            s->not_run = "the allocator model failed";
            break;
        }
        r->served = r->res.verdict == VT_SIM_OK && r->res.failed_requests_served == in.nfailed;
        /* (a history with several oom entries: the program caught the
         * earlier ones; failing at any of them is failing as recorded) */
        r->at_recorded_failure = r->res.verdict != VT_SIM_OK &&
                                 r->res.verdict != VT_SIM_START_TOO_BIG &&
                                 in.ev[r->res.fail_event].kind == VT_SIM_FAILED_REQUEST;
    }
    vt_sim_input_free(&in);
}

/* The snapshot a mark names, beside the trace; false when it names none
 * (or a name that is not a plain file name). */
static bool snapshot_path(const struct vt_report *rep, size_t input, const struct torch_mark *m,
                          char *out, size_t n)
{
    const char *name = m->snapshot;
    if (!name[0] || !strcmp(name, "-") || strchr(name, '/') || !strcmp(name, ".."))
        return false;
    const char *trace = rep->a->inputs[input].path;
    const char *slash = strrchr(trace, '/');
    if (slash)
        snprintf(out, n, "%.*s/%s", (int)(slash - trace), trace, name);
    else
        snprintf(out, n, "%s", name);
    return true;
}

bool vt_report_torch_last_snapshot(struct vt_report *rep, size_t input, int64_t device,
                                   char *path, size_t n)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    bool found = false;
    for (size_t k = 0; k < rp->nmarks; k++) {
        const struct vt_mark *mk = &rp->marks[k];
        if (!mk->domain || strcmp(vt_report_string(rep, input, mk->domain), TORCH_DOMAIN) != 0)
            continue;
        const char *text = vt_report_string(rep, input, mk->name);
        struct torch_mark m = {0};
        uint64_t dev;
        /* an OOM's snapshot is of its device's failure; the one at exit
         * holds every device the allocator had */
        bool oom = !strncmp(text, "oom ", 4);
        if ((!oom && strncmp(text, "exit ", 5) != 0) ||
            (oom && (!field_u64(text, "device", &dev) || (int64_t)dev != device)) ||
            !field(text, "snapshot", m.snapshot, sizeof m.snapshot))
            continue;
        found |= snapshot_path(rep, input, &m, path, n);
    }
    return found;
}

/* Fills v for the request ooms[first .. end) of l; false if the bootstrap
 * left no mark at it. */
static bool view_load(struct vt_report *rep, size_t input, const struct vt_ledger *l, size_t first,
                      size_t end, struct torch_view *v)
{
    memset(v, 0, sizeof *v);
    if (!mark_for(rep, input, l, first, end, &v->m))
        return false;
    if (!snapshot_path(rep, input, &v->m, v->path, sizeof v->path))
        return true;
    v->has_analysis = true;
    if (vt_snap_analysis_run(&v->a, v->path, v->error, sizeof v->error) != 0) {
        if (!v->error[0])
            snprintf(v->error, sizeof v->error, "not readable");
        return true;
    }
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < v->a.ndevices; k++)
        if (v->a.devices[k].device == v->m.device)
            d = &v->a.devices[k];
    if (!d)
        return true; /* nothing of that device in it: nothing held */
    v->has_device = true;
    if (d->nooms) {
        /* With history: the allocator's own oom entry, judged as the
         * snapshot report judges it. */
        v->o = d->ooms[d->nooms - 1];
        v->request = v->o.ev->size;
        v->request_known = true;
    } else {
        /* Without history: the snapshot is the state at the observer, after
         * the flush; the request is known as the segment size asked. */
        v->o.map = d->map_final;
        v->o.state = d->final_state;
        vt_snap_oom_judge(&v->o, v->m.alloc, 0, v->m.device_free);
        v->request = v->m.alloc;
    }
    for (size_t k = 0; k < v->o.map.nsegments; k++) {
        v->allocated += v->o.map.segments[k].allocated;
        v->partly_used += v->o.map.segments[k].free_bytes && v->o.map.segments[k].allocated;
    }
    v->sim = calloc(1, sizeof *v->sim);
    if (v->sim)
        simulate(v, d);
    return true;
}

static void view_free(struct torch_view *v)
{
    if (v->has_analysis)
        vt_snap_analysis_free(&v->a);
    free(v->sim);
}

/* The view of the request told last. Text tells a failure twice (its
 * headline's verdict, then the allocator's lines), JSON once per failure of
 * the request (retries too) and again in allocator_view, the job view once
 * more: each would read the snapshot and run the allocator model again.
 * Requests are told one after another, so the last one is the cache. */
struct vt_torch_cache {
    size_t input, first;
    const struct vt_ledger *l;
    bool marked;                 /* the bootstrap left a mark at it (v is filled) */
    struct torch_view v;
};

static void forget(struct vt_report *rep)
{
    if (rep->torch && rep->torch->marked)
        view_free(&rep->torch->v);
    free(rep->torch);
    rep->torch = NULL;
}

static const struct torch_view *view_of(struct vt_report *rep, size_t input,
                                        const struct vt_ledger *l, size_t first, size_t end)
{
    struct vt_torch_cache *c = rep->torch;
    if (c && c->input == input && c->l == l && c->first == first)
        return c->marked ? &c->v : NULL;
    if (!c && !(c = rep->torch = calloc(1, sizeof *c)))
        return NULL;
    rep->forget_torch = forget;
    if (c->marked)
        view_free(&c->v);
    c->input = input;
    c->l = l;
    c->first = first;
    c->marked = view_load(rep, input, l, first, end, &c->v);
    return c->marked ? &c->v : NULL;
}

const struct vt_snap_state *vt_report_torch_state(struct vt_report *rep, size_t input,
                                                  const struct vt_ledger *l, size_t first,
                                                  size_t end)
{
    const struct torch_view *v = view_of(rep, input, l, first, end);
    return v && v->has_device ? &v->o.state : NULL;
}

/* The allocator setting the verdict calls for (NULL: none helps), and the
 * advice in words. */
static const char *advice(const struct torch_view *v, char *setting, size_t n)
{
    switch (v->o.verdict) {
    case VT_SNAP_FRAGMENTED:
        snprintf(setting, n, "max_split_size_mb:%" PRIu64, v->request >> 20 > 20 ? v->request >> 20 : 20);
        return "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (a request is mapped from free "
               "pages, not cut from one block); or %s (cached blocks that large stay whole for "
               "large requests)";
    case VT_SNAP_EXHAUSTED:
        setting[0] = '\0';
        return "no allocator setting makes it fit: the live tensors above fill what it holds; a "
               "smaller batch, activation checkpointing, or dropping references";
    case VT_SNAP_LIMITED:
        snprintf(setting, n, "garbage_collection_threshold:0.6");
        return "raise torch.cuda.set_per_process_memory_fraction, or "
               "PYTORCH_CUDA_ALLOC_CONF=%s so the cache is reclaimed before the limit";
    }
    setting[0] = '\0';
    return "";
}

static const char *advice_text(const struct torch_view *v, char *buf, size_t n)
{
    char setting[64];
    const char *fmt = advice(v, setting, sizeof setting);
    snprintf(buf, n, fmt, setting);
    return buf;
}

/* The command that makes the same runs ("556MiB" when whole MiB). */
static const char *sim_command(const struct torch_view *v, char *buf, size_t n)
{
    char cap[32];
    if (v->sim->capacity % (1u << 20) == 0)
        snprintf(cap, sizeof cap, "%" PRIu64 "MiB", v->sim->capacity >> 20);
    else
        snprintf(cap, sizeof cap, "%" PRIu64, v->sim->capacity);
    snprintf(buf, n, "vramtrace simulate -a %s -a %s -c %s --device %" PRId64 " %s", sim_labels[0],
             sim_labels[1], cap, v->m.device, v->path);
    return buf;
}

static void print_sim(FILE *out, const struct torch_view *v)
{
    const struct torch_sim *s = v->sim;
    char b1[32], b2[32], cmd[4500];
    if (!s)
        return;
    if (!s->ran) {
        fprintf(out, "      simulate: not run - %s\n", s->not_run);
        return;
    }
    const struct torch_sim_run *rec = &s->runs[0], *exp = &s->runs[1];
    fprintf(out, "      simulate (%s):\n", sim_command(v, cmd, sizeof cmd));
    if (rec->at_recorded_failure)
        fprintf(out, "        recorded settings, %s for this process: fails again at the request "
                     "(%s), as it did\n",
                b(s->capacity, b1), vt_sim_verdict_name(rec->res.verdict));
    else
        fprintf(out, "        recorded settings, %s for this process: the model does not fail "
                     "where the program did (%s): its answer below is not to be trusted\n",
                b(s->capacity, b1), vt_sim_verdict_name(rec->res.verdict));
    if (exp->served)
        fprintf(out, "        expandable_segments:True: the %s request fits (reserved peak %s)\n",
                b(v->request, b1), b(exp->res.peak_reserved, b2));
    else if (exp->at_recorded_failure)
        fprintf(out, "        expandable_segments:True: the %s request still fails (%s)\n",
                b(v->request, b1), vt_sim_verdict_name(exp->res.verdict));
    else
        fprintf(out, "        expandable_segments:True: fails before that request (%s)\n",
                vt_sim_verdict_name(exp->res.verdict));
}

/* Live tensors with a Python stack recorded (--torch-history). */
static bool with_stack(const struct vt_snap_site *sites, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (!sites[k].before_window && vt_snap_frame_count(sites[k].frames) > 0)
            return true;
    return false;
}

static void print_tensors(FILE *out, const struct vt_report_layout *layout,
                          const struct vt_snap_state *st)
{
    struct vt_snap_site *sites;
    size_t n;
    char b1[32];
    if (!vt_snap_group_sites(st, &sites, &n))
        return;
    if (!with_stack(sites, n)) {
        fputs("      live tensors' stacks: not recorded (`vramtrace run --torch-history` records "
              "them)\n", out);
    } else {
        fputs("      live tensors then, by Python stack:\n", out);
        fprintf(out, "        %12s %7s  %s\n", "bytes", "count", "allocated at");
        for (size_t k = 0; k < n && k < layout->top; k++) {
            fprintf(out, "        %12s %7" PRIu64 "  ", b(sites[k].bytes, b1), sites[k].count);
            if (sites[k].before_window)
                fputs("(allocated before the history began)", out);
            else
                vt_snap_print_where(out, sites[k].frames, layout);
            fputc('\n', out);
        }
    }
    free(sites);
}

/* The allocator's verdict in one line ("fragmented - 120.00 MiB free in
 * cached segments, largest free block 24.00 MiB < 40.00 MiB asked"): the
 * failure's headline (vt_report_decide) where a snapshot was read. */
static const char *judged_story(const struct torch_view *v, char *buf, size_t n)
{
    char b1[32], b2[32], b3[32], b4[32];
    const struct vt_snap_oom *o = &v->o;
    const char *what = v->request_known ? "requested" : "asked (the segment; --torch-history records the request)";
    switch (o->verdict) {
    case VT_SNAP_FRAGMENTED:
        snprintf(buf, n, "%s free in cached segments and %s on the device, largest free block "
                 "%s < %s %s", b(o->map.free_bytes, b1), b(v->m.device_free, b2),
                 b(o->largest_free_same_pool, b3), b(v->request, b4), what);
        break;
    case VT_SNAP_EXHAUSTED:
        snprintf(buf, n, "%s free in cached segments and %s on the device, less than the %s %s: "
                 "live tensors fill it", b(o->map.free_bytes, b1), b(v->m.device_free, b2),
                 b(v->request, b3), what);
        break;
    case VT_SNAP_LIMITED:
        snprintf(buf, n, "the device had %s free, room for the %s segment: a memory fraction or "
                 "limit refused it", b(v->m.device_free, b1), b(o->segment_bytes, b2));
        break;
    }
    return buf;
}

/* The advice, with what the allocator model said of it where it ran. */
static const char *decided_next(const struct torch_view *v, char *buf, size_t n)
{
    char advice_buf[512], b1[32];
    advice_text(v, advice_buf, sizeof advice_buf);
    const struct torch_sim *s = v->sim;
    bool replayed = v->o.verdict == VT_SNAP_FRAGMENTED && s && s->ran &&
                    s->runs[0].at_recorded_failure;
    if (replayed && s->runs[1].served)
        snprintf(buf, n, "%s; the allocator model replayed this run: with expandable_segments:True "
                 "the %s request fits", advice_buf, b(v->request, b1));
    else if (replayed) /* never lead with a setting the model has just shown does not fit */
        snprintf(buf, n, "the allocator model replayed this run: with expandable_segments:True "
                 "the %s request still fails, so no allocator setting is the fix; a smaller "
                 "batch, activation checkpointing, or dropping references", b(v->request, b1));
    else
        snprintf(buf, n, "%s", advice_buf);
    return buf;
}

bool vt_report_torch_decide(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                            size_t first, size_t end, struct vt_torch_decision *d)
{
    memset(d, 0, sizeof *d);
    const struct torch_view *v = view_of(rep, input, l, first, end);
    if (!v)
        return false;
    bool judged = v->path[0] && !v->error[0] && v->has_device;
    if (judged) {
        d->verdict = vt_snap_verdict_name(v->o.verdict);
        d->largest_free_block = v->o.largest_free_same_pool;
        judged_story(v, d->story, sizeof d->story);
        decided_next(v, d->next_step, sizeof d->next_step);
    }
    return judged;
}

static void print_judged(FILE *out, struct vt_report *rep, const struct torch_view *v)
{
    char b1[32], b2[32], b3[32];
    const struct vt_snap_oom *o = &v->o;
    fprintf(out, "      reserved %s, allocated %s, reserved but unallocated %s", b(o->state.reserved, b1),
            b(v->allocated, b2), b(o->map.free_bytes, b3));
    if (v->partly_used)
        fprintf(out, " (in %zu partly used segment%s)", v->partly_used, v->partly_used == 1 ? "" : "s");
    fprintf(out, "; %s free on the device\n", b(v->m.device_free, b1));
    /* The verdict and the advice are the failure's headline (above). */
    print_tensors(out, &rep->opt->layout, &o->state);
    print_sim(out, v);
}

void vt_report_torch_oom_text(struct vt_report *rep, FILE *out, size_t input,
                              const struct vt_ledger *l, size_t first, size_t end)
{
    const struct torch_view *v = view_of(rep, input, l, first, end);
    if (!v)
        return;
    if (!v->path[0])
        fprintf(out, "    PyTorch's allocator: out of memory seen (observer #%" PRIu64
                     "), no snapshot written\n", v->m.n);
    else
        fprintf(out, "    PyTorch's allocator at this failure (snapshot %s):\n", v->path);
    if (v->path[0] && v->error[0])
        fprintf(out, "      not readable: %s\n", v->error);
    else if (v->path[0] && !v->has_device)
        fprintf(out, "      nothing of device %" PRId64 " in it\n", v->m.device);
    else if (v->path[0])
        print_judged(out, rep, v);
}

static void sim_json(struct vt_json *j, const struct torch_view *v)
{
    const struct torch_sim *s = v->sim;
    char cmd[4500];
    vt_json_key(j, "simulate");
    if (!s) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_bool(j, "ran", s->ran);
    vt_json_kv_string(j, "not_run", s->ran ? NULL : s->not_run);
    vt_json_kv_uint_or_null(j, "capacity_bytes", s->ran, s->capacity);
    vt_json_kv_string(j, "command", s->ran ? sim_command(v, cmd, sizeof cmd) : NULL);
    vt_json_kv_uint(j, "failed_requests", s->failed_requests);
    vt_json_key(j, "runs");
    vt_json_begin_array(j);
    for (size_t k = 0; k < TORCH_SIM_RUNS && s->ran; k++) {
        const struct torch_sim_run *r = &s->runs[k];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "allocator", sim_labels[k]);
        vt_json_kv_string(j, "verdict", vt_sim_verdict_name(r->res.verdict));
        vt_json_kv_uint(j, "failed_requests_served", r->res.failed_requests_served);
        vt_json_kv_bool(j, "request_served", r->served);
        vt_json_kv_bool(j, "fails_at_recorded_failure", r->at_recorded_failure);
        vt_json_kv_uint(j, "peak_reserved_bytes", r->res.peak_reserved);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    /* The answer, when the control reproduces the failure. */
    vt_json_key(j, "fits_with_expandable_segments");
    if (s->ran && s->runs[0].at_recorded_failure)
        vt_json_bool(j, s->runs[1].served);
    else
        vt_json_null(j);
    vt_json_end_object(j);
}

static void tensors_json(struct vt_json *j, const struct vt_report_layout *layout,
                         const struct vt_snap_state *st)
{
    struct vt_snap_site *sites = NULL;
    size_t n = 0;
    if (!vt_snap_group_sites(st, &sites, &n))
        n = 0;
    vt_json_kv_bool(j, "stacks_recorded", with_stack(sites, n));
    vt_json_key(j, "top_stacks");
    vt_report_tensor_sites_json(j, sites, n < layout->top ? n : layout->top);
    free(sites);
}

void vt_report_tensor_sites_json(struct vt_json *j, const struct vt_snap_site *sites, size_t n)
{
    vt_json_begin_array(j);
    for (size_t k = 0; k < n; k++) {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "bytes", sites[k].bytes);
        vt_json_kv_uint(j, "count", sites[k].count);
        vt_json_kv_bool(j, "before_history", sites[k].before_window);
        vt_snap_frames_json(j, sites[k].frames);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

void vt_report_torch_oom_json(struct vt_report *rep, struct vt_json *j, size_t input,
                              const struct vt_ledger *l, size_t first, size_t end)
{
    char setting[64], next[512];
    vt_json_key(j, "allocator_view");
    const struct torch_view *v = view_of(rep, input, l, first, end);
    if (!v) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "observer", v->m.n);
    vt_json_kv_int(j, "device", v->m.device);
    vt_json_kv_string(j, "snapshot", v->path[0] ? v->path : NULL);
    const char *error = !v->path[0]     ? "no snapshot written"
                        : v->error[0]   ? v->error
                        : !v->has_device ? "nothing of this device in the snapshot"
                                        : NULL;
    vt_json_kv_string(j, "error", error);
    vt_json_kv_uint(j, "segment_bytes", v->m.alloc);
    vt_json_kv_uint(j, "device_free_bytes", v->m.device_free);
    if (!error) {
        const struct vt_snap_oom *o = &v->o;
        vt_json_kv_uint(j, "reserved_bytes", o->state.reserved);
        vt_json_kv_uint(j, "allocated_bytes", v->allocated);
        vt_json_kv_uint(j, "reserved_unallocated_bytes", o->map.free_bytes);
        vt_json_kv_uint(j, "partly_used_segments", v->partly_used);
        vt_json_kv_uint(j, "largest_free_block_bytes", o->largest_free_same_pool);
        vt_json_kv_uint(j, "request_bytes", v->request);
        vt_json_kv_bool(j, "request_known", v->request_known);
        vt_json_kv_string(j, "verdict", vt_snap_verdict_name(o->verdict));
        tensors_json(j, &rep->opt->layout, &o->state);
        vt_json_kv_string(j, "advice", advice_text(v, next, sizeof next));
        advice(v, setting, sizeof setting);
        vt_json_key(j, "advice_settings");
        vt_json_begin_array(j);
        if (o->verdict == VT_SNAP_FRAGMENTED)
            vt_json_string(j, "expandable_segments:True");
        if (setting[0])
            vt_json_string(j, setting);
        vt_json_end_array(j);
        sim_json(j, v);
    }
    vt_json_end_object(j);
}
