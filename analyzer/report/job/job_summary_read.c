/*
 * Reading summaries (job_summary.h) with jansson. A summary comes from
 * another machine: every value is checked for its type and range, and a
 * bad one is named by its place ("jobs[0].processes[3].pid: wants a
 * non-negative integer"); the file is then left out whole, never half read.
 */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "job_summary.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "input_files.h"


struct reader {
    char *err;
    size_t errlen;
    const char *path;
    bool failed;
};

static bool fail(struct reader *r, const char *where, const char *fmt, ...)
{
    if (r->failed)
        return false;
    r->failed = true;
    int n = snprintf(r->err, r->errlen, "%s: %s: ", r->path, where);
    if (n >= 0 && (size_t)n < r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool out_of_memory(struct reader *r, const char *where)
{
    return fail(r, where, "out of memory");
}

/* obj's key as a non-negative integer; required: absent is an error. */
static bool get_uint(struct reader *r, const char *where, json_t *obj, const char *key,
                     uint64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return fail(r, where, "\"%s\" wants a non-negative integer", key);
    *out = (uint64_t)json_integer_value(v);
    return true;
}

/* The same, where the key came later than the format's version 1: absent
 * reads as 0. */
static bool get_uint_since_v1(struct reader *r, const char *where, json_t *obj, const char *key,
                              uint64_t *out)
{
    *out = 0;
    return !json_object_get(obj, key) || get_uint(r, where, obj, key, out);
}

static bool get_int(struct reader *r, const char *where, json_t *obj, const char *key,
                    int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        return fail(r, where, "\"%s\" wants an integer", key);
    *out = (int64_t)json_integer_value(v);
    return true;
}

/* An integer >= 0 or null (-1). */
static bool get_long_or_null(struct reader *r, const char *where, json_t *obj, const char *key,
                             long *out)
{
    json_t *v = json_object_get(obj, key);
    if (json_is_null(v)) {
        *out = -1;
        return true;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
        return fail(r, where, "\"%s\" wants null or an integer from 0 to %d", key, INT32_MAX);
    *out = (long)json_integer_value(v);
    return true;
}

/* A string or null, copied (NULL for null); no NUL inside. */
static bool get_string(struct reader *r, const char *where, json_t *obj, const char *key,
                       char **out)
{
    json_t *v = json_object_get(obj, key);
    *out = NULL;
    if (json_is_null(v))
        return true;
    if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
        return fail(r, where, "\"%s\" wants null or a string", key);
    *out = strdup(json_string_value(v));
    return *out ? true : out_of_memory(r, where);
}

/* The same, where the key came later than the format's version 1: absent
 * reads as NULL. */
static bool get_string_since_v1(struct reader *r, const char *where, json_t *obj,
                                const char *key, char **out)
{
    *out = NULL;
    return !json_object_get(obj, key) || get_string(r, where, obj, key, out);
}

static json_t *get_array(struct reader *r, const char *where, json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (!json_is_array(v)) {
        fail(r, where, "\"%s\" wants an array", key);
        return NULL;
    }
    return v;
}

static bool get_gpu(struct reader *r, const char *where, json_t *obj, struct vt_jv_gpu_id *g)
{
    json_t *v = json_object_get(obj, "gpu_uuid");
    memset(g, 0, sizeof *g);
    if (json_is_null(v))
        return true;
    if (!json_is_string(v) || !vt_jv_gpu_parse(json_string_value(v), g))
        return fail(r, where, "\"gpu_uuid\" wants null or %d hex digits", 2 * VT_UUID_SIZE);
    return true;
}

static bool want_object(struct reader *r, const char *where, json_t *v)
{
    return json_is_object(v) ? true : fail(r, where, "wants an object");
}

/* "parts": absent (a summary older than parts) or null: not known. */
static bool read_parts(struct reader *r, const char *where, json_t *o, struct vt_jv_device *d)
{
    json_t *v = json_object_get(o, "parts");
    if (!v || json_is_null(v))
        return true;
    if (!want_object(r, where, v))
        return false;
    for (size_t k = 0; k < VT_PART_COUNT_ - 1; k++)
        if (!get_uint(r, where, v, vt_jv_part_keys[k], &d->parts[k]))
            return false;
    d->parts_known = true;
    return true;
}

/* "contexts_bytes" and "contexts_unmeasured": absent where the source
 * could not tell (peak_contexts.h), and in a summary older than them. */
static bool read_device_contexts(struct reader *r, const char *where, json_t *o,
                                 struct vt_jv_device *d)
{
    uint64_t unmeasured = 0;
    d->contexts_said = json_object_get(o, "contexts_bytes") != NULL;
    if (!get_uint_since_v1(r, where, o, "contexts_bytes", &d->contexts_bytes) ||
        !get_uint_since_v1(r, where, o, "contexts_unmeasured", &unmeasured))
        return false;
    d->contexts_unmeasured = unmeasured > UINT32_MAX ? UINT32_MAX : (uint32_t)unmeasured;
    return true;
}

static bool read_device(struct reader *r, const char *where, json_t *o, struct vt_jv_device *d)
{
    return want_object(r, where, o) && get_int(r, where, o, "device", &d->device) &&
           get_gpu(r, where, o, &d->gpu) && get_string(r, where, o, "gpu_name", &d->gpu_name) &&
           get_uint(r, where, o, "capacity_bytes", &d->capacity_bytes) &&
           get_uint(r, where, o, "peak_bytes", &d->peak_bytes) &&
           read_device_contexts(r, where, o, d) &&
           get_uint(r, where, o, "failed_requests", &d->failed_requests) &&
           read_parts(r, where, o, d) && get_string_since_v1(r, where, o, "site", &d->site);
}

/* A context the process made: "cost" one of vt_context_cost_name's. */
static bool read_context(struct reader *r, const char *where, json_t *o, struct vt_jv_context *c)
{
    json_t *end;
    if (!want_object(r, where, o) || !get_int(r, where, o, "device", &c->device) ||
        !get_gpu(r, where, o, &c->gpu) || !get_uint(r, where, o, "bytes", &c->bytes) ||
        !get_string(r, where, o, "cost", &c->cost) ||
        !get_int(r, where, o, "begin_ns", &c->begin_ns) ||
        !get_string(r, where, o, "site", &c->site))
        return false;
    if (!c->cost || (strcmp(c->cost, "free-memory drop") && strcmp(c->cost, "NVML") &&
                     strcmp(c->cost, "not measured")))
        return fail(r, where, "\"cost\" wants \"free-memory drop\", \"NVML\" or \"not measured\"");
    end = json_object_get(o, "end_ns");
    c->end_ns = -1;
    if (json_is_null(end))
        return true;
    if (!json_is_integer(end) || json_integer_value(end) < 0)
        return fail(r, where, "\"end_ns\" wants null or a non-negative integer");
    c->end_ns = (int64_t)json_integer_value(end);
    return true;
}

/* "contexts": absent in a summary older than contexts. */
static bool read_contexts(struct reader *r, const char *where, json_t *o, struct vt_jv_process *p)
{
    json_t *list = json_object_get(o, "contexts");
    if (!list)
        return true;
    if (!json_is_array(list))
        return fail(r, where, "\"contexts\" wants an array");
    p->contexts = calloc(json_array_size(list) + 1, sizeof *p->contexts);
    if (!p->contexts)
        return out_of_memory(r, where);
    char at[160];
    for (size_t k = 0; k < json_array_size(list); k++) {
        snprintf(at, sizeof at, "%s.contexts[%zu]", where, k);
        /* counted first: the process's free releases what was read */
        if (!read_context(r, at, json_array_get(list, k), &p->contexts[p->ncontexts++]))
            return false;
    }
    return true;
}

static bool read_timeline(struct reader *r, const char *where, json_t *o, struct vt_jv_timeline *tl)
{
    if (json_is_null(o))
        return true;
    json_t *cols;
    if (!want_object(r, where, o) || !get_uint(r, where, o, "first_column", &tl->first) ||
        !(cols = get_array(r, where, o, "max_bytes")))
        return false;
    size_t n = json_array_size(cols);
    if (n > VT_JOB_COLUMNS_MAX || tl->first > UINT64_MAX - n)
        return fail(r, where, "a timeline of %zu columns from column %llu: too long", n,
                    (unsigned long long)tl->first);
    tl->max_bytes = calloc(n + 1, sizeof *tl->max_bytes);
    if (!tl->max_bytes)
        return out_of_memory(r, where);
    tl->n = tl->cap = n;
    for (size_t c = 0; c < n; c++) {
        json_t *v = json_array_get(cols, c);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return fail(r, where, "\"max_bytes\"[%zu] wants a non-negative integer", c);
        tl->max_bytes[c] = (uint64_t)json_integer_value(v);
    }
    return true;
}

/* "sites" (divergence.h): absent in a summary older than divergence. */
static bool read_sites(struct reader *r, const char *where, json_t *o, struct vt_jv_process *p)
{
    json_t *sites = json_object_get(o, "sites");
    if (!sites)
        return true;
    if (!(sites = get_array(r, where, o, "sites")))
        return false;
    p->sites = calloc(json_array_size(sites) + 1, sizeof *p->sites);
    if (!p->sites)
        return out_of_memory(r, where);
    char at[160];
    for (size_t k = 0; k < json_array_size(sites); k++) {
        snprintf(at, sizeof at, "%s.sites[%zu]", where, k);
        json_t *s = json_array_get(sites, k);
        struct vt_jv_site *x = &p->sites[p->nsites];
        if (!want_object(r, at, s) || !get_string(r, at, s, "name", &x->name) ||
            !get_uint(r, at, s, "peak_bytes", &x->peak_bytes) ||
            !get_uint(r, at, s, "bytes_per_step", &x->bytes_per_step) ||
            !get_uint(r, at, s, "from_step", &x->from_step) ||
            !get_uint(r, at, s, "steps", &x->steps)) {
            free(x->name);
            return false;
        }
        if (!x->name)
            return fail(r, at, "\"name\" wants a string");
        p->nsites++;
    }
    return true;
}

static bool read_process(struct reader *r, const char *where, json_t *o, struct vt_jv_process *p,
                         const struct vt_job_filter *filter, bool *selected)
{
    json_t *devices, *phases;
    if (!want_object(r, where, o) || !get_uint(r, where, o, "pid", &p->pid) ||
        !get_long_or_null(r, where, o, "rank", &p->rank) ||
        !get_long_or_null(r, where, o, "local_rank", &p->local_rank) ||
        !get_long_or_null(r, where, o, "world_size", &p->world_size) ||
        !get_string(r, where, o, "host", &p->host) ||
        !get_string(r, where, o, "command", &p->command) ||
        !(devices = get_array(r, where, o, "devices")) ||
        !(phases = get_array(r, where, o, "phases")) ||
        !read_timeline(r, where, json_object_get(o, "timeline"), &p->timeline) ||
        !get_string_since_v1(r, where, o, "visible_devices", &p->visible_devices) ||
        !read_contexts(r, where, o, p))
        return false;
    *selected = !(filter->has_pid && p->pid != filter->pid) &&
                !(filter->has_rank && (p->rank < 0 || (uint64_t)p->rank != filter->rank));
    p->devices = calloc(json_array_size(devices) + 1, sizeof *p->devices);
    p->phases = calloc(json_array_size(phases) + 1, sizeof *p->phases);
    if (!p->devices || !p->phases)
        return out_of_memory(r, where);
    char at[128];
    for (size_t k = 0; k < json_array_size(devices); k++) {
        snprintf(at, sizeof at, "%s.devices[%zu]", where, k);
        struct vt_jv_device *d = &p->devices[p->ndevices];
        if (!read_device(r, at, json_array_get(devices, k), d)) {
            free(d->gpu_name);
            free(d->site);
            return false;
        }
        if (filter->has_device && d->device != filter->device) {
            free(d->gpu_name);
            free(d->site);
            d->gpu_name = d->site = NULL;
            continue;
        }
        p->ndevices++;
    }
    if (filter->has_device && !p->ndevices)
        *selected = false; /* --device N: nothing on N */
    for (size_t k = 0; k < json_array_size(phases); k++) {
        snprintf(at, sizeof at, "%s.phases[%zu]", where, k);
        json_t *ph = json_array_get(phases, k);
        struct vt_jv_phase *x = &p->phases[p->nphases];
        if (!want_object(r, at, ph) || !get_string(r, at, ph, "name", &x->name) ||
            !get_uint(r, at, ph, "peak_bytes", &x->peak_bytes) ||
            !get_uint_since_v1(r, at, ph, "growth_per_opening_bytes", &x->growth_per_opening) ||
            !get_uint_since_v1(r, at, ph, "growth_from_opening", &x->growth_from_opening)) {
            free(x->name);
            return false;
        }
        if (!x->name)
            return fail(r, at, "\"name\" wants a string");
        p->nphases++;
    }
    return read_sites(r, where, o, p);
}

static bool read_frames(struct reader *r, const char *where, json_t *o, struct vt_jv_failure *f)
{
    json_t *frames = get_array(r, where, o, "frames");
    if (!frames)
        return false;
    size_t n = json_array_size(frames);
    if (n > VT_JOB_FRAMES_MAX)
        n = VT_JOB_FRAMES_MAX;
    f->frames = calloc(n + 1, sizeof *f->frames);
    if (!f->frames)
        return out_of_memory(r, where);
    for (size_t k = 0; k < n; k++) {
        json_t *s = json_array_get(frames, k);
        if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s))
            return fail(r, where, "\"frames\"[%zu] wants a string", k);
        if (!(f->frames[f->nframes] = strdup(json_string_value(s))))
            return out_of_memory(r, where);
        f->nframes++;
    }
    return true;
}

static bool read_failure(struct reader *r, const char *where, json_t *o, struct vt_jv_failure *f,
                         size_t nprocesses)
{
    uint64_t process = 0;
    if (!want_object(r, where, o) || !get_uint(r, where, o, "process", &process) ||
        !get_int(r, where, o, "device", &f->device) || !get_gpu(r, where, o, &f->gpu) ||
        !get_uint(r, where, o, "time_ns", &f->time_ns) ||
        !get_int(r, where, o, "since_start_ns", &f->since_start_ns) ||
        !get_uint(r, where, o, "wall_ns", &f->wall_ns) ||
        !get_string(r, where, o, "api", &f->api) ||
        !get_uint(r, where, o, "requested_bytes", &f->requested_bytes) ||
        !get_string(r, where, o, "verdict", &f->verdict) ||
        !get_string(r, where, o, "user_frame", &f->user_frame) || !read_frames(r, where, o, f))
        return false;
    if (process >= nprocesses)
        return fail(r, where, "\"process\" %llu: the job has %zu processes",
                    (unsigned long long)process, nprocesses);
    f->process = (size_t)process;
    return true;
}

/* One job of a file into v; processes the filter leaves out are dropped
 * with their failures. */
static bool read_job(struct reader *r, const char *where, json_t *o, struct vt_job_view *v,
                     const struct vt_job_filter *filter)
{
    json_t *procs, *fails;
    uint64_t start = 0;
    json_t *sv = json_object_get(o, "session_start_unix_ns");
    v->has_session_start = !json_is_null(sv);
    if (!want_object(r, where, o) || !get_string(r, where, o, "session", &v->session) ||
        (v->has_session_start && !get_uint(r, where, o, "session_start_unix_ns", &start)) ||
        !get_string(r, where, o, "session_host", &v->session_host) ||
        !get_string(r, where, o, "session_command", &v->session_command) ||
        !(procs = get_array(r, where, o, "processes")) ||
        !(fails = get_array(r, where, o, "failures")))
        return false;
    v->session_start_unix_ns = start;
    size_t n = json_array_size(procs);
    size_t *kept = calloc(n + 1, sizeof *kept); /* file index -> view index + 1, 0: left out */
    if (!kept)
        return out_of_memory(r, where);
    char at[96];
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        snprintf(at, sizeof at, "%s.processes[%zu]", where, i);
        struct vt_jv_process *p = vt_job_view_add_process(v);
        bool selected = false;
        ok = p ? read_process(r, at, json_array_get(procs, i), p, filter, &selected)
               : out_of_memory(r, at);
        if (ok && selected) {
            kept[i] = v->nprocesses;
        } else if (p) {
            vt_job_view_drop_last_process(v); /* not selected, or bad */
        }
    }
    for (size_t k = 0; ok && k < json_array_size(fails); k++) {
        snprintf(at, sizeof at, "%s.failures[%zu]", where, k);
        struct vt_jv_failure *f = vt_job_view_add_failure(v);
        ok = f ? read_failure(r, at, json_array_get(fails, k), f, n) : out_of_memory(r, at);
        bool keep = ok && kept[f->process] &&
                    !(filter->has_device && f->device != filter->device);
        if (keep) {
            f->process = kept[f->process] - 1;
        } else if (f) {
            vt_job_view_drop_last_failure(v);
        }
    }
    free(kept);
    return ok;
}

