/*
 * `vramtrace report --json`. The keys listed in
 * docs/internals/REPORT_INTERNALS.md under "JSON" (and in
 * docs/report.schema.json) are a contract; new keys may be added, none
 * renamed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_errors.h"
#include "frame_class.h"
#include "growth_rule.h"
#include "json_writer.h"
#include "parts_split.h"
#include "peak_contexts.h"
#include "report.h"

struct frames_ctx {
    struct vt_json *j;
    struct vt_frame_classifier cls;
};

static void frame_json(void *ctx, const struct vt_frame *f)
{
    struct frames_ctx *c = ctx;
    struct vt_json *j = c->j;
    enum vt_frame_class cls = vt_frame_classify(&c->cls, f);
    vt_json_begin_object(j);
    vt_json_kv_string(j, "function", f->function);
    vt_json_kv_string(j, "file", f->file);
    vt_json_kv_uint_or_null(j, "line", f->line, f->line);
    vt_json_kv_string(j, "module", f->module);
    vt_json_kv_uint(j, "ip", f->ip);
    vt_json_kv_bool(j, "inlined", f->inlined);
    /* The text report leaves these out (docs/user/REPORT.md, "Stacks"). */
    vt_json_kv_bool(j, "folded", cls != VT_FRAME_OWN);
    vt_json_kv_string(j, "folded_as", vt_frame_class_name(cls));
    vt_json_end_object(j);
}

static void frames_json(struct vt_report *rep, struct vt_json *j, size_t input, uint64_t stack)
{
    struct frames_ctx c = {.j = j};
    vt_json_key(j, "frames");
    vt_json_begin_array(j);
    vt_report_frames(rep, input, stack, 0, frame_json, &c);
    vt_json_end_array(j);
}

static void sites_json(struct vt_report *rep, struct vt_json *j, size_t input,
                       const struct vt_site_bytes *top, size_t n)
{
    char buf[64];
    vt_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "bytes", top[i].bytes);
        vt_json_kv_uint(j, "count", top[i].count);
        if (vt_contexts_site(&rep->a->inputs[input].replay, top[i].stack, top[i].thread))
            vt_json_kv_bool(j, "context", true); /* a CUDA context's cost, no allocation */
        vt_json_kv_string(j, "thread",
                          vt_report_thread_name(rep, input, top[i].thread, buf, sizeof buf));
        vt_json_kv_uint(j, "stack_id", top[i].stack);
        frames_json(rep, j, input, top[i].stack);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

static void kind_bytes_json(struct vt_json *j, const uint64_t *kind_bytes)
{
    vt_json_begin_object(j);
    for (unsigned k = 1; k < VT_KIND_COUNT_; k++)
        if (kind_bytes[k]) {
            vt_json_key(j, vt_kind_name(k));
            vt_json_uint(j, kind_bytes[k]);
        }
    vt_json_end_object(j);
}

/* ooms[i] of l; a request's first failure (i == first) carries its
 * allocator_view (ooms[first .. end) are the request and its retries). */
