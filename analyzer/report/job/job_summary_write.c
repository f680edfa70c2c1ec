/* A summary document from job views; the format: job_summary.h. */
#include "job_summary.h"

#include "divergence.h"

#include "report.h"

static void gpu_json(struct vt_json *j, const struct vt_jv_gpu_id *g)
{
    char hex[2 * VT_UUID_SIZE + 1];
    vt_jv_gpu_hex(g, hex);
    vt_json_kv_string(j, "gpu_uuid", g->has_uuid ? hex : NULL);
}

static void process_json(struct vt_json *j, const struct vt_jv_process *p)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "pid", p->pid);
    vt_json_kv_int_or_null(j, "rank", p->rank >= 0, p->rank);
    vt_json_kv_int_or_null(j, "local_rank", p->local_rank >= 0, p->local_rank);
    vt_json_kv_int_or_null(j, "world_size", p->world_size >= 0, p->world_size);
    vt_json_kv_string(j, "host", p->host);
    vt_json_kv_string(j, "command", p->command);
    vt_json_key(j, "devices");
    vt_json_begin_array(j);
    for (size_t k = 0; k < p->ndevices; k++) {
        const struct vt_jv_device *d = &p->devices[k];
        vt_json_begin_object(j);
        vt_json_kv_int(j, "device", d->device);
        gpu_json(j, &d->gpu);
        vt_json_kv_string(j, "gpu_name", d->gpu_name);
        vt_json_kv_uint(j, "capacity_bytes", d->capacity_bytes);
        vt_json_kv_uint(j, "peak_bytes", d->peak_bytes);
        vt_jv_contexts_json(j, d);
        vt_json_kv_uint(j, "failed_requests", d->failed_requests);
        vt_jv_parts_json(j, d);
        vt_json_kv_string(j, "site", d->site);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_kv_string(j, "visible_devices", p->visible_devices);
    vt_json_key(j, "contexts");
    vt_json_begin_array(j);
    for (size_t k = 0; k < p->ncontexts; k++) {
        const struct vt_jv_context *c = &p->contexts[k];
        vt_json_begin_object(j);
        vt_json_kv_int(j, "device", c->device);
        gpu_json(j, &c->gpu);
        vt_json_kv_uint(j, "bytes", c->bytes);
        vt_json_kv_string(j, "cost", c->cost);
        vt_json_kv_int(j, "begin_ns", c->begin_ns);
        vt_json_kv_int_or_null(j, "end_ns", c->end_ns >= 0, c->end_ns);
        vt_json_kv_string(j, "site", c->site);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t k = 0; k < p->nphases; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", p->phases[k].name);
        vt_json_kv_uint(j, "peak_bytes", p->phases[k].peak_bytes);
        vt_json_kv_uint(j, "growth_per_opening_bytes", p->phases[k].growth_per_opening);
        vt_json_kv_uint(j, "growth_from_opening", p->phases[k].growth_from_opening);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_jv_sites_json(j, p);
    vt_json_key(j, "timeline");
    if (p->timeline.n) {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "first_column", p->timeline.first);
        vt_json_key(j, "max_bytes");
        vt_json_begin_array(j);
        for (size_t c = 0; c < p->timeline.n; c++)
            vt_json_uint(j, p->timeline.max_bytes[c]);
        vt_json_end_array(j);
        vt_json_end_object(j);
    } else {
        vt_json_null(j);
    }
    vt_json_end_object(j);
}

static void failure_json(struct vt_json *j, const struct vt_jv_failure *f)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "process", f->process);
    vt_json_kv_int(j, "device", f->device);
    gpu_json(j, &f->gpu);
    vt_json_kv_uint(j, "time_ns", f->time_ns);
    vt_json_kv_int(j, "since_start_ns", f->since_start_ns);
    vt_json_kv_uint(j, "wall_ns", f->wall_ns);
    vt_json_kv_string(j, "api", f->api);
    vt_json_kv_uint(j, "requested_bytes", f->requested_bytes);
    vt_json_kv_string(j, "verdict", f->verdict);
    vt_json_kv_string(j, "user_frame", f->user_frame);
    vt_json_key(j, "frames");
    vt_json_begin_array(j);
    for (size_t k = 0; k < f->nframes; k++)
        vt_json_string(j, f->frames[k]);
    vt_json_end_array(j);
    vt_json_end_object(j);
}

void vt_job_summary_write(struct vt_job_view *const *views, size_t n, uint64_t resolution_ns,
                          struct vt_json *j)
{
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "vramtrace_summary", VT_SUMMARY_VERSION);
    vt_json_kv_uint(j, "resolution_ns", resolution_ns);
    vt_json_key(j, "jobs");
    vt_json_begin_array(j);
    for (size_t k = 0; k < n; k++) {
        const struct vt_job_view *v = views[k];
        vt_json_begin_object(j);
        vt_job_session_json(v, j);
        vt_json_key(j, "processes");
        vt_json_begin_array(j);
        for (size_t i = 0; i < v->nprocesses; i++)
            process_json(j, &v->processes[i]);
        vt_json_end_array(j);
        vt_json_key(j, "failures");
        vt_json_begin_array(j);
        for (size_t i = 0; i < v->nfailures; i++)
            failure_json(j, &v->failures[i]);
        vt_json_end_array(j);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_end_object(j);
    vt_json_newline(j);
}
