/* `vramtrace fit --json` for scripts (docs/user/FIT.md, "JSON"). */
#include "fit.h"

#include <stdlib.h>

#include "json_writer.h"

static void law(struct vt_json *j, const char *key, const struct vt_fit_law *l)
{
    vt_json_key(j, key);
    vt_json_begin_object(j);
    vt_json_kv_string(j, "kind", vt_fit_law_name(l->kind));
    vt_json_key(j, "coefficients");
    vt_json_begin_array(j);
    for (int k = 0; k <= (int)l->kind; k++)
        vt_json_double(j, l->c[k]);
    vt_json_end_array(j);
    vt_json_kv_double(j, "residual", l->residual);
    vt_json_kv_uint(j, "points", l->points);
    vt_json_end_object(j);
}

static void site(struct vt_json *j, const struct vt_fit_model *m, size_t alloc)
{
    const struct vt_fit_group *g = &m->groups[m->group_of[alloc]];
    vt_json_kv_string(j, "site", g->shown);
    vt_json_kv_string(j, "phase", g->phase);
}

static void eval(struct vt_json *j, const char *key, const struct vt_fit_model *m,
                 const struct vt_fit_eval *ev, bool with_parts)
{
    vt_json_key(j, key);
    if (!ev) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_int(j, "value", ev->value);
    vt_json_kv_bool(j, "fits", ev->fits);
    vt_json_kv_uint(j, "peak_bytes", ev->peak);
    vt_json_kv_uint(j, "peak_allocated_bytes", ev->peak_allocated);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t p = 0; p < ev->nphase_peaks; p++) {
        if (!ev->phase_peak[p])
            continue;
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", p < m->tpl->nphases ? m->tpl->phases[p] : NULL);
        vt_json_kv_uint(j, "peak_bytes", ev->phase_peak[p]);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_key(j, "failure");
    if (ev->fits) {
        vt_json_null(j);
    } else {
        vt_json_begin_object(j);
        site(j, m, ev->fail_alloc);
        vt_json_kv_uint(j, "request_bytes", ev->fail_request);
        vt_json_kv_uint(j, "in_use_bytes", ev->fail_in_use);
        vt_json_kv_bool(j, "fragmented", ev->fail_fragmented);
        vt_json_end_object(j);
    }
    if (with_parts) {
        uint64_t *parts = calloc(m->ngroups + 1, sizeof *parts);
        vt_json_key(j, "parts");
        vt_json_begin_array(j);
        if (parts && vt_fit_parts_at(m, ev->value, ev->peak_step, parts))
            for (size_t g = 0; g < m->ngroups; g++) {
                if (!parts[g])
                    continue;
                vt_json_begin_object(j);
                vt_json_kv_string(j, "site", m->groups[g].shown);
                vt_json_kv_string(j, "phase", m->groups[g].phase);
                vt_json_kv_uint(j, "bytes", parts[g]);
                vt_json_end_object(j);
            }
        vt_json_end_array(j);
        free(parts);
    }
    vt_json_end_object(j);
}