static void oom_json(struct vt_report *rep, struct vt_json *j, size_t input,
                     const struct vt_ledger *l, size_t i, size_t first, size_t end)
{
    const struct vt_oom *o = &l->ooms[i];
    const struct vt_oom *prev = i ? &l->ooms[i - 1] : NULL;
    const struct vt_input *r = &rep->a->inputs[input];
    char buf[64], story[512];
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "time_ns", o->time_ns);
    vt_json_kv_uint(j, "requested_bytes", o->requested_bytes);
    vt_json_kv_uint_or_null(j, "free_bytes", o->driver_info, o->free_bytes);
    vt_json_kv_uint_or_null(j, "total_bytes", o->driver_info, o->total_bytes);
    vt_json_kv_uint(j, "process_bytes", o->process_bytes);
    vt_json_key(j, "process_bytes_by_kind");
    kind_bytes_json(j, o->kind_bytes);
    vt_json_kv_uint_or_null(j, "outside_bytes", o->driver_info, o->outside_bytes);
    vt_json_kv_uint(j, "contexts", o->contexts);
    vt_json_kv_uint_or_null(j, "context_bytes", o->context_known, o->context_bytes);
    vt_json_kv_uint_or_null(j, "other_processes_bytes", o->driver_info && o->context_known,
                            o->other_bytes);
    vt_json_kv_uint_or_null(j, "cached_bytes", o->cached_known, o->cached_bytes);
    vt_json_key(j, "retry_succeeded");
    if (o->retry == VT_RETRY_NOT_SEEN)
        vt_json_null(j);
    else
        vt_json_bool(j, o->retry == VT_RETRY_SUCCEEDED);
    vt_json_kv_bool(j, "retry_of_previous", o->retry_of_previous);
    vt_json_kv_uint(j, "retries", o->retries);
    /* Retries are judged as their request (its first failure). */
    struct vt_verdict_told told;
    vt_report_verdict(rep, input, l, first, end, &told);
    vt_json_kv_uint_or_null(j, "largest_free_block_bytes", told.has_largest_free,
                            told.largest_free_block);
    vt_json_kv_string(j, "largest_free_block_note",
                      told.has_largest_free
                          ? "from PyTorch's allocator at the failure (its OOM snapshot): the "
                            "largest free block in the pool the request was cut from"
                          : "not visible in a trace: the driver does not report its largest free "
                            "block, and with a caching allocator free space inside cached "
                            "segments never reaches the driver (a PyTorch memory snapshot shows "
                            "it)");
    vt_json_kv_string(j, "narrative", vt_oom_narrative(o, prev, story, sizeof story));
    vt_json_kv_string(j, "verdict", told.verdict);
    vt_json_kv_string(j, "verdict_source", told.source);
    vt_json_kv_string(j, "verdict_story", told.story);
    vt_json_kv_string(j, "next_step", told.next_step);
    vt_json_key(j, "trace_verdict");
    vt_json_begin_object(j);
    vt_json_kv_string(j, "verdict", told.trace_verdict);
    vt_json_kv_string(j, "story", told.trace_story);
    vt_json_kv_string(j, "set_aside_because", told.set_aside);
    vt_json_end_object(j);
    vt_json_kv_string(j, "kind", vt_kind_name(o->kind));
    vt_json_kv_string(j, "api", vt_input_api(r, o->api));
    vt_json_kv_string(j, "label", o->label ? vt_input_api(r, o->label) : NULL);
    vt_json_kv_uint(j, "result", o->result);
    vt_json_kv_string(j, "error", vt_cuda_error_name(o->result));
    vt_json_kv_string(j, "runtime_error", o->label ? vt_cuda_runtime_error_name(o->result) : NULL);
    vt_json_key(j, "other_traced_processes");
    vt_json_begin_array(j);
    for (size_t k = 0; k < o->nothers; k++) {
        const struct vt_process_info *p =
            vt_input_process(&rep->a->inputs[o->others[k].input]);
        vt_json_begin_object(j);
        vt_json_kv_uint_or_null(j, "pid", p, p ? p->pid : 0);
        vt_json_kv_uint(j, "bytes", o->others[k].bytes);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_kv_string(j, "thread", vt_report_thread_name(rep, input, o->thread, buf, sizeof buf));
    vt_json_kv_string(j, "phase", o->phase ? vt_report_string(rep, input, o->phase) : NULL);
    vt_json_kv_string(j, "outer_phase",
                      o->outer_phase ? vt_report_string(rep, input, o->outer_phase) : NULL);
    vt_json_kv_uint(j, "released_after_bytes", o->released_bytes);
    vt_json_kv_uint(j, "released_after_count", o->released_count);
    vt_json_kv_string(j, "retry",
                      o->retry == VT_RETRY_SUCCEEDED    ? "succeeded"
                          : o->retry == VT_RETRY_FAILED ? "failed"
                                                        : "not_seen");
    frames_json(rep, j, input, o->stack);
    vt_json_key(j, "top_stacks");
    size_t n = o->ntop < rep->opt->layout.top ? o->ntop : rep->opt->layout.top;
    sites_json(rep, j, input, o->top, n);
    if (i == first) {
        vt_report_torch_oom_json(rep, j, input, l, first, end);
        vt_parts_failure_json(rep, j, input, l, first, end);
    } else {
        vt_json_key(j, "allocator_view");
        vt_json_null(j);
        vt_json_key(j, "parts");
        vt_json_null(j);
    }
    vt_json_end_object(j);
}

