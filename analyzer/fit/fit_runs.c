/* Reading a run for `vramtrace fit`: see fit_runs.h. */
#define _GNU_SOURCE
#include "fit_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_class.h"
#include "grow_array.h"
#include "pair_map.h"
#include "replay.h"
#include "stack_line.h"
#include "stack_where.h"
#include "symbolize.h"
#include "trace_reader.h"

#define SHOWN_FRAMES 3
#define BATCH 256

/* One trace being read: its allocations as the replay's live set sees
 * them (through on_live, so they are the report's device ledger's by
 * construction), with stack ids and phase string ids still to be named. */
struct reading {
    struct vt_fit_run *run;
    size_t allocs_cap, steps_cap, sites_cap, phases_cap;
    struct vt_pair_map alloc_of;  /* (kind, addr) -> alloc index */
    struct vt_pair_map site_of;   /* (stack, 0) -> site index */
    struct vt_pair_map phase_of;  /* (string id, 0) -> phase index */
    uint64_t *site_stack;         /* site index -> stack id */
    uint64_t *phase_string;       /* phase index -> string id */
    uint64_t live, peak;
    bool contexts_seen;
    bool out_of_memory;
};

static uint32_t site_index(struct reading *t, uint64_t stack)
{
    const uint64_t *found = vt_pair_map_get(&t->site_of, stack, 0);
    if (found)
        return (uint32_t)*found;
    struct vt_fit_run *run = t->run;
    if (!vt_grow_array((void **)&t->site_stack, &t->sites_cap, run->nsites + 1,
                       sizeof *t->site_stack) ||
        !vt_pair_map_put(&t->site_of, stack, 0, run->nsites)) {
        t->out_of_memory = true;
        return 0;
    }
    t->site_stack[run->nsites] = stack;
    return (uint32_t)run->nsites++;
}

static uint32_t phase_index(struct reading *t, uint64_t name)
{
    if (name == 0)
        return VT_FIT_NO_PHASE;
    const uint64_t *found = vt_pair_map_get(&t->phase_of, name, 0);
    if (found)
        return (uint32_t)*found;
    struct vt_fit_run *run = t->run;
    if (!vt_grow_array((void **)&t->phase_string, &t->phases_cap, run->nphases + 1,
                       sizeof *t->phase_string) ||
        !vt_pair_map_put(&t->phase_of, name, 0, run->nphases)) {
        t->out_of_memory = true;
        return VT_FIT_NO_PHASE;
    }
    t->phase_string[run->nphases] = name;
    return (uint32_t)run->nphases++;
}

static void push_step(struct reading *t, uint32_t step)
{
    struct vt_fit_run *run = t->run;
    if (!vt_grow_array((void **)&run->steps, &t->steps_cap, run->nsteps + 1, sizeof *run->steps))
        t->out_of_memory = true;
    else
        run->steps[run->nsteps++].alloc = step;
}

/* What the device offered: its contexts when this process first
 * allocated on it (contexts count in no ledger: the replay keeps them). */
static void note_contexts(struct reading *t, const struct vt_replay *rp)
{
    t->contexts_seen = true;
    t->run->has_free_at_context =
        vt_contexts_first_free(rp, t->run->device, &t->run->free_at_context);
    for (size_t k = 0; k < rp->ncontexts; k++)
        if (rp->contexts[k].device == t->run->device) {
            t->run->context_bytes += rp->contexts[k].size;
            t->run->contexts_unmeasured += rp->contexts[k].size == 0;
        }
}

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct reading *t = ctx;
    struct vt_fit_run *run = t->run;
    if (l->category != VT_CAT_DEVICE || e->size == 0 || t->out_of_memory)
        return;
    if (run->device < 0)
        run->device = l->device; /* the first device that allocates */
    if (l->device != run->device)
        return;
    if (!t->contexts_seen)
        note_contexts(t, rp);
    if (begins) {
        if (run->nallocs >= VT_FIT_ENDS) {
            t->out_of_memory = true;
            return;
        }
        struct vt_fit_alloc a = {
            .size = e->size,
            .site = site_index(t, l->sites.sites[e->site].stack),
            .phase = phase_index(t, vt_open_phases_innermost(&rp->phases)),
        };
        if (!vt_grow_array((void **)&run->allocs, &t->allocs_cap, run->nallocs + 1,
                           sizeof *run->allocs) ||
            !vt_pair_map_put(&t->alloc_of, e->kind, e->addr, run->nallocs)) {
            t->out_of_memory = true;
            return;
        }
        run->allocs[run->nallocs] = a;
        push_step(t, (uint32_t)run->nallocs++);
        t->live += e->size;
        if (t->live > t->peak)
            t->peak = t->live;
    } else {
        uint64_t idx;
        if (!vt_pair_map_remove(&t->alloc_of, e->kind, e->addr, &idx))
            return;
        push_step(t, (uint32_t)idx | VT_FIT_ENDS);
        t->live -= run->allocs[idx].size;
    }
}

