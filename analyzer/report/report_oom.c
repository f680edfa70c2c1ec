/*
 * The one-line story of an allocation failure, in numbers, shared by the
 * text and JSON reports:
 *
 *   32.00 MiB requested; 28.25 MiB free on the device; this process held
 *   7.90 GiB reserved, of which 20.00 MiB cached but unusable (largest free
 *   block not visible in a trace); its CUDA contexts 384.00 MiB; other
 *   processes held 15.24 GiB; the retry after the flush failed
 *
 * Every figure is a field of struct vt_oom (docs/REPORT.md says how each is
 * made); a figure that is not known is said to be unknown, never guessed.
 */
#include <stdarg.h>
#include <stdio.h>

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