/* A phase's "closings" and "growth" (phase_growth.h; null: it does not grow). */
static void growth_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_ledger *l, const struct vt_phase_peak *p,
                        struct vt_site_bytes *top)
{
    struct vt_growth_result g;
    vt_json_kv_uint(j, "closings", p->growth.closings);
    vt_json_key(j, "growth");
    if (!vt_growth_of(&p->growth, &g)) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_string(j, "level", "driver");
    vt_json_kv_uint(j, "per_opening_bytes", g.per_opening);
    vt_json_kv_uint(j, "from_opening", g.from_opening);
    vt_json_kv_uint(j, "openings", g.openings);
    vt_json_kv_uint(j, "first_bytes", g.first_bytes);
    vt_json_kv_uint(j, "last_bytes", g.last_bytes);
    vt_json_kv_bool(j, "sites_kept", !p->growth.sites_dropped);
    vt_json_key(j, "sites");
    size_t n = vt_report_growth_rows(l, p, top, rep->opt->layout.top);
    sites_json(rep, j, input, top, n);
    vt_json_end_object(j);
}

/* A phase's "tensor_growth" (vt_report_tensor_growth): the step phase's
 * only (one rate a step), null elsewhere and where no allocator history
 * covers its closings. */
static void tensor_growth_json(struct vt_json *j, const struct vt_tensor_growth *t)
{
    vt_json_key(j, "tensor_growth");
    if (!t || !t->known) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_string(j, "level", "tensors");
    vt_json_kv_uint(j, "closings", t->closings);
    vt_json_kv_bool(j, "grows", t->grows);
    vt_json_kv_uint_or_null(j, "per_opening_bytes", t->grows, t->g.per_opening);
    vt_json_kv_uint_or_null(j, "from_opening", t->grows, t->g.from_opening);
    vt_json_kv_uint_or_null(j, "openings", t->grows, t->g.openings);
    vt_json_kv_uint_or_null(j, "first_bytes", t->grows, t->g.first_bytes);
    vt_json_kv_uint_or_null(j, "last_bytes", t->grows, t->g.last_bytes);
    vt_json_end_object(j);
}

/* The device's "growth" at PyTorch's allocator's level (growth_rule.h):
 * null where nothing grows or nothing was sampled on this device. */
static void allocator_growth_json(struct vt_report *rep, struct vt_json *j, size_t input,
                                  const struct vt_ledger *l, const struct vt_tensor_growth *t)
{
    const struct vt_input *in = &rep->a->inputs[input];
    struct vt_growth_told g;
    vt_json_key(j, "growth");
    if (l->category != VT_CAT_DEVICE || !in->replay.samples ||
        in->replay.samples->device != l->device || !vt_growth_told_of(&in->replay, vt_input_device_total(in, l->device), &g)) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_string(j, "level", g.level);
    vt_json_kv_string(j, "step_phase", g.step_phase);
    vt_json_kv_uint(j, "per_step_bytes", g.r.per_opening);
    vt_json_kv_uint(j, "from_step", g.r.from_opening);
    vt_json_kv_uint(j, "steps", g.r.closings);
    vt_json_kv_uint(j, "steps_grown", g.r.openings);
    vt_json_kv_uint(j, "first_bytes", g.r.first_bytes);
    vt_json_kv_uint(j, "last_bytes", g.r.last_bytes);
    vt_json_kv_uint_or_null(j, "step_ns", g.step_ns != 0, g.step_ns);
    vt_json_kv_uint_or_null(j, "fills_device_at_step", g.fills, g.fills_at_step);
    vt_json_kv_uint_or_null(j, "fills_device_in_ns", g.fills && g.step_ns, g.fills_in_ns);
    /* the allocator's own sites where its history covers the steps */
    bool tensors = t && t->grows && t->nsites && !strcmp(g.level, "allocated");
    vt_json_kv_string(j, "sites_level", tensors ? "tensors" : "segments");
    vt_json_kv_bool(j, "sites_kept", tensors || !g.sites_dropped);
    vt_json_key(j, "sites");
    if (tensors)
        vt_report_tensor_sites_json(j, t->sites, t->nsites);
    else
        sites_json(rep, j, input, g.sites, g.nsites);
    vt_json_end_object(j);
}

