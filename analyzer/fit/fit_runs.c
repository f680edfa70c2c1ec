/* Reading a run for `vramtrace fit`: see fit_runs.h. */
#define _GNU_SOURCE
#include "fit_runs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame_class.h"
#include "grow_array.h"
#include "input_tables.h"
#include "pair_map.h"
#include "replay.h"
#include "run_traces.h"
#include "stack_line.h"
#include "stack_where.h"
#include "symbolize.h"

#define SHOWN_FRAMES 3

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
 * allocated on it (the replay keeps them; its on_live hook shows them
 * too, which on_live leaves to this). */
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
    /* contexts count apart (note_contexts) */
    if (l->category != VT_CAT_DEVICE || e->size == 0 || e->kind == VT_KIND_CONTEXT ||
        t->out_of_memory)
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


static bool name_site(struct vt_fit_site *site, bool *caching, const struct vt_input *in,
                      struct vt_symbolizer *sym, uint64_t stack)
{
    char *buf = NULL;
    size_t len = 0;
    struct key_writer kw = {.f = open_memstream(&buf, &len)};
    if (!kw.f)
        return false;
    struct vt_input_stack src = {in, sym, stack};
    vt_input_stack_walk(&src, key_frame, &kw);
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
        vt_stack_where(lines, false, SHOWN_FRAMES, vt_input_stack_walk, &src);
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

static bool name_everything(struct reading *t, const struct vt_input *in)
{
    struct vt_fit_run *run = t->run;
    run->sites = calloc(run->nsites + 1, sizeof *run->sites);
    run->phases = calloc(run->nphases + 1, sizeof *run->phases);
    if (!run->sites || !run->phases)
        return false;
    struct vt_symbolize_options opt = {0};
    struct vt_symbolizer *sym = vt_input_symbolizer_new(in, &opt);
    bool ok = sym != NULL;
    for (size_t k = 0; ok && k < run->nsites; k++)
        ok = name_site(&run->sites[k], &run->caching_allocator, in, sym, t->site_stack[k]);
    if (sym)
        vt_symbolizer_free(sym);
    for (size_t k = 0; ok && k < run->nphases; k++) {
        const char *s = vt_input_string(in, t->phase_string[k]);
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

/* One trace's reading made a run: its sites and phases named through the
 * trace's tables, what the device offered, the allocator's settings. */
static int take_trace(struct vt_fit_run *run, struct reading *t, const struct vt_input *in,
                      char *err, size_t errlen)
{
    if (t->out_of_memory || in->replay.out_of_memory || !name_everything(t, in) ||
        !(run->path = strdup(in->path))) {
        snprintf(err, errlen, "%s: byte 0: out of memory", in->path);
        return 2;
    }
    run->peak = t->peak;
    const struct vt_device_info *d =
        run->device >= 0 ? vt_input_device(in, (uint64_t)run->device) : NULL;
    run->device_total = d ? d->total_bytes : 0;
    take_environment(run, vt_input_process(in));
    return 0;
}

static void run_clear(struct vt_fit_run *run)
{
    /* Counted as read, named only once read whole: a trace that broke
     * has counts without names. */
    for (size_t k = 0; run->sites && k < run->nsites; k++) {
        free(run->sites[k].key);
        free(run->sites[k].shown);
    }
    for (size_t k = 0; run->phases && k < run->nphases; k++)
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

/* The first trace of the run, in the order given, that could not be read
 * whole: its reason ("FILE: byte N: reason"); NULL if none. */
static const char *first_error(const struct vt_analysis *a, char *const *paths, size_t npaths)
{
    for (size_t i = 0; i < npaths; i++) {
        size_t k = 0;
        while (k < a->ninputs && strcmp(a->inputs[k].path, paths[i]))
            k++;
        if (k < a->ninputs) {
            if (vt_input_read_error(&a->inputs[k]))
                return vt_input_read_error(&a->inputs[k]);
            continue;
        }
        size_t len = strlen(paths[i]); /* not opened: its error names it */
        for (size_t e = 0; e < a->errors.n; e++)
            if (!strncmp(a->errors.messages[e], paths[i], len) &&
                a->errors.messages[e][len] == ':')
                return a->errors.messages[e];
    }
    return NULL;
}

/* Each input's reading, set up as the run stage replays it. */
static void watch(void *ctx, struct vt_input *in)
{
    struct reading *t = &((struct reading *)ctx)[in->index];
    in->replay.on_live = on_live;
    in->replay.on_live_ctx = t;
}

int vt_fit_run_load(struct vt_fit_run *run, char *const *paths, size_t npaths, char *err,
                    size_t errlen)
{
    /* The run's traces read once by the run stage, the report's reading,
     * each with its reading riding along. */
    struct vt_fit_run *per = calloc(npaths + 1, sizeof *per);
    struct reading *t = calloc(npaths + 1, sizeof *t);
    FILE *quiet = fopen("/dev/null", "w");
    if (!per || !t || !quiet) {
        free(per);
        free(t);
        if (quiet)
            fclose(quiet);
        snprintf(err, errlen, "%s: byte 0: out of memory", npaths ? paths[0] : run->arg);
        return 2;
    }
    for (size_t i = 0; i < npaths; i++) {
        per[i].device = -1;
        t[i].run = &per[i];
        vt_pair_map_init(&t[i].alloc_of);
        vt_pair_map_init(&t[i].site_of);
        vt_pair_map_init(&t[i].phase_of);
    }
    struct vt_run_observers obs = {.prepare = watch, .prepare_ctx = t};
    struct vt_run_result res;
    int status = vt_run_traces(paths, npaths, &obs, &res, quiet);
    fclose(quiet);
    const char *bad = status ? first_error(&res.a, paths, npaths) : NULL;
    if (status) {
        snprintf(err, errlen, "%s", bad ? bad : "");
        if (!bad)
            snprintf(err, errlen, "%s: byte 0: out of memory", npaths ? paths[0] : run->arg);
    }
    /* A run of several processes (a launcher and its worker): the one
     * with the largest device peak is the program being sized. */
    struct vt_fit_run best = {0};
    for (size_t i = 0; status == 0 && i < res.a.ninputs; i++) {
        struct vt_fit_run *one = &per[res.a.inputs[i].index];
        status = take_trace(one, &t[res.a.inputs[i].index], &res.a.inputs[i], err, errlen);
        if (status == 0 && one->nallocs && (!best.path || one->peak > best.peak)) {
            run_clear(&best);
            best = *one;
            memset(one, 0, sizeof *one);
        }
    }
    for (size_t i = 0; i < npaths; i++) {
        run_clear(&per[i]);
        reading_free(&t[i]);
    }
    free(per);
    free(t);
    vt_run_result_free(&res);
    if (status) {
        run_clear(&best);
        return status;
    }
    run_clear(run);
    if (!best.path) {
        snprintf(err, errlen, "%s: no device allocations in its traces", run->arg);
        return 2;
    }
    best.name = run->name;
    best.value = run->value;
    best.arg = run->arg;
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
