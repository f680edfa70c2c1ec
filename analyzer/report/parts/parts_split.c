/* What the memory is made of at an instant, and the theory beside it. See
 * parts_split.h. */
#include "parts_split.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot_analysis.h"
#include "snapshot_timeline.h"
#include "input_files.h"

static const char *const row_names[VT_SPLIT_ROWS_] = {
    [VT_SPLIT_PARAMETERS] = "parameters",
    [VT_SPLIT_BUFFERS] = "buffers",
    [VT_SPLIT_GRADIENTS] = "gradients",
    [VT_SPLIT_OPTIMIZER_STATE] = "optimizer state",
    [VT_SPLIT_ACTIVATIONS] = "activations and temporaries",
    [VT_SPLIT_LIBRARY] = "library workspaces and NCCL",
    [VT_SPLIT_CONTEXT] = "CUDA context",
    [VT_SPLIT_CACHED] = "cached but unallocated",
    [VT_SPLIT_REST] = "activations, temporaries and cache",
    [VT_SPLIT_OTHER] = "other",
};
static const char *const row_keys[VT_SPLIT_ROWS_] = {
    [VT_SPLIT_PARAMETERS] = "parameters",
    [VT_SPLIT_BUFFERS] = "buffers",
    [VT_SPLIT_GRADIENTS] = "gradients",
    [VT_SPLIT_OPTIMIZER_STATE] = "optimizer_state",
    [VT_SPLIT_ACTIVATIONS] = "activations",
    [VT_SPLIT_LIBRARY] = "library",
    [VT_SPLIT_CONTEXT] = "context",
    [VT_SPLIT_CACHED] = "cached_unallocated",
    [VT_SPLIT_REST] = "activations_temporaries_cache",
    [VT_SPLIT_OTHER] = "other",
};

const char *vt_split_row_name(enum vt_split_row r) { return row_names[r]; }
const char *vt_split_row_key(enum vt_split_row r) { return row_keys[r]; }

static const enum vt_split_row row_of_part[VT_PART_COUNT_] = {
    [VT_PART_PARAMETER] = VT_SPLIT_PARAMETERS,
    [VT_PART_BUFFER] = VT_SPLIT_BUFFERS,
    [VT_PART_GRADIENT] = VT_SPLIT_GRADIENTS,
    [VT_PART_OPTIMIZER_STATE] = VT_SPLIT_OPTIMIZER_STATE,
};

enum vt_split_row vt_split_row_of_part(unsigned part)
{
    return row_of_part[part < VT_PART_COUNT_ ? part : VT_PART_PARAMETER];
}

/* ---- library workspaces: a native frame in one of these ---- */

static const char *const library_modules[] = {
    "libnccl.so*",   "libcublas.so*",   "libcublasLt.so*", "libcudnn*.so*",
    "libcufft.so*",  "libcusparse.so*", "libcusolver.so*", "libcurand.so*",
    "libnvshmem*",   "libcutensor.so*", "libnvrtc.so*",    "libcusparseLt.so*",
};

static bool library_ip(const struct vt_input *r, uint64_t ip)
{
    for (size_t k = 0; k < vt_input_module_count(r); k++) {
        const struct vt_module_info *m = vt_input_module_at(r, k);
        if (ip < m->start || ip >= m->end || !m->path)
            continue;
        const char *base = vt_path_base_name(m->path);
        for (size_t i = 0; i < sizeof library_modules / sizeof *library_modules; i++)
            if (!fnmatch(library_modules[i], base, 0))
                return true;
        return false;
    }
    return false;
}

static bool library_stack(const struct vt_input *r, uint64_t stack)
{
    uint64_t parent, ip;
    for (size_t depth = 0; stack && depth < 512; depth++) {
        if (!vt_input_stack_node(r, stack, &parent, &ip))
            return false;
        if (!vt_ip_is_py_frame(ip) && library_ip(r, ip))
            return true;
        stack = parent;
    }
    return false;
}

/* Bytes of a per-site view (snapshot s of l's sites) that libraries hold. */
static uint64_t library_bytes(const struct vt_input *r, const struct vt_ledger *l,
                              const struct vt_peak_state *s)
{
    uint64_t sum = 0;
    for (uint32_t i = 0; i < l->sites.nsites && i < s->cap; i++)
        if (s->bytes[i] && library_stack(r, l->sites.sites[i].stack))
            sum += s->bytes[i];
    return sum;
}

/* ---- the split ---- */

static const struct vt_replay *replay_of(const struct vt_report *rep, size_t input)
{
    return &rep->a->inputs[input].replay;
}

