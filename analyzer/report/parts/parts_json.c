/* The parts in the JSON report: a ledger's "parts" (at its peak, per phase
 * and the theory) and a failure's. See parts_split.h; the keys are in
 * docs/user/report.schema.json. */
#include <string.h>

#include "parts_split.h"

static void split_json(struct vt_report *rep, struct vt_json *j, size_t input,
                       const struct vt_split *s)
{
    if (!s->known) {
        vt_json_null(j);
        return;
    }
    const struct vt_part_census *c = s->census;
    vt_json_begin_object(j);
    vt_json_kv_string(j, "level", s->tensor_level ? "tensor" : "segment");
    vt_json_kv_uint(j, "time_ns", s->time_ns);
    vt_json_kv_uint(j, "total_bytes", s->total);
    vt_json_key(j, "census");
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "number", c->number);
    vt_json_kv_string(j, "why", vt_report_string(rep, input, c->why));
    vt_json_kv_uint(j, "time_ns", c->time_ns);
    vt_json_kv_uint(j, "optimizer_steps", c->steps);
    vt_json_kv_bool(j, "saw_model", c->saw & VT_PART_SAW_MODEL);
    vt_json_kv_bool(j, "saw_optimizer", c->saw & VT_PART_SAW_OPTIMIZER);
    vt_json_kv_string(j, "optimizer", c->optimizer ? vt_report_string(rep, input, c->optimizer)
                                                   : NULL);
    vt_json_kv_uint(j, "tensors", c->count);
    vt_json_kv_uint(j, "tensors_not_held", c->unheld);
    vt_json_end_object(j);
    vt_json_key(j, "bytes");
    vt_json_begin_object(j);
    for (unsigned r = 0; r < VT_SPLIT_ROWS_; r++)
        vt_json_kv_uint_or_null(j, vt_split_row_key(r), s->row_shown[r], s->rows[r]);
    vt_json_end_object(j);
    vt_json_end_object(j);
}

static void theory_json(struct vt_report *rep, struct vt_json *j, size_t input)
{
    struct vt_theory t;
    vt_theory_of(rep, input, &t);
    vt_json_key(j, "theory");
    if (!t.known) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_kv_uint(j, "census", t.census->number);
    vt_json_kv_string(j, "optimizer", t.optimizer);
    vt_json_kv_uint(j, "parameter_count", t.param_count);
    vt_json_key(j, "parameters_by_dtype");
    vt_json_begin_array(j);
    for (size_t k = 0; k < t.ndtypes; k++) {
        vt_json_begin_object(j);
        vt_json_kv_string(j, "dtype", t.params[k].dtype);
        vt_json_kv_uint(j, "count", t.params[k].count);
        vt_json_kv_uint(j, "bytes", t.params[k].bytes);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    vt_json_kv_uint(j, "parameter_bytes", t.param_bytes);
    vt_json_kv_uint(j, "buffer_bytes", t.buffer_bytes);
    vt_json_kv_uint(j, "gradient_bytes", t.grad_bytes);
    vt_json_kv_uint(j, "optimizer_state_bytes", t.state_bytes);
    bool n = t.param_count > 0;
    vt_json_key(j, "gradient_bytes_per_parameter");
    n ? vt_json_double(j, t.grad_per_param) : vt_json_null(j);
    vt_json_key(j, "optimizer_state_bytes_per_parameter");
    n ? vt_json_double(j, t.state_per_param) : vt_json_null(j);
    vt_json_key(j, "by_hand");
    if (!n) {
        vt_json_null(j);
    } else {
        vt_json_begin_object(j);
        vt_json_kv_uint(j, "parameter_bytes", t.hand_params);
        vt_json_kv_uint(j, "gradient_bytes", t.hand_grads);
        vt_json_kv_double(j, "gradient_bytes_per_parameter", t.hand_grad_per_param);
        vt_json_kv_uint_or_null(j, "optimizer_state_bytes", t.state_rule, t.hand_state);
        vt_json_key(j, "optimizer_state_bytes_per_parameter");
        t.state_rule ? vt_json_double(j, t.hand_state_per_param) : vt_json_null(j);
        vt_json_end_object(j);
    }
    vt_json_end_object(j);
}

void vt_parts_json(struct vt_report *rep, struct vt_json *j, size_t input,
                   const struct vt_ledger *l)
{
    struct vt_split s;
    vt_split_at_peak_tensors(rep, input, l, &s);
    vt_json_key(j, "parts");
    if (!s.known) {
        vt_json_null(j);
        return;
    }
    vt_json_begin_object(j);
    vt_json_key(j, "at_peak");
    split_json(rep, j, input, &s);
    vt_json_key(j, "phases");
    vt_json_begin_array(j);
    for (size_t k = 0; k < l->nphases; k++) {
        const struct vt_phase_peak *ph = &l->phases[k];
        struct vt_split p;
        vt_split_at_phase(rep, input, l, ph, &p);
        vt_json_begin_object(j);
        vt_json_kv_string(j, "name", vt_report_string(rep, input, ph->name));
        vt_json_key(j, "at_peak");
        split_json(rep, j, input, &p);
        vt_json_end_object(j);
    }
    vt_json_end_array(j);
    theory_json(rep, j, input);
    vt_json_end_object(j);
}

void vt_parts_failure_json(struct vt_report *rep, struct vt_json *j, size_t input,
                           const struct vt_ledger *l, size_t first, size_t end)
{
    struct vt_split s;
    vt_split_at_failure(rep, input, l, first, end, &s);
    vt_json_key(j, "parts");
    split_json(rep, j, input, &s);
}
