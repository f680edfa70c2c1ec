/*
 * The one-line story of an allocation failure, in numbers, shared by the
 * text and JSON reports:
 *
 *   32.00 MiB requested; 28.25 MiB free on the device; this process held
 *   7.90 GiB reserved, of which 20.00 MiB cached but unusable (largest free
 *   block not visible in a trace); its CUDA contexts 384.00 MiB; other
 *   processes held 15.24 GiB; the retry after the flush failed
 *
 * Every figure is a field of struct vt_oom (docs/internals/REPORT_INTERNALS.md,
 * "Allocation failures", says how each is made); a figure that is not known
 * is said to be unknown, never guessed.
 *
 * And what to do next, one or two lines per verdict with the numbers that
 * matter for it (docs/user/REPORT.md, "Verdicts").
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "cuda_errors.h"
#include "report.h"

struct text {
    char *buf;
    size_t n, len;
};

static void say(struct text *t, const char *fmt, ...)
{
    if (t->len >= t->n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->buf + t->len, t->n - t->len, fmt, ap);
    va_end(ap);
    if (w > 0)
        t->len += (size_t)w < t->n - t->len ? (size_t)w : t->n - t->len - 1;
}

static const char *b(uint64_t bytes, char *buf)
{
    return vt_format_bytes(bytes, buf, 32);
}

const char *vt_oom_narrative(const struct vt_oom *o, const struct vt_oom *prev, char *buf,
                             size_t n)
{
    struct text t = {buf, n, 0};
    char b1[32], b2[32];
    if (n)
        buf[0] = '\0';
    say(&t, "%s requested; ", b(o->requested_bytes, b1));
    if (o->driver_info)
        say(&t, "%s free on the device; ", b(o->free_bytes, b1));
    else
        say(&t, "free on the device not captured; ");
    say(&t, "this process held %s reserved, ", b(o->process_bytes, b1));
    if (o->cached_known)
        say(&t, "of which %s cached but unusable", b(o->cached_bytes, b1));
    else if (o->retry_of_previous && prev && prev->cached_known)
        say(&t, "after releasing %s cached but unusable", b(prev->cached_bytes, b1));
    else
        say(&t, "cached part unknown (no flush and retry followed)");
    say(&t, " (largest free block not visible in a trace)");
    if (o->driver_info) {
        if (o->context_known)
            say(&t, "; its CUDA context%s %s; other processes held %s",
                o->contexts > 1 ? "s" : "", b(o->context_bytes, b1), b(o->other_bytes, b2));
        else
            say(&t, "; other processes and this process's CUDA context (not measured) held %s",
                b(o->other_bytes, b1));
    }
    if (o->retry == VT_RETRY_SUCCEEDED)
        say(&t, "; the retry after the flush succeeded");
    else if (o->retry == VT_RETRY_FAILED)
        say(&t, "; the retry after the flush failed");
    else if (o->retry_of_previous)
        say(&t, "; this was that retry");
    return buf;
}

/* The pids and bytes of the other traced processes on the GPU, largest
 * first ("pid 4242 holds 11.00 GiB, pid 4243 holds 2.00 GiB"). */
static void say_others(struct text *t, const struct vt_report *rep, const struct vt_oom *o)
{
    char b1[32];
    for (size_t k = 0; k < o->nothers; k++) {
        const struct vt_process_info *p =
            vt_input_process(&rep->a->inputs[o->others[k].input]);
        say(t, "%spid %" PRIu64 " %s", k ? ", " : "", p ? p->pid : 0,
            b(o->others[k].bytes, b1));
    }
}

const char *vt_oom_next_step(struct vt_report *rep, size_t input, const struct vt_oom *o,
                             enum vt_verdict verdict, char *buf, size_t n)
{
    struct text t = {buf, n, 0};
    char b1[32], b2[32], b3[32], site[256];
    const char *asking = vt_report_user_frame(rep, input, o->stack, site, sizeof site);
    if (n)
        buf[0] = '\0';
    struct vt_oom_numbers num = vt_oom_numbers_of(o);
    uint64_t shortfall = vt_oom_shortfall(&num);
    switch (verdict) {
    case VT_VERDICT_LARGER_THAN_DEVICE:
        say(&t, "no setting makes %s fit on a %s device: split what %s allocates "
                "(smaller batch or sequence, sharding such as ZeRO/FSDP or tensor parallelism), "
                "or use a GPU with more memory",
            b(o->requested_bytes, b1), b(o->total_bytes, b2), asking ? asking : "this call");
        break;
    case VT_VERDICT_FRAGMENTED:
        say(&t, "%s was free%s but not in one piece: try "
                "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; with a memory snapshot of "
                "the run, `vramtrace simulate --allocator pytorch:expandable_segments:True "
                "--capacity %s SNAPSHOT` says whether the request then fits",
            b(o->free_bytes + o->cached_bytes, b1),
            o->cached_known && o->cached_bytes ? " counting the cache it released" : "",
            b(o->total_bytes, b2));
        break;
    case VT_VERDICT_CONTENDED:
        say(&t, "other processes held %s of this GPU", b(vt_oom_others_bytes(&num), b1));
        if (o->nothers) {
            say(&t, " (traced: ");
            say_others(&t, rep, o);
            say(&t, ")");
        } else {
            say(&t, " (none of them traced: nvidia-smi lists them)");
        }
        say(&t, "; the request lacked %s: free that much of theirs, give this job a GPU of its "
                "own (CUDA_VISIBLE_DEVICES), or lower its use by %s",
            b(shortfall, b2), b(shortfall, b3));
        break;
    case VT_VERDICT_OVERSIZED:
        say(&t, "this one request (%s) is larger than all this process held (%s): make %s ask "
                "for less (batch size, sequence length, or split the operation)",
            b(o->requested_bytes, b1), b(o->process_bytes + num.context_bytes, b2),
            asking ? asking : "the call below");
        break;
    case VT_VERDICT_EXHAUSTED:
        say(&t, "freeing %s of this process's own memory would make it fit", b(shortfall, b1));
        if (o->ntop) {
            const char *holder = vt_report_user_frame(rep, input, o->top[0].stack, site,
                                                      sizeof site);
            say(&t, "; the largest holder then, %s, held %s in %" PRIu64 " allocation%s",
                holder ? holder : "the first row below", b(o->top[0].bytes, b2),
                o->top[0].count, o->top[0].count == 1 ? "" : "s");
        }
        say(&t, "; with PyTorch: a smaller batch, activation checkpointing, or dropping "
                "references it no longer needs");
        break;
    default:
        say(&t, "the driver's free and total were not captured, so the cause cannot be told; "
                "the holders below are what this process held");
        break;
    }
    return buf;
}

const char *vt_oom_error_name(const struct vt_oom *o, char *buf, size_t n)
{
    const char *driver = vt_cuda_error_name(o->result);
    const char *runtime = o->label ? vt_cuda_runtime_error_name(o->result) : NULL;
    if (!driver)
        snprintf(buf, n, "error %" PRIu64, o->result);
    else if (runtime)
        snprintf(buf, n, "%s (%s)", runtime, driver);
    else
        snprintf(buf, n, "%s", driver);
    return buf;
}