/* The parts, at the segment level, from census (an index; SIZE_MAX: the
 * nearest); false with no census. */
static bool parts_at(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                     uint64_t time_ns, uint64_t total, size_t census, struct vt_split *s)
{
    const struct vt_replay *rp = replay_of(rep, input);
    memset(s, 0, sizeof *s);
    s->time_ns = time_ns;
    s->total = total;
    struct vt_parts_at at;
    size_t ledger = (size_t)(l - rp->ledgers);
    if (census == SIZE_MAX)
        vt_parts_at(rp->parts, ledger, time_ns, &at);
    else
        vt_parts_at_census(rp->parts, ledger, census, time_ns, &at);
    if (!at.known)
        return false;
    s->known = true;
    s->census = &rp->parts->censuses[at.census];
    for (unsigned p = VT_PART_PARAMETER; p < VT_PART_COUNT_; p++) {
        s->rows[row_of_part[p]] = at.bytes[p];
        s->row_shown[row_of_part[p]] = true;
        s->census_tensors[p] = at.tensors[p];
    }
    return true;
}

/* The rest of the segment level: what is not a part nor a library's. */
static void segment_rest(struct vt_split *s)
{
    uint64_t used = 0;
    for (unsigned r = VT_SPLIT_PARAMETERS; r <= VT_SPLIT_OPTIMIZER_STATE; r++)
        used += s->rows[r];
    used += s->rows[VT_SPLIT_LIBRARY];
    s->rows[VT_SPLIT_REST] = s->total > used ? s->total - used : 0;
    s->row_shown[VT_SPLIT_REST] = true;
}

void vt_split_at_peak(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                      struct vt_split *s)
{
    /* the allocations split, the contexts beside them (as at a failure) */
    uint64_t contexts = l->peak_context_bytes;
    if (!parts_at(rep, input, l, l->peak.peak_time_ns, l->peak.peak_bytes - contexts, SIZE_MAX, s))
        return;
    s->rows[VT_SPLIT_LIBRARY] = library_bytes(&rep->a->inputs[input], l, &l->peak);
    s->library_known = s->row_shown[VT_SPLIT_LIBRARY] = true;
    s->context_known = contexts != 0;
    s->rows[VT_SPLIT_CONTEXT] = contexts;
    s->row_shown[VT_SPLIT_CONTEXT] = contexts != 0;
    segment_rest(s);
}

void vt_split_at_phase(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                       const struct vt_phase_peak *ph, struct vt_split *s)
{
    if (!parts_at(rep, input, l, ph->state.peak_time_ns, ph->state.peak_bytes, SIZE_MAX, s))
        return;
    s->rows[VT_SPLIT_LIBRARY] = library_bytes(&rep->a->inputs[input], l, &ph->state);
    s->library_known = s->row_shown[VT_SPLIT_LIBRARY] = true;
    segment_rest(s);
}

/* The tensor level at a failure: the census's tensors against the
 * allocator's live blocks then (a tensor is a block's, at its address). */
struct block_span {
    uint64_t addr, size;
};

static int by_block_addr(const void *a, const void *b)
{
    const struct block_span *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool tensor_level(struct vt_split *s, const struct vt_parts *parts,
                         const struct vt_snap_state *st, uint64_t flushed)
{
    struct block_span *blocks = malloc((st->nlive + 1) * sizeof *blocks);
    if (!blocks)
        return false;
    for (size_t k = 0; k < st->nlive; k++)
        blocks[k] = (struct block_span){st->live[k].addr, st->live[k].requested};
    qsort(blocks, st->nlive, sizeof *blocks, by_block_addr);
    uint64_t part_bytes[VT_PART_COUNT_] = {0};
    const struct vt_part_census *c = s->census;
    for (size_t i = c->first; i < c->first + c->count; i++) {
        const struct vt_part_tensor *t = &parts->tensors[i];
        size_t lo = 0, hi = st->nlive;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (blocks[mid].addr <= t->addr)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && t->addr - blocks[lo - 1].addr < blocks[lo - 1].size)
            part_bytes[t->part] += t->bytes;
    }
    free(blocks);
    uint64_t parts_sum = 0;
    for (unsigned p = VT_PART_PARAMETER; p < VT_PART_COUNT_; p++) {
        s->rows[row_of_part[p]] = part_bytes[p];
        parts_sum += part_bytes[p];
    }
    s->tensor_level = true;
    s->rows[VT_SPLIT_ACTIVATIONS] = st->allocated > parts_sum ? st->allocated - parts_sum : 0;
    /* the snapshot is of after the allocator's flush: the cache it gave
     * back then was cached at the failure too */
    s->rows[VT_SPLIT_CACHED] =
        (st->reserved > st->allocated ? st->reserved - st->allocated : 0) + flushed;
    uint64_t inside = st->reserved + flushed + s->rows[VT_SPLIT_LIBRARY];
    s->rows[VT_SPLIT_OTHER] = s->total > inside ? s->total - inside : 0;
    s->row_shown[VT_SPLIT_ACTIVATIONS] = s->row_shown[VT_SPLIT_CACHED] =
        s->row_shown[VT_SPLIT_OTHER] = true;
    s->row_shown[VT_SPLIT_REST] = false;
    return true;
}