/* The device's "allocator_largest_sample": PyTorch's allocator's sample of
 * the most reserved bytes (allocator_samples.h), null without one. */
static void allocator_sample_json(struct vt_report *rep, struct vt_json *j, size_t input,
                                  const struct vt_ledger *l)
{
    const struct vt_alloc_samples *ss = rep->a->inputs[input].replay.samples;
    vt_json_key(j, "allocator_largest_sample");
    if (l->category != VT_CAT_DEVICE || !ss || ss->peak.device != l->device) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "time_ns", ss->peak.time_ns);
    vt_json_kv_string(j, "phase", vt_report_string(rep, input, ss->peak.phase));
    vt_json_kv_uint(j, "allocated_bytes", ss->peak.allocated);
    vt_json_kv_uint(j, "reserved_bytes", ss->peak.reserved);
    vt_json_kv_uint(j, "active_bytes", ss->peak.active);
    vt_json_kv_uint(j, "samples", ss->count);
    vt_json_end_object(j);
}

static void phases_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_ledger *l, struct vt_site_bytes *top)
{
    /* only where a phase repeated: a snapshot is read for it */
    bool repeated = false;
    for (size_t i = 0; i < l->nphases; i++)
        repeated |= l->phases[i].growth.closings > VT_GROWTH_MIN_RISES;
    struct vt_tensor_growth t;
    bool history = repeated && vt_report_tensor_growth(rep, input, l, &t);
    allocator_growth_json(rep, j, input, l, history ? &t : NULL);
    allocator_sample_json(rep, j, input, l);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t i = 0; i < l->nphases; i++) {
        const struct vt_phase_peak *p = &l->phases[i];
        const char *name = vt_report_string(rep, input, p->name);
        if (rep->opt->select.phase && (!name || strcmp(name, rep->opt->select.phase)))
            continue;
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", name ? name : "");
        vt_json_kv_uint(j, "peak_bytes", p->state.peak_bytes);
        vt_json_kv_uint(j, "peak_time_ns", p->state.peak_time_ns);
        vt_json_kv_uint(j, "opened", p->opened);
        vt_json_kv_bool(j, "open_at_exit", p->open_at_exit);
        vt_json_key(j, "peak_breakdown");
        size_t n = vt_sites_top(&l->sites, &p->state, top, rep->opt->layout.top);
        sites_json(rep, j, input, top, n);
        growth_json(rep, j, input, l, p, top);
        tensor_growth_json(j, history && t.phase == i ? &t : NULL);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    if (history)
        vt_report_tensor_growth_free(&t);
}

