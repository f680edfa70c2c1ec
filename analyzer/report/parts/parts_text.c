/* The parts in the text report: the split at the peak, per phase and at
 * each failure, and the theory beside it. See parts_split.h. */
#include <inttypes.h>
#include <string.h>

#include "parts_split.h"

static const char *level_words(const struct vt_split *s)
{
    return s->tensor_level ? "tensor level: PyTorch's allocator's blocks at it"
                           : "segment level: the driver's allocations";
}

static void census_words(struct vt_report *rep, FILE *out, size_t input, const struct vt_split *s)
{
    char t[32];
    const struct vt_part_census *c = s->census;
    fprintf(out, "census %" PRIu64 " (%s, at %s, after %" PRIu64 " optimizer step%s)", c->number,
            vt_report_string(rep, input, c->why), vt_format_reltime(rep, input, c->time_ns, t, sizeof t),
            c->steps, c->steps == 1 ? "" : "s");
}

/* What a census could not know, in words (empty: it knew both). */
static const char *unknown_words(const struct vt_part_census *c)
{
    bool model = c->saw & VT_PART_SAW_MODEL, opt = c->saw & VT_PART_SAW_OPTIMIZER;
    if (model && opt)
        return "";
    if (model)
        return "; no optimizer seen: no optimizer state, gradients only if set";
    if (opt)
        return "; no model seen: parameters from the optimizer's param_groups, no buffers";
    return "; neither a model nor an optimizer seen";
}

static void rows(FILE *out, const char *indent, const struct vt_split *s)
{
    char b[32];
    for (unsigned r = 0; r < VT_SPLIT_ROWS_; r++) {
        if (!s->row_shown[r])
            continue;
        fprintf(out, "%s%-36s %12s", indent, vt_split_row_name(r),
                vt_format_bytes(s->rows[r], b, sizeof b));
        if (s->total && r != VT_SPLIT_CONTEXT)
            fprintf(out, " %5.1f%%", 100.0 * (double)s->rows[r] / (double)s->total);
        if (r == VT_SPLIT_REST)
            fputs("  (one allocation per segment: not told apart here)", out);
        if (r == VT_SPLIT_CONTEXT)
            fputs(s->context_known ? "  (outside the bytes above)"
                                   : "  (outside the bytes above; not all measured)", out);
        fputc('\n', out);
    }
}

/* What commonly makes a part differ from the hand arithmetic, in words. */
static const char *difference_reason(const char *what, bool more)
{
    if (!strcmp(what, "gradients"))
        return more ? "gradients wider than their parameters: fp32 gradients of 16-bit "
                      "parameters, or a second copy"
                    : "parameters without a gradient: frozen, or gradients sharded across "
                      "ranks (ZeRO-2, FSDP)";
    return more ? "state wider than two copies of the parameters: fp32 master weights or fp32 "
                  "states under mixed precision, or an optimizer with more states"
                : "state smaller than two copies: sharded across ranks (ZeRO-1, FSDP), an "
                  "8-bit optimizer, or not made yet for every parameter";
}

static void theory(struct vt_report *rep, FILE *out, size_t input, const struct vt_split *peak)
{
    struct vt_theory t;
    vt_theory_of(rep, input, &t);
    if (!t.known)
        return;
    char b1[32], b2[32], b3[32], b4[32];
    fprintf(out, "  beside the theory (census %" PRIu64 ", %s; optimizer %s):\n", t.census->number,
            vt_report_string(rep, input, t.census->why), t.optimizer ? t.optimizer : "not seen");
    if (!t.param_count) {
        fputs("    no parameters on the GPU in it: nothing to count\n", out);
        return;
    }
    fprintf(out, "    parameters: %" PRIu64 " (", t.param_count);
    for (size_t k = 0; k < t.ndtypes; k++)
        fprintf(out, "%s%s %" PRIu64, k ? ", " : "", t.params[k].dtype, t.params[k].count);
    fprintf(out, ") = %s\n", vt_format_bytes(t.param_bytes, b1, sizeof b1));
    if (t.state_rule)
        fprintf(out, "    by hand: gradients %.2f B/param = %s, optimizer state %.2f B/param = %s; "
                     "with the parameters %s\n",
                t.hand_grad_per_param, vt_format_bytes(t.hand_grads, b1, sizeof b1),
                t.hand_state_per_param, vt_format_bytes(t.hand_state, b2, sizeof b2),
                vt_format_bytes(t.hand_params + t.hand_grads + t.hand_state, b3, sizeof b3));
    else
        fprintf(out, "    by hand: gradients %.2f B/param = %s; optimizer state: no rule for %s\n",
                t.hand_grad_per_param, vt_format_bytes(t.hand_grads, b1, sizeof b1),
                t.optimizer ? t.optimizer : "no optimizer");
    fprintf(out, "    observed: gradients %.2f B/param = %s%s, optimizer state %.2f B/param = %s, "
                 "buffers %s\n",
            t.grad_per_param, vt_format_bytes(t.grad_bytes, b1, sizeof b1),
            t.grads_seen ? "" : " (no .grad set then)", t.state_per_param,
            vt_format_bytes(t.state_bytes, b2, sizeof b2),
            vt_format_bytes(t.buffer_bytes, b4, sizeof b4));
    /* The largest differences: each part against its hand figure, and what
     * the hand arithmetic leaves out at the peak. */
    struct { const char *what; uint64_t got, want; bool has_rule; } d[] = {
        {"gradients", t.grad_bytes, t.hand_grads, t.grads_seen},
        {"optimizer state", t.state_bytes, t.hand_state, t.state_rule},
    };
    const char *worst = NULL;
    uint64_t worst_by = 0, worst_got = 0, worst_want = 0;
    for (size_t k = 0; k < sizeof d / sizeof *d; k++) {
        if (!d[k].has_rule)
            continue;
        uint64_t by = d[k].got > d[k].want ? d[k].got - d[k].want : d[k].want - d[k].got;
        if (by > worst_by) {
            worst = d[k].what, worst_by = by, worst_got = d[k].got, worst_want = d[k].want;
        }
    }
    if (!t.grads_seen)
        fputs("    no gradients then (inference, or before a backward): the hand arithmetic's "
              "gradients and optimizer state are not in this memory\n", out);
    if (worst)
        fprintf(out, "    largest difference from the hand arithmetic: %s, %s observed against "
                     "%s by hand (%s)\n",
                worst, vt_format_bytes(worst_got, b1, sizeof b1),
                vt_format_bytes(worst_want, b2, sizeof b2),
                difference_reason(worst, worst_got > worst_want));
    else if (t.grads_seen)
        fputs("    parameters, gradients and optimizer state as the hand arithmetic has them\n", out);
    if (peak && peak->known) {
        uint64_t beyond = peak->rows[VT_SPLIT_REST] + peak->rows[VT_SPLIT_LIBRARY];
        fprintf(out, "    not in the hand arithmetic at the peak: %s of %s (%.0f%%) are neither "
                     "parameters, gradients nor optimizer state%s\n",
                vt_format_bytes(beyond, b3, sizeof b3), vt_format_bytes(peak->total, b4, sizeof b4),
                peak->total ? 100.0 * (double)beyond / (double)peak->total : 0.0,
                2 * beyond > peak->total ? ": activations, temporaries and the allocator's cache "
                                           "dominate"
                                         : "");
    }
}