/* The census the bootstrap took at this failure (its OOM observer): the
 * first "oom" census after it and before the next failure; SIZE_MAX:
 * none (then the nearest census serves). */
static size_t oom_census(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                         size_t first, size_t end)
{
    const struct vt_parts *p = replay_of(rep, input)->parts;
    uint64_t from = l->ooms[first].time_ns;
    uint64_t until = end < l->nooms ? l->ooms[end].time_ns : UINT64_MAX;
    for (size_t k = 0; p && k < p->ncensuses; k++) {
        const struct vt_part_census *c = &p->censuses[k];
        if (c->time_ns >= from && c->time_ns < until &&
            !strcmp(vt_report_string(rep, input, c->why), "oom"))
            return k;
    }
    return SIZE_MAX;
}

void vt_split_at_failure(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                         size_t first, size_t end, struct vt_split *s)
{
    const struct vt_oom *o = &l->ooms[first];
    size_t census = oom_census(rep, input, l, first, end);
    if (!parts_at(rep, input, l, o->time_ns, o->process_bytes, census, s))
        return;
    /* The largest holders are all the failure keeps of its sites: the
     * libraries' bytes among them. */
    const struct vt_input *r = &rep->a->inputs[input];
    for (size_t k = 0; k < o->ntop; k++)
        if (library_stack(r, o->top[k].stack))
            s->rows[VT_SPLIT_LIBRARY] += o->top[k].bytes;
    s->row_shown[VT_SPLIT_LIBRARY] = true;
    s->context_known = o->contexts && !o->contexts_unmeasured;
    s->rows[VT_SPLIT_CONTEXT] = o->context_bytes;
    s->row_shown[VT_SPLIT_CONTEXT] = o->contexts > 0;
    /* the tensor level reads the census taken at this failure: the
     * allocator's blocks are of then */
    const struct vt_snap_state *st = vt_report_torch_state(rep, input, l, first, end);
    uint64_t flushed = o->cached_known ? o->cached_bytes : o->released_bytes;
    if (st && census != SIZE_MAX && tensor_level(s, replay_of(rep, input)->parts, st, flushed))
        return;
    segment_rest(s);
}

static bool is_segment_event(enum vt_snap_action a)
{
    return a == VT_SNAP_SEGMENT_ALLOC || a == VT_SNAP_SEGMENT_FREE || a == VT_SNAP_SEGMENT_MAP ||
           a == VT_SNAP_SEGMENT_UNMAP || a == VT_SNAP_OOM;
}

static void file_name(struct vt_split *s, const char *path)
{
    const char *name = vt_path_base_name(path);
    size_t n = strlen(name) < sizeof s->snapshot ? strlen(name) : sizeof s->snapshot - 1;
    memcpy(s->snapshot, name, n);
    s->snapshot[n] = '\0';
}

