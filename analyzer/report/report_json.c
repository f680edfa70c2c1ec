/*
 * `vramtrace report --json`. The keys listed in docs/REPORT.md under
 * "JSON" are a contract; new keys may be added, none renamed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "report.h"

static void frame_json(void *ctx, const struct vt_frame *f)
{
    struct vt_json *j = ctx;
    vt_json_begin_object(j);
    vt_json_key(j, "function");
    vt_json_string(j, f->function);
    vt_json_key(j, "file");
    vt_json_string(j, f->file);
    vt_json_key(j, "line");
    if (f->line)
        vt_json_uint(j, f->line);
    else
        vt_json_null(j);
    vt_json_key(j, "module");
    vt_json_string(j, f->module);
    vt_json_key(j, "ip");
    vt_json_uint(j, f->ip);
    vt_json_key(j, "inlined");
    vt_json_bool(j, f->inlined);
    vt_json_end_object(j);
}

static void frames_json(struct vt_report *rep, struct vt_json *j, size_t input, uint64_t stack)
{
    vt_json_key(j, "frames");
    vt_json_begin_array(j);
    vt_report_frames(rep, input, stack, 0, frame_json, j);
    vt_json_end_array(j);
}

static void sites_json(struct vt_report *rep, struct vt_json *j, size_t input,
                       const struct vt_site_bytes *top, size_t n)
{
    char buf[64];
    vt_json_begin_array(j);
    for (size_t i = 0; i < n; i++) {
        vt_json_begin_object(j);
        vt_json_key(j, "bytes");
        vt_json_uint(j, top[i].bytes);
        vt_json_key(j, "count");
        vt_json_uint(j, top[i].count);
        vt_json_key(j, "thread");
        vt_json_string(j, vt_report_thread_name(rep, input, top[i].thread, buf, sizeof buf));
        vt_json_key(j, "stack_id");
        vt_json_uint(j, top[i].stack);
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

static void oom_json(struct vt_report *rep, struct vt_json *j, size_t input,
                     const struct vt_oom *o, const struct vt_oom *prev)
{
    const struct vt_reader *r = rep->a->inputs[input].reader;
    char buf[64], story[512];
    vt_json_begin_object(j);
    vt_json_key(j, "time_ns");
    vt_json_uint(j, o->time_ns);
    vt_json_key(j, "requested_bytes");
    vt_json_uint(j, o->requested_bytes);
    vt_json_key(j, "free_bytes");
    if (o->driver_info)
        vt_json_uint(j, o->free_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "total_bytes");
    if (o->driver_info)
        vt_json_uint(j, o->total_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "process_bytes");
    vt_json_uint(j, o->process_bytes);
    vt_json_key(j, "process_bytes_by_kind");
    kind_bytes_json(j, o->kind_bytes);
    vt_json_key(j, "outside_bytes");
    if (o->driver_info)
        vt_json_uint(j, o->outside_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "contexts");
    vt_json_uint(j, o->contexts);
    vt_json_key(j, "context_bytes");
    if (o->context_known)
        vt_json_uint(j, o->context_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "other_processes_bytes");
    if (o->driver_info && o->context_known)
        vt_json_uint(j, o->other_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "cached_bytes");
    if (o->cached_known)
        vt_json_uint(j, o->cached_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "retry_succeeded");
    if (o->retry == VT_RETRY_NOT_SEEN)
        vt_json_null(j);
    else
        vt_json_bool(j, o->retry == VT_RETRY_SUCCEEDED);
    vt_json_key(j, "retry_of_previous");
    vt_json_bool(j, o->retry_of_previous);
    vt_json_key(j, "largest_free_block_bytes");
    vt_json_null(j);
    vt_json_key(j, "largest_free_block_note");
    vt_json_string(j, "not visible in a trace: the driver does not report its largest free "
                      "block, and with a caching allocator free space inside cached segments "
                      "never reaches the driver (a PyTorch memory snapshot shows it)");
    vt_json_key(j, "narrative");
    vt_json_string(j, vt_oom_narrative(o, prev, story, sizeof story));
    vt_json_key(j, "verdict");
    vt_json_string(j, vt_verdict_name(o->verdict));
    vt_json_key(j, "kind");
    vt_json_string(j, vt_kind_name(o->kind));
    vt_json_key(j, "api");
    vt_json_string(j, vt_reader_api(r, o->api));
    vt_json_key(j, "label");
    vt_json_string(j, o->label ? vt_reader_api(r, o->label) : NULL);
    vt_json_key(j, "result");
    vt_json_uint(j, o->result);
    vt_json_key(j, "thread");
    vt_json_string(j, vt_report_thread_name(rep, input, o->thread, buf, sizeof buf));
    vt_json_key(j, "phase");
    vt_json_string(j, o->phase ? vt_report_string(rep, input, o->phase) : NULL);
    vt_json_key(j, "released_after_bytes");
    vt_json_uint(j, o->released_bytes);
    vt_json_key(j, "released_after_count");
    vt_json_uint(j, o->released_count);
    vt_json_key(j, "retry");
    vt_json_string(j, o->retry == VT_RETRY_SUCCEEDED ? "succeeded"
                      : o->retry == VT_RETRY_FAILED  ? "failed"
                                                     : "not_seen");
    frames_json(rep, j, input, o->stack);
    vt_json_key(j, "top_stacks");
    size_t n = o->ntop < rep->opt->top ? o->ntop : rep->opt->top;
    sites_json(rep, j, input, o->top, n);
    vt_json_end_object(j);
}

static void phases_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_ledger *l, struct vt_site_bytes *top)
{
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t i = 0; i < l->nphases; i++) {
        const struct vt_phase_peak *p = &l->phases[i];
        const char *name = vt_report_string(rep, input, p->name);
        if (rep->opt->phase && (!name || strcmp(name, rep->opt->phase)))
            continue;
        vt_json_begin_object(j);
        vt_json_key(j, "name");
        vt_json_string(j, name ? name : "");
        vt_json_key(j, "peak_bytes");
        vt_json_uint(j, p->snap.peak_bytes);
        vt_json_key(j, "peak_time_ns");
        vt_json_uint(j, p->snap.peak_time_ns);
        vt_json_key(j, "opened");
        vt_json_uint(j, p->opened);
        vt_json_key(j, "peak_breakdown");
        size_t n = vt_sites_top(&l->sites, &p->snap, top, rep->opt->top);
        sites_json(rep, j, input, top, n);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

static void ledger_json(struct vt_report *rep, struct vt_json *j, size_t input,
                        const struct vt_ledger *l, struct vt_site_bytes *top)
{
    const struct vt_reader *r = rep->a->inputs[input].reader;
    const struct vt_device_info *dev = l->device >= 0 ? vt_reader_device(r, (uint64_t)l->device)
                                                      : NULL;
    char buf[64];
    vt_json_begin_object(j);
    vt_json_key(j, "device");
    if (l->device >= 0)
        vt_json_int(j, l->device);
    else
        vt_json_null(j);
    vt_json_key(j, "uuid");
    vt_json_string(j, dev ? vt_format_uuid(dev->uuid, buf, sizeof buf) : NULL);
    vt_json_key(j, "name");
    vt_json_string(j, dev ? dev->name : NULL);
    vt_json_key(j, "kind");
    vt_json_string(j, vt_category_name(l->category));
    vt_json_key(j, "total_bytes");
    if (dev && l->category == VT_CAT_DEVICE)
        vt_json_uint(j, dev->total_bytes);
    else
        vt_json_null(j);
    vt_json_key(j, "peak_bytes");
    vt_json_uint(j, l->peak.peak_bytes);
    vt_json_key(j, "peak_time_ns");
    vt_json_uint(j, l->peak.peak_time_ns);
    vt_json_key(j, "peak_count");
    vt_json_uint(j, l->peak.peak_count);
    vt_json_key(j, "final_bytes");
    vt_json_uint(j, l->sites.total_bytes);
    vt_json_key(j, "allocations");
    vt_json_uint(j, l->allocs);
    vt_json_key(j, "frees");
    vt_json_uint(j, l->frees);
    vt_json_key(j, "failed_allocations");
    vt_json_uint(j, l->failed_allocs);
    vt_json_key(j, "peak_breakdown");
    size_t n = vt_sites_top(&l->sites, &l->peak, top, rep->opt->top);
    sites_json(rep, j, input, top, n);
    phases_json(rep, j, input, l, top);
    vt_json_key(j, "ooms");
    vt_json_begin_array(j);
    for (size_t i = 0; i < l->nooms; i++)
        oom_json(rep, j, input, &l->ooms[i], i ? &l->ooms[i - 1] : NULL);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void process_json(struct vt_report *rep, struct vt_json *j, size_t input,
                         struct vt_site_bytes *top)
{
    const struct vt_input *in = &rep->a->inputs[input];
    const struct vt_process_info *p = vt_reader_process(in->reader);
    const struct vt_replay *rp = &in->replay;
    char cmd[4096];
    vt_json_begin_object(j);
    vt_json_key(j, "file");
    vt_json_string(j, in->path);
    vt_json_key(j, "pid");
    if (p)
        vt_json_uint(j, p->pid);
    else
        vt_json_null(j);
    vt_json_key(j, "ppid");
    if (p)
        vt_json_uint(j, p->ppid);
    else
        vt_json_null(j);
    vt_json_key(j, "rank");
    long rank = vt_report_rank(rep, input);
    if (rank >= 0)
        vt_json_int(j, rank);
    else
        vt_json_null(j);
    vt_json_key(j, "hostname");
    vt_json_string(j, p ? p->hostname : NULL);
    vt_json_key(j, "command");
    vt_json_string(j, vt_report_command(rep, input, cmd, sizeof cmd));
    vt_json_key(j, "start_mono_ns");
    vt_json_uint(j, p ? p->start_mono_ns : 0);
    vt_json_key(j, "time_unit_ns");
    vt_json_uint(j, vt_reader_time_unit_ns(in->reader));
    vt_json_key(j, "truncated");
    vt_json_bool(j, vt_reader_truncated(in->reader));
    vt_json_key(j, "truncation_note");
    vt_json_string(j, vt_reader_truncation_note(in->reader));
    vt_json_key(j, "error");
    vt_json_string(j, in->state < 0 ? vt_reader_error(in->reader)->message : NULL);
    vt_json_key(j, "lost_events");
    vt_json_uint(j, rp->lost_events);
    vt_json_key(j, "memory_events");
    vt_json_uint(j, rp->mem_events);
    vt_json_key(j, "unmatched_frees");
    vt_json_uint(j, rp->unmatched_frees);
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
        vt_json_key(j, "name");
        vt_json_string(j, vt_report_string(rep, input, rp->marks[i].name));
        vt_json_key(j, "time_ns");
        vt_json_uint(j, rp->marks[i].time_ns);
        vt_json_key(j, "device_bytes");
        vt_json_uint(j, rp->marks[i].device_bytes);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

static void gpu_json(struct vt_report *rep, struct vt_json *j, const struct vt_gpu *g)
{
    char buf[64];
    vt_json_begin_object(j);
    vt_json_key(j, "uuid");
    vt_json_string(j, g->has_uuid ? vt_format_uuid(g->uuid, buf, sizeof buf) : NULL);
    vt_json_key(j, "hostname");
    vt_json_string(j, g->hostname);
    vt_json_key(j, "name");
    vt_json_string(j, g->name);
    vt_json_key(j, "total_bytes");
    vt_json_uint(j, g->total_bytes);
    vt_json_key(j, "peak_bytes");
    vt_json_uint(j, g->peak_bytes);
    vt_json_key(j, "peak_time_ns");
    vt_json_uint(j, g->peak_time_ns);
    vt_json_key(j, "processes");
    vt_json_begin_array(j);
    for (size_t i = 0; i < rep->a->ninputs; i++) {
        if (!g->proc_used[i])
            continue;
        const struct vt_process_info *p = vt_reader_process(rep->a->inputs[i].reader);
        vt_json_begin_object(j);
        vt_json_key(j, "pid");
        if (p)
            vt_json_uint(j, p->pid);
        else
            vt_json_null(j);
        vt_json_key(j, "rank");
        long rank = vt_report_rank(rep, i);
        if (rank >= 0)
            vt_json_int(j, rank);
        else
            vt_json_null(j);
        vt_json_key(j, "bytes_at_peak");
        vt_json_uint(j, g->proc_peak[i]);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
}

int vt_report_json(struct vt_report *rep, FILE *out)
{
    struct vt_site_bytes *top = calloc(rep->opt->top ? rep->opt->top : 1, sizeof *top);
    if (!top)
        return 2;
    struct vt_json j;
    vt_json_init(&j, out, true);
    vt_json_begin_object(&j);
    vt_json_key(&j, "vramtrace_report");
    vt_json_uint(&j, 1);
    vt_json_key(&j, "processes");
    vt_json_begin_array(&j);
    for (size_t i = 0; i < rep->a->ninputs; i++)
        if (vt_report_input_selected(rep, i))
            process_json(rep, &j, i, top);
    vt_json_end_array(&j);
    vt_json_key(&j, "gpus");
    vt_json_begin_array(&j);
    for (size_t g = 0; g < rep->a->ngpus; g++)
        gpu_json(rep, &j, &rep->a->gpus[g]);
    vt_json_end_array(&j);
    vt_json_end_object(&j);
    vt_json_newline(&j);
    free(top);
    return 0;
}