bool vt_job_summary_is(const char *path)
{
    char head[VT_JOB_SUMMARY_HEAD + 1] = {0};
    return vt_job_summary_head_is(head, vt_input_file_head(path, head, VT_JOB_SUMMARY_HEAD));
}

bool vt_job_summary_head_is(const char *head, size_t n)
{
    static const char key[] = "\"vramtrace_summary\"";
    size_t i = 0;
    /* '{', then the key, with any JSON whitespace around */
    for (int part = 0; part < 2; part++) {
        while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
            i++;
        if (part == 0 && (i >= n || head[i++] != '{'))
            return false;
    }
    return !strncmp(head + i, key, sizeof key - 1);
}

static struct vt_job_view *find_job(struct vt_job_summaries *s, const char *session)
{
    for (size_t k = 0; k < s->n; k++) {
        const char *a = s->views[k]->session;
        if ((!a && !session) || (a && session && !strcmp(a, session)))
            return s->views[k];
    }
    return NULL;
}

static bool read_document(struct reader *r, json_t *doc, struct vt_job_summaries *s,
                          const struct vt_job_filter *filter)
{
    uint64_t version = 0, resolution = 0;
    json_t *jobs;
    if (!want_object(r, "top", doc) || !get_uint(r, "top", doc, "vramtrace_summary", &version))
        return false;
    if (version != VT_SUMMARY_VERSION)
        return fail(r, "top", "summary version %llu; this vramtrace reads version %d",
                    (unsigned long long)version, VT_SUMMARY_VERSION);
    if (!get_uint(r, "top", doc, "resolution_ns", &resolution) ||
        !(jobs = get_array(r, "top", doc, "jobs")))
        return false;
    if (!resolution)
        return fail(r, "top", "\"resolution_ns\" wants a positive integer");
    if (s->resolution_ns && resolution != s->resolution_ns)
        return fail(r, "top", "timeline resolution %llu ns, the other summaries' is %llu ns: "
                              "write them with the same --resolution",
                    (unsigned long long)resolution, (unsigned long long)s->resolution_ns);
    /* Read whole before anything is merged: a bad file is left out whole. */
    size_t n = json_array_size(jobs);
    struct vt_job_view *read = calloc(n + 1, sizeof *read);
    if (!read)
        return out_of_memory(r, "jobs");
    bool ok = true;
    for (size_t k = 0; ok && k < n; k++) {
        char at[32];
        snprintf(at, sizeof at, "jobs[%zu]", k);
        read[k].resolution_ns = resolution;
        read[k].has_timelines = true;
        ok = read_job(r, at, json_array_get(jobs, k), &read[k], filter);
    }
    s->repeated = 0;
    for (size_t k = 0; ok && k < n; k++) {
        struct vt_job_view *into = find_job(s, read[k].session);
        if (into) {
            s->repeated += vt_job_view_drop_known(into, &read[k]);
            ok = vt_job_view_merge(into, &read[k]) || out_of_memory(r, "jobs");
            continue;
        }
        struct vt_job_view *v = malloc(sizeof *v);
        if (!v || !vt_grow_array((void **)&s->views, &s->cap, s->n + 1, sizeof *s->views)) {
            free(v);
            ok = out_of_memory(r, "jobs");
            break;
        }
        *v = read[k];
        memset(&read[k], 0, sizeof read[k]);
        s->views[s->n++] = v;
    }
    if (ok)
        s->resolution_ns = resolution;
    for (size_t k = 0; k < n; k++)
        vt_job_view_free(&read[k]);
    free(read);
    return ok;
}

bool vt_job_summaries_read(struct vt_job_summaries *s, const char *path,
                           const struct vt_job_filter *filter, char *err, size_t errlen)
{
    struct reader r = {err, errlen, path, false};
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        snprintf(err, errlen, "%s: line %d, column %d: %s", path, je.line, je.column, je.text);
        return false;
    }
    bool ok = read_document(&r, doc, s, filter);
    json_decref(doc);
    return ok;
}

void vt_job_summaries_free(struct vt_job_summaries *s)
{
    for (size_t k = 0; k < s->n; k++) {
        vt_job_view_free(s->views[k]);
        free(s->views[k]);
    }
    free(s->views);
    memset(s, 0, sizeof *s);
}