/* ---- naming sites ---- */

struct key_writer {
    FILE *f;
    size_t frames;
    struct vt_frame_classifier cls;
    bool caching_allocator;
};

static void key_frame(void *ctx, const struct vt_frame *fr)
{
    struct key_writer *kw = ctx;
    if (vt_frame_classify(&kw->cls, fr) == VT_FRAME_ALLOCATOR)
        kw->caching_allocator = true;
    /* Without its line: the same call a few lines lower is the same site. */
    if (fr->function)
        fprintf(kw->f, "%s%s@%s", kw->frames++ ? " <- " : "", fr->function,
                fr->file ? fr->file : fr->module ? fr->module : "?");
    else
        fprintf(kw->f, "%s%s+0x%llx", kw->frames++ ? " <- " : "", fr->module ? fr->module : "?",
                (unsigned long long)fr->module_offset);
}

struct stack_src {
    const struct vt_reader *r;
    struct vt_symbolizer *sym;
    uint64_t stack;
};

static size_t stack_frames(void *src, vt_frame_fn fn, void *ctx)
{
    struct stack_src *s = src;
    return vt_stack_frames(s->r, s->sym, s->stack, 0, fn, ctx);
}

static bool name_site(struct vt_fit_site *site, bool *caching, const struct vt_reader *r,
                      struct vt_symbolizer *sym, uint64_t stack)
{
    char *buf = NULL;
    size_t len = 0;
    struct key_writer kw = {.f = open_memstream(&buf, &len)};
    if (!kw.f)
        return false;
    struct stack_src src = {r, sym, stack};
    stack_frames(&src, key_frame, &kw);
    if (!kw.frames)
        fputs("(no stack)", kw.f);
    if (fclose(kw.f) != 0) {
        free(buf);
        return false;
    }
    site->key = buf;
    *caching |= kw.caching_allocator;
    /* Shown as the report's stack line, its innermost frames (the site
     * and the callers that tell one use of a helper from another). */
    char *line = NULL;
    size_t linelen = 0;
    FILE *f = open_memstream(&line, &linelen);
    if (!f)
        return false;
    FILE *lines = vt_stack_lines_open(f, 0);
    if (lines) {
        vt_stack_where(lines, false, SHOWN_FRAMES, stack_frames, &src);
        fputc('\n', lines);
    }
    bool written = lines && vt_stack_lines_close(lines) == 0;
    if (fclose(f) != 0 || !written) {
        free(line);
        return false;
    }
    line[strcspn(line, "\n")] = 0;
    site->shown = line;
    return site->shown != NULL;
}

static bool name_everything(struct reading *t, const struct vt_reader *r)
{
    struct vt_fit_run *run = t->run;
    run->sites = calloc(run->nsites + 1, sizeof *run->sites);
    run->phases = calloc(run->nphases + 1, sizeof *run->phases);
    if (!run->sites || !run->phases)
        return false;
    struct vt_symbolize_options opt = {0};
    struct vt_symbolizer *sym = vt_symbolizer_new(r, &opt);
    bool ok = sym != NULL;
    for (size_t k = 0; ok && k < run->nsites; k++)
        ok = name_site(&run->sites[k], &run->caching_allocator, r, sym, t->site_stack[k]);
    if (sym)
        vt_symbolizer_free(sym);
    for (size_t k = 0; ok && k < run->nphases; k++) {
        const char *s = vt_reader_string(r, t->phase_string[k]);
        ok = (run->phases[k] = strdup(s ? s : "?")) != NULL;
    }
    return ok;
}

/* ---- one trace ---- */

/* PyTorch's allocator settings, and whether its cache was off. */
static void take_environment(struct vt_fit_run *run, const struct vt_process_info *pi)
{
    for (uint64_t k = 0; pi && k < pi->nenv; k++) {
        const char *name = pi->env[k].name, *value = pi->env[k].value;
        if (!strcmp(name, "PYTORCH_CUDA_ALLOC_CONF") ||
            (!strcmp(name, "PYTORCH_ALLOC_CONF") && !run->alloc_conf)) {
            free(run->alloc_conf);
            run->alloc_conf = strdup(value);
        } else if (!strcmp(name, "PYTORCH_NO_CUDA_MEMORY_CACHING")) {
            run->torch_tensors = value[0] && strcmp(value, "0") != 0;
        }
    }
}