void vt_split_at_peak_tensors(struct vt_report *rep, size_t input, const struct vt_ledger *l,
                              struct vt_split *s)
{
    vt_split_at_peak(rep, input, l, s);
    char path[4096], err[512];
    if (!s->known || !vt_report_torch_last_snapshot(rep, input, l->device, path, sizeof path))
        return;
    struct vt_snap_analysis a;
    if (vt_snap_analysis_run(&a, path, err, sizeof err) != 0) {
        vt_snap_analysis_free(&a);
        return;
    }
    const struct vt_snap_device *d = NULL;
    for (size_t k = 0; k < a.ndevices; k++)
        if (a.devices[k].device == l->device)
            d = &a.devices[k];
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[input]);
    int64_t at, first, last, when;
    /* the history must reach back to the peak (it is a ring) */
    if (d && d->tl.nev && vt_report_wall_us(p, s->time_ns, &at) && vt_snap_time_at(d, 0, &first) &&
        vt_snap_time_at(d, d->tl.nev - 1, &last) && first <= at && at <= last) {
        /* The driver's peak lasts until the allocator's next segment
         * event; within it the allocator's state at its most allocated
         * (at the peak's own instant the tensor the new segment is for
         * may not be placed yet) */
        const struct vt_snap_timeline *t = &d->tl;
        uint64_t allocated = t->initial.allocated, reserved = t->initial.reserved;
        size_t upto = 0;
        while (upto < t->nev && vt_snap_time_at(d, upto, &when) && when <= at)
            vt_snap_totals_step(t, &t->ev[upto++], &allocated, &reserved);
        size_t best = upto;
        uint64_t most = allocated;
        for (size_t i = upto; i < t->nev && !is_segment_event(t->ev[i].action); i++) {
            vt_snap_totals_step(t, &t->ev[i], &allocated, &reserved);
            if (allocated > most)
                most = allocated, best = i + 1;
        }
        upto = best;
        struct vt_snap_state st;
        if (vt_snap_state_at(&d->tl, upto, &st) &&
            tensor_level(s, replay_of(rep, input)->parts, &st, 0))
            file_name(s, path);
        vt_snap_state_free(&st);
    } else if (d && d->tl.nev) {
        s->history_short = true;
        file_name(s, path);
    }
    vt_snap_analysis_free(&a);
}

/* ---- the theory ---- */

static bool is_adam(const char *optimizer)
{
    return optimizer && (strstr(optimizer, "Adam") != NULL);
}

static bool is_plain_sgd(const char *optimizer)
{
    return optimizer && !strcmp(optimizer, "SGD");
}

void vt_theory_of(struct vt_report *rep, size_t input, struct vt_theory *t)
{
    memset(t, 0, sizeof *t);
    const struct vt_parts *p = replay_of(rep, input)->parts;
    if (!p || !p->ncensuses)
        return;
    /* the census with the most gradient and state bytes: the fullest */
    uint64_t best = 0;
    t->census = &p->censuses[0];
    for (size_t k = 0; k < p->ncensuses; k++) {
        const struct vt_part_census *c = &p->censuses[k];
        uint64_t sum = 0;
        for (size_t i = c->first; i < c->first + c->count; i++)
            if (p->tensors[i].part == VT_PART_GRADIENT ||
                p->tensors[i].part == VT_PART_OPTIMIZER_STATE)
                sum += p->tensors[i].bytes;
        if (sum > best) {
            best = sum;
            t->census = c;
        }
    }
    const struct vt_part_census *c = t->census;
    t->known = true;
    t->optimizer = c->optimizer ? vt_report_string(rep, input, c->optimizer) : NULL;
    double hand_bytes = 0; /* the parameters' own element sizes */
    for (size_t i = c->first; i < c->first + c->count; i++) {
        const struct vt_part_tensor *x = &p->tensors[i];
        switch (x->part) {
        case VT_PART_PARAMETER: {
            const char *dt = x->dtype ? vt_report_string(rep, input, x->dtype) : "?";
            size_t k = 0;
            while (k < t->ndtypes && strcmp(t->params[k].dtype, dt))
                k++;
            if (k == t->ndtypes && t->ndtypes < VT_THEORY_DTYPES)
                t->params[t->ndtypes++].dtype = dt;
            if (k < t->ndtypes) {
                t->params[k].count += x->elements;
                t->params[k].bytes += x->bytes;
            }
            t->param_count += x->elements;
            t->param_bytes += x->bytes;
            hand_bytes += (double)x->bytes;
            break;
        }
        case VT_PART_BUFFER: t->buffer_bytes += x->bytes; break;
        case VT_PART_GRADIENT: t->grad_bytes += x->bytes; t->grads_seen = true; break;
        case VT_PART_OPTIMIZER_STATE: t->state_bytes += x->bytes; break;
        default: break;
        }
    }
    if (!t->param_count)
        return;
    double n = (double)t->param_count;
    t->hand_params = t->param_bytes;
    /* a gradient has its parameter's dtype */
    t->hand_grad_per_param = hand_bytes / n;
    t->hand_grads = t->param_bytes;
    /* AdamW and Adam: exp_avg and exp_avg_sq, each of the parameter's
     * dtype (torch.zeros_like); plain SGD: none */
    t->state_rule = is_adam(t->optimizer) || is_plain_sgd(t->optimizer);
    t->hand_state_per_param = is_adam(t->optimizer) ? 2 * hand_bytes / n : 0;
    t->hand_state = is_adam(t->optimizer) ? 2 * t->param_bytes : 0;
    t->grad_per_param = (double)t->grad_bytes / n;
    t->state_per_param = (double)t->state_bytes / n;
}