static void groups(struct vt_json *j, const struct vt_fit_model *m)
{
    vt_json_key(j, "laws");
    vt_json_begin_array(j);
    for (size_t g = 0; g < m->ngroups; g++) {
        const struct vt_fit_group *gr = &m->groups[g];
        vt_json_begin_object(j);
        vt_json_kv_string(j, "site", gr->shown);
        vt_json_kv_string(j, "key", gr->key);
        vt_json_kv_string(j, "phase", gr->phase);
        vt_json_kv_uint(j, "runs_seen", gr->runs_seen);
        vt_json_kv_bool(j, "in_largest_run", gr->in_template);
        vt_json_kv_bool(j, "same_count", gr->per_alloc);
        law(j, "bytes", &gr->bytes);
        law(j, "count", &gr->count);
        vt_json_kv_double(j, "residual", gr->residual);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
}

static void header(struct vt_json *j, const struct vt_fit_model *m,
                   const struct vt_fit_replay_options *opt, const struct vt_fit_output *o)
{
    vt_json_kv_uint(j, "vramtrace_fit", 1); /* docs/fit.schema.json */
    vt_json_kv_string(j, "parameter", m->tpl->name);
    vt_json_kv_int(j, "device", m->tpl->device);
    vt_json_key(j, "runs");
    vt_json_begin_array(j);
    for (size_t r = 0; r < m->nruns; r++) {
        vt_json_begin_object(j);
        vt_json_kv_int(j, "value", m->runs[r].value);
        vt_json_kv_string(j, "trace", m->runs[r].path);
        vt_json_kv_uint(j, "peak_bytes", m->runs[r].peak);
        vt_json_kv_uint(j, "allocations", m->runs[r].nallocs);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_key(j, "capacity");
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "bytes", opt->capacity);
    vt_json_kv_string(j, "source", o->capacity_given                ? "option"
                                   : m->tpl->has_free_at_context ? "free_at_first_context"
                                                                 : "device");
    vt_json_kv_uint_or_null(j, "free_at_first_context_bytes", m->tpl->has_free_at_context,
                            m->tpl->free_at_context);
    vt_json_kv_uint(j, "device_total_bytes", m->tpl->device_total);
    vt_json_kv_uint(j, "context_bytes", m->tpl->context_bytes);
    vt_json_kv_uint(j, "contexts_unmeasured", m->tpl->contexts_unmeasured);
    vt_json_end_object(j);
    vt_json_kv_string(j, "traced", vt_fit_traced(m));
    vt_json_key(j, "allocator");
    if (opt->model) {
        char cfg[256];
        vt_alloc_config_format(&opt->cfg, cfg, sizeof cfg);
        vt_json_string(j, cfg);
    } else {
        vt_json_null(j);
    }
}

void vt_fit_write_json(FILE *out, const struct vt_fit_model *m,
                       const struct vt_fit_replay_options *opt, const struct vt_fit_output *o,
                       const struct vt_fit_answer *a, const struct vt_fit_eval *at)
{
    struct vt_json j;
    vt_json_init(&j, out, true);
    vt_json_begin_object(&j);
    header(&j, m, opt, o);
    if (at) {
        eval(&j, "at", m, at, true);
    } else {
        vt_json_kv_bool(&j, "unlimited", a->unlimited);
        vt_json_kv_int_or_null(&j, "max_fits", !a->unlimited, a->max_fits);
        vt_json_key(&j, "limited_by");
        if (a->unlimited) {
            vt_json_null(&j);
        } else {
            vt_json_begin_object(&j);
            const struct vt_fit_group *g = a->has_limit_group ? &m->groups[a->limit_group] : NULL;
            vt_json_kv_string(&j, "site", g ? g->shown : NULL);
            vt_json_kv_string(&j, "phase", g ? g->phase : NULL);
            vt_json_kv_uint(&j, "bytes", g ? a->limit_group_bytes : 0);
            vt_json_kv_int(&j, "value", a->at_next.value);
            vt_json_key(&j, "failing");
            vt_json_begin_object(&j);
            site(&j, m, a->at_next.fail_alloc);
            vt_json_kv_uint(&j, "request_bytes", a->at_next.fail_request);
            vt_json_kv_uint(&j, "in_use_bytes", a->at_next.fail_in_use);
            vt_json_kv_bool(&j, "fragmented", a->at_next.fail_fragmented);
            vt_json_end_object(&j);
            vt_json_end_object(&j);
        }
        eval(&j, "at_max", m, a->max_fits >= 1 ? &a->at_max : NULL, false);
        eval(&j, "at_next", m, a->unlimited ? NULL : &a->at_next, false);
        vt_json_key(&j, "confidence");
        vt_json_begin_object(&j);
        vt_json_kv_string(&j, "level", a->confidence);
        vt_json_kv_string(&j, "why", a->why[0] ? a->why : NULL);
        vt_json_kv_double(&j, "residual", a->residual);
        vt_json_kv_double(&j, "extrapolation", a->extrapolation);
        vt_json_end_object(&j);
        vt_json_kv_uint(&j, "evaluations", a->evaluations);
    }
    groups(&j, m);
    vt_json_end_object(&j);
    vt_json_newline(&j);
}