static void reading_free(struct reading *t)
{
    vt_pair_map_free(&t->alloc_of);
    vt_pair_map_free(&t->site_of);
    vt_pair_map_free(&t->phase_of);
    free(t->site_stack);
    free(t->phase_string);
}

static int load_trace(struct vt_fit_run *run, const char *path, char *err, size_t errlen)
{
    struct vt_reader *r;
    struct vt_read_error re;
    if (vt_reader_open(path, &r, &re)) {
        snprintf(err, errlen, "%s", re.message);
        return 2;
    }
    run->device = -1;
    struct reading t = {.run = run};
    vt_pair_map_init(&t.alloc_of);
    vt_pair_map_init(&t.site_of);
    vt_pair_map_init(&t.phase_of);
    struct vt_replay rp;
    vt_replay_init(&rp, r);
    rp.on_live = on_live;
    rp.on_live_ctx = &t;
    /* Memory events a batch at a time, as the report reads them; any
     * other record (and whatever the fast path declines) one by one. */
    struct vt_replay_mem batch[BATCH];
    struct vt_record rec;
    int rc = 1;
    while (!t.out_of_memory && rc > 0) {
        int n = vt_reader_next_mem_events(r, batch, BATCH);
        if (n > 0) {
            vt_replay_feed_mem_events(&rp, batch, (size_t)n);
            continue;
        }
        if ((rc = vt_reader_next(r, &rec)) > 0)
            vt_replay_feed(&rp, &rec);
    }
    bool out_of_memory = t.out_of_memory || rp.out_of_memory;
    vt_replay_free(&rp);
    int status = 0;
    if (out_of_memory) {
        snprintf(err, errlen, "%s: byte 0: out of memory", path);
        status = 2;
    } else if (rc < 0) {
        snprintf(err, errlen, "%s", vt_reader_error(r)->message);
        status = 2;
    } else if (!name_everything(&t, r)) {
        snprintf(err, errlen, "%s: byte 0: out of memory", path);
        status = 2;
    } else {
        run->peak = t.peak;
        const struct vt_device_info *d =
            run->device >= 0 ? vt_reader_device(r, (uint64_t)run->device) : NULL;
        run->device_total = d ? d->total_bytes : 0;
        run->path = strdup(path);
        take_environment(run, vt_reader_process(r));
        if (!run->path) {
            snprintf(err, errlen, "%s: byte 0: out of memory", path);
            status = 2;
        }
    }
    reading_free(&t);
    vt_reader_close(r);
    return status;
}

static void run_clear(struct vt_fit_run *run)
{
    for (size_t k = 0; k < run->nsites; k++) {
        free(run->sites[k].key);
        free(run->sites[k].shown);
    }
    for (size_t k = 0; k < run->nphases; k++)
        free(run->phases[k]);
    free(run->sites);
    free(run->phases);
    free(run->allocs);
    free(run->steps);
    free(run->path);
    free(run->alloc_conf);
    char *name = run->name;
    long long value = run->value;
    const char *arg = run->arg;
    memset(run, 0, sizeof *run);
    run->name = name;
    run->value = value;
    run->arg = arg;
}

int vt_fit_run_load(struct vt_fit_run *run, char *const *paths, size_t npaths, char *err,
                    size_t errlen)
{
    /* A run of several processes (a launcher and its worker): the one
     * with the largest device peak is the program being sized. */
    struct vt_fit_run best = {0};
    for (size_t i = 0; i < npaths; i++) {
        run_clear(run);
        int rc = load_trace(run, paths[i], err, errlen);
        if (rc) {
            run_clear(&best);
            return rc;
        }
        if (run->nallocs && (!best.path || run->peak > best.peak)) {
            run_clear(&best);
            struct vt_fit_run keep = *run;
            memset(run, 0, sizeof *run);
            run->name = keep.name, run->value = keep.value, run->arg = keep.arg;
            best = keep;
        }
    }
    run_clear(run);
    if (!best.path) {
        snprintf(err, errlen, "%s: no device allocations in its traces", run->arg);
        return 2;
    }
    *run = best;
    return 0;
}

void vt_fit_run_free(struct vt_fit_run *run)
{
    run_clear(run);
    free(run->name);
    memset(run, 0, sizeof *run);
}

uint64_t vt_fit_default_capacity(const struct vt_fit_run *tpl)
{
    if (tpl->has_free_at_context)
        return tpl->free_at_context;
    return tpl->device_total > tpl->context_bytes ? tpl->device_total - tpl->context_bytes : 0;
}