/* Without the allocator's blocks at the peak, its samples still split it:
 * the largest reserved it was sampled at, allocated (tensors) and cached. */
static void allocator_sample(struct vt_report *rep, FILE *out, size_t input,
                             const struct vt_ledger *l)
{
    const struct vt_alloc_samples *ss = rep->a->inputs[input].replay.samples;
    if (!ss || ss->peak.device != l->device)
        return;
    const struct vt_alloc_sample *p = &ss->peak;
    char b1[32], b2[32], b3[32], t[32];
    const char *phase = vt_report_string(rep, input, p->phase);
    fprintf(out, "    PyTorch's allocator at its largest sample (%s, a %s closing): %s allocated "
                 "(tensors), %s cached, of %s reserved\n",
            vt_format_reltime(rep, input, p->time_ns, t, sizeof t), phase ? phase : "?",
            vt_format_bytes(p->allocated, b1, sizeof b1),
            vt_format_bytes(p->reserved > p->allocated ? p->reserved - p->allocated : 0, b2,
                            sizeof b2),
            vt_format_bytes(p->reserved, b3, sizeof b3));
}

void vt_parts_text(struct vt_report *rep, FILE *out, size_t input, const struct vt_ledger *l)
{
    struct vt_split s;
    vt_split_at_peak_tensors(rep, input, l, &s);
    if (!s.known)
        return;
    fprintf(out, "  what the peak is made of (%s", level_words(&s));
    if (s.tensor_level && s.snapshot[0])
        fprintf(out, ", from the history in %s", s.snapshot);
    fputs("; ", out);
    census_words(rep, out, input, &s);
    fprintf(out, "%s):\n", unknown_words(s.census));
    rows(out, "    ", &s);
    if (s.history_short)
        fprintf(out, "    (the allocator's history in %s begins after the peak: a larger "
                     "--torch-history=N keeps more of it)\n", s.snapshot);
    allocator_sample(rep, out, input, l);
    bool header = false;
    char b[32];
    for (size_t k = 0; k < l->nphases; k++) {
        const struct vt_phase_peak *ph = &l->phases[k];
        struct vt_split p;
        vt_split_at_phase(rep, input, l, ph, &p);
        if (!p.known || !ph->state.has_peak)
            continue;
        if (!header) {
            fputs("  per phase, at its peak (segment level):\n", out);
            fprintf(out, "    %-24s %12s %12s %12s %12s %12s\n", "phase", "parameters",
                    "gradients", "opt. state", "library", "the rest");
            header = true;
        }
        fprintf(out, "    %-24s", vt_report_string(rep, input, ph->name));
        const enum vt_split_row cols[] = {VT_SPLIT_PARAMETERS, VT_SPLIT_GRADIENTS,
                                          VT_SPLIT_OPTIMIZER_STATE, VT_SPLIT_LIBRARY,
                                          VT_SPLIT_REST};
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
            fprintf(out, " %12s", vt_format_bytes(p.rows[cols[c]], b, sizeof b));
        fputc('\n', out);
    }
    theory(rep, out, input, &s);
}

void vt_parts_failure_text(struct vt_report *rep, FILE *out, size_t input,
                           const struct vt_ledger *l, size_t first, size_t end)
{
    struct vt_split s;
    vt_split_at_failure(rep, input, l, first, end, &s);
    if (!s.known)
        return;
    fprintf(out, "    made of (%s; ", level_words(&s));
    census_words(rep, out, input, &s);
    fprintf(out, "%s):\n", unknown_words(s.census));
    rows(out, "      ", &s);
}