static void ledger_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_ledger *l, struct vt_site_bytes *top)
{
    const struct vt_input *r = &rep->a->inputs[input];
    const struct vt_device_info *dev = l->device >= 0 ? vt_input_device(r, (uint64_t)l->device)
                                                      : NULL;
    char buf[64];
    vt_json_begin_object(j);
    vt_json_key(j, "device");
    if (l->device >= 0)
        vt_json_int(j, l->device);
    else
        vt_json_null(j);
    vt_json_kv_string(j, "uuid", dev ? vt_format_uuid(dev->uuid, buf, sizeof buf) : NULL);
    vt_json_kv_string(j, "name", dev ? dev->name : NULL);
    vt_json_kv_string(j, "kind", vt_category_name(l->category));
    vt_json_kv_uint_or_null(j, "total_bytes", dev && l->category == VT_CAT_DEVICE,
                            dev ? dev->total_bytes : 0);
    vt_json_kv_uint(j, "peak_bytes", l->peak.peak_bytes);
    struct vt_peak_contexts pc;
    if (vt_peak_contexts_of(&rep->a->inputs[input].replay, l, &pc))
        vt_peak_contexts_json(j, &pc);
    vt_json_kv_uint(j, "peak_time_ns", l->peak.peak_time_ns);
    vt_json_kv_uint(j, "peak_count", l->peak.peak_count);
    vt_json_kv_uint(j, "final_bytes", l->sites.total_bytes);
    vt_json_kv_uint(j, "final_count", l->sites.total_count);
    vt_json_kv_uint(j, "allocations", l->allocs);
    vt_json_kv_uint(j, "frees", l->frees);
    vt_json_kv_uint(j, "failed_allocations", l->failed_allocs);
    vt_json_kv_uint(j, "failed_requests", vt_ledger_failed_requests(l));
    vt_json_key(j, "peak_breakdown");
    size_t n = vt_sites_top(&l->sites, &l->peak, top, rep->opt->layout.top);
    sites_json(rep, j, input, top, n);
    vt_parts_json(rep, j, input, l);
    phases_json(rep, j, input, l, top);
    vt_json_key(j, "live_at_exit");
    n = vt_sites_top(&l->sites, NULL, top, rep->opt->layout.top);
    n = vt_peak_contexts_drop(&rep->a->inputs[input].replay, top, n);
    sites_json(rep, j, input, top, n);
    vt_json_key(j, "ooms");
    vt_json_begin_array(j);
    for (size_t first = 0, end; first < l->nooms; first = end) {
        end = vt_oom_request_end(l, first);
        for (size_t i = first; i < end; i++)
            oom_json(rep, j, input, l, i, first, end);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

/* The contexts the process made (contexts.h): their cost (null: not
 * measured) and how it was had, their life, the device's free bytes once
 * each existed, the program's frame that made it and its stack. */
static void contexts_json(struct vt_report *rep, struct vt_json *j, size_t input)
{
    const struct vt_replay *rp = &rep->a->inputs[input].replay;
    vt_json_key(j, "contexts");
    vt_json_begin_array(j);
    for (size_t k = 0; k < rp->ncontexts_made; k++) {
        const struct vt_context_made *m = &rp->contexts_made[k];
        char buf[512];
        vt_json_begin_object(j);
        vt_json_kv_int(j, "device", m->device);
        vt_json_kv_uint_or_null(j, "bytes", m->cost != VT_CONTEXT_COST_NOT_MEASURED, m->size);
        vt_json_kv_string(j, "cost", vt_context_cost_name(m->cost));
        vt_json_kv_uint(j, "time_ns", m->begin_ns);
        vt_json_kv_uint_or_null(j, "end_ns", m->ended, m->end_ns);
        vt_json_kv_uint_or_null(j, "free_after_bytes", m->has_free_after, m->free_after);
        vt_json_kv_string(j, "user_frame", vt_report_user_frame(rep, input, m->stack, buf, sizeof buf));
        frames_json(rep, j, input, m->stack);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

static void process_json(struct vt_report *rep, struct vt_json *j, size_t input,
                         struct vt_site_bytes *top)
{
    const struct vt_input *in = &rep->a->inputs[input];
    const struct vt_process_info *p = vt_input_process(in);
    const struct vt_replay *rp = &in->replay;
    char cmd[4096];
    vt_json_begin_object(j);
    vt_json_kv_string(j, "file", in->path);
    vt_json_kv_uint_or_null(j, "pid", p, p ? p->pid : 0);
    vt_json_kv_uint_or_null(j, "ppid", p, p ? p->ppid : 0);
    vt_json_key(j, "rank");
    long rank = vt_report_rank(rep, input);
    if (rank >= 0)
        vt_json_int(j, rank);
    else
        vt_json_null(j);
    long local = vt_report_local_rank(rep, input), world = vt_process_world_size(p);
    vt_json_key(j, "local_rank");
    if (local >= 0)
        vt_json_int(j, local);
    else
        vt_json_null(j);
    vt_json_key(j, "world_size");
    if (world >= 0)
        vt_json_int(j, world);
    else
        vt_json_null(j);
    vt_json_kv_string(j, "session", vt_process_session(p));
    vt_json_kv_uint(j, "job", in->job);
    vt_json_kv_string(j, "hostname", p ? p->hostname : NULL);
    vt_json_kv_string(j, "command", vt_report_command(rep, input, cmd, sizeof cmd));
    vt_json_kv_uint(j, "start_mono_ns", p ? p->start_mono_ns : 0);
    vt_json_kv_uint(j, "time_unit_ns", vt_input_time_unit_ns(in));
    vt_json_kv_bool(j, "truncated", vt_input_truncated(in));
    vt_json_kv_string(j, "truncation_note", vt_input_truncation_note(in));
    vt_json_kv_string(j, "error", vt_input_read_error(in));
    vt_json_kv_uint(j, "lost_events", rp->lost_events);
    vt_json_kv_uint(j, "memory_events", rp->mem_events);
    vt_json_kv_uint(j, "unmatched_frees", rp->unmatched_frees);
    vt_json_key(j, "devices");
    vt_json_begin_array(j);
    /* Device memory first, then managed, then pinned host. */
    for (int cat = VT_CAT_DEVICE; cat <= VT_CAT_HOST_PINNED; cat++)
        for (size_t i = 0; i < rp->nledgers; i++)
            if ((int)rp->ledgers[i].category == cat &&
                vt_report_ledger_selected(rep, &rp->ledgers[i]))
                ledger_json(rep, j, input, &rp->ledgers[i], top);
    vt_json_end_array(j);
    vt_json_key(j, "marks");
    vt_json_begin_array(j);
    for (size_t i = 0; i < rp->nmarks; i++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", vt_report_string(rep, input, rp->marks[i].name));
        vt_json_kv_uint(j, "time_ns", rp->marks[i].time_ns);
        vt_json_kv_uint(j, "device_bytes", rp->marks[i].device_bytes);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    contexts_json(rep, j, input);
    vt_json_end_object(j);
}

static void gpu_json(struct vt_report *rep, struct vt_json *j, const struct vt_gpu *g)
{
    char buf[64];
    vt_json_begin_object(j);
    vt_json_kv_string(j, "uuid", g->has_uuid ? vt_format_uuid(g->uuid, buf, sizeof buf) : NULL);
    vt_json_kv_string(j, "hostname", g->hostname);
    vt_json_kv_string(j, "name", g->name);
    vt_json_kv_uint(j, "total_bytes", g->total_bytes);
    vt_json_kv_uint(j, "peak_bytes", g->peak_bytes);
    vt_json_kv_uint(j, "peak_time_ns", g->peak_time_ns);
    vt_json_kv_uint(j, "job", g->job);
    vt_json_key(j, "processes");
    vt_json_begin_array(j);
    for (size_t k = 0; k < g->nmembers; k++) {
        size_t i = g->members[k];
        const struct vt_process_info *p = vt_input_process(&rep->a->inputs[i]);
        vt_json_begin_object(j);
        vt_json_kv_uint_or_null(j, "pid", p, p ? p->pid : 0);
        vt_json_key(j, "rank");
        long rank = vt_report_rank(rep, i);
        if (rank >= 0)
            vt_json_int(j, rank);
        else
            vt_json_null(j);
        vt_json_kv_uint(j, "bytes_at_peak", vt_gpu_peak_of(g, i));
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

bool vt_report_json_traces(struct vt_report *rep, struct vt_json *j)
{
    struct vt_site_bytes *top =
        rep ? calloc(rep->opt->layout.top ? rep->opt->layout.top : 1, sizeof *top) : NULL;
    vt_json_key(j, "processes");
    vt_json_begin_array(j);
    for (size_t i = 0; top && i < rep->a->ninputs; i++)
        if (vt_report_input_detailed(rep, i))
            process_json(rep, j, i, top);
    vt_json_end_array(j);
    bool ok = !rep || top;
    free(top);
    vt_json_key(j, "gpus");
    vt_json_begin_array(j);
    for (size_t g = 0; rep && g < rep->a->ngpus; g++)
        gpu_json(rep, j, &rep->a->gpus[g]);
    vt_json_end_array(j);
    vt_jobs_json(rep, j);
    return ok;
}
