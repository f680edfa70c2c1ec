/* The contexts' part of a device peak (peak_contexts.h). */
#include "peak_contexts.h"

#include <stdio.h>

#include "format.h"
#include "json_writer.h"
#include "replay.h"

bool vt_peak_contexts_of(const struct vt_replay *rp, const struct vt_ledger *l,
                         struct vt_peak_contexts *c)
{
    if (l->category != VT_CAT_DEVICE || !l->peak.has_peak)
        return false;
    c->bytes = l->peak_context_bytes;
    c->unmeasured = vt_contexts_unmeasured(rp, l->device);
    return c->bytes || (rp->contexts_measurable && c->unmeasured);
}

const char *vt_peak_contexts_words(const struct vt_peak_contexts *c, char *buf, size_t n)
{
    char b[32];
    int w = 0;
    if (n)
        buf[0] = '\0';
    if (c->bytes)
        w = snprintf(buf, n, "of which %s CUDA contexts", vt_format_bytes(c->bytes, b, sizeof b));
    if (c->unmeasured && w >= 0 && (size_t)w < n)
        snprintf(buf + w, n - (size_t)w, "%s%u %scontext%s cost not measured", w ? "; " : "",
                 c->unmeasured, w ? "" : "CUDA ", c->unmeasured == 1 ? "'s" : "s'");
    return buf;
}

void vt_peak_contexts_json(struct vt_json *j, const struct vt_peak_contexts *c)
{
    vt_json_kv_uint(j, "contexts_bytes", c->bytes);
    vt_json_kv_uint(j, "contexts_unmeasured", c->unmeasured);
}

size_t vt_peak_contexts_drop(const struct vt_replay *rp, struct vt_site_bytes *top, size_t n)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!vt_contexts_site(rp, top[i].stack, top[i].thread))
            top[m++] = top[i];
    return m;
}
