/*
 * verdict_rules.h: the cache that starved a library, the neighbours that
 * took the GPU, the growth that made a failure.
 */
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "frame_class.h"
#include "growth_rule.h"
#include "verdict_rules.h"

/* Libraries that allocate device memory of their own, outside PyTorch's
 * allocator, by the module their frame is in. */
static const struct {
    const char *module, *name;
} libraries[] = {
    {"libnccl.so*", "NCCL"},       {"libcublasLt.so*", "cuBLASLt"},
    {"libcublas.so*", "cuBLAS"},   {"libcudnn*.so*", "cuDNN"},
    {"libcufft.so*", "cuFFT"},     {"libcusparse.so*", "cuSPARSE"},
    {"libcusolver.so*", "cuSOLVER"}, {"libcurand.so*", "cuRAND"},
    {"libnvshmem*.so*", "NVSHMEM"}, {"libtransformer_engine*.so*", "Transformer Engine"},
};

struct asker {
    struct vt_frame_classifier cls;
    const char *library, *module;
    bool allocator;  /* a frame of PyTorch's allocator (or its Python) before any library */
};

static void look(void *ctx, const struct vt_frame *f)
{
    struct asker *a = ctx;
    enum vt_frame_class c = vt_frame_classify(&a->cls, f);
    if (a->library || a->allocator)
        return;
    if (c == VT_FRAME_ALLOCATOR || c == VT_FRAME_FRAMEWORK) {
        a->allocator = true;
        return;
    }
    for (size_t k = 0; f->module && k < sizeof libraries / sizeof libraries[0]; k++)
        if (!fnmatch(libraries[k].module, f->module, 0)) {
            a->library = libraries[k].name;
            a->module = f->module;
            return;
        }
}

bool vt_verdict_starved_by_cache(struct vt_report *rep, size_t input, const struct vt_oom *o,
                                 char *asker, size_t n)
{
    if (!o->torch_known || !o->driver_info || o->torch_reserved <= o->torch_allocated)
        return false;
    uint64_t cache = o->torch_reserved - o->torch_allocated;
    if (o->requested_bytes <= o->free_bytes || o->requested_bytes > o->free_bytes + cache)
        return false;
    struct asker a = {0};
    vt_report_frames(rep, input, o->stack, 0, look, &a);
    /* Without a known library, only the absence of the allocator's frames
     * tells - and a caching allocator's own failure is followed by its
     * flush and retry, which a raw cudaMalloc's is not: where Python's
     * frames were not read (the stand-in allocator is Python) that is what
     * tells them apart. */
    bool retried = o->retry != VT_RETRY_NOT_SEEN || o->retry_of_previous;
    if (a.allocator || (!a.library && retried))
        return false;
    if (a.library)
        snprintf(asker, n, "%s (%s)", a.library, a.module);
    else
        snprintf(asker, n, "a raw allocation outside PyTorch's allocator");
    return true;
}

bool vt_verdict_neighbours_contended(const struct vt_oom *o)
{
    struct vt_oom_numbers num = vt_oom_numbers_of(o);
    uint64_t lacked = vt_oom_shortfall(&num);
    if (!o->driver_info || !lacked || !o->nothers)
        return false;
    uint64_t held = 0;
    for (size_t k = 0; k < o->nothers; k++)
        held += o->others[k].bytes;
    return held >= lacked;
}

/* " +8.00 MiB a step since step 2 at keep (train.py:41)" of a process, or
 * nothing where it does not grow. */
static void say_growth(struct vt_report *rep, size_t input, char *buf, size_t n)
{
    const struct vt_input *in = &rep->a->inputs[input];
    buf[0] = '\0';
    struct vt_growth_told g;
    if (!vt_growth_told_of(&in->replay, 0, &g))
        return;
    char b1[32], site[256];
    const char *where = g.nsites ? vt_report_user_frame(rep, input, g.sites[0].stack, site,
                                                        sizeof site)
                                 : NULL;
    snprintf(buf, n, "%s +%s a step since step %" PRIu64 "%s%s",
             strcmp(g.level, "allocated") ? "its cache growing" : "growing",
             vt_format_bytes(g.r.per_opening, b1, sizeof b1), g.r.from_opening,
             where ? " at " : "", where ? where : "");
}

void vt_verdict_neighbour_story(struct vt_report *rep, const struct vt_oom *o, char *buf,
                                size_t n)
{
    char b1[32], grow[320];
    buf[0] = '\0';
    if (!o->nothers)
        return;
    size_t in = o->others[0].input;
    const struct vt_process_info *p = vt_input_process(&rep->a->inputs[in]);
    long rank = vt_report_rank(rep, in);
    say_growth(rep, in, grow, sizeof grow);
    char who[64];
    if (rank >= 0)
        snprintf(who, sizeof who, "rank %ld (pid %" PRIu64 ")", rank, p ? p->pid : 0);
    else
        snprintf(who, sizeof who, "pid %" PRIu64, p ? p->pid : 0);
    snprintf(buf, n, "%s held %s then%s%s", who, vt_format_bytes(o->others[0].bytes, b1, sizeof b1),
             grow[0] ? ", " : "", grow);
}

bool vt_verdict_growth_caused(struct vt_report *rep, size_t input, const struct vt_oom *o,
                              char *buf, size_t n)
{
    const struct vt_input *in = &rep->a->inputs[input];
    struct vt_growth_told g;
    if (!vt_growth_told_of(&in->replay, 0, &g))
        return false;
    /* Without the growth the device would have had its bytes free: the
     * request fits if they cover what it needed beyond the free bytes. */
    uint64_t needed = o->requested_bytes > o->free_bytes ? o->requested_bytes - o->free_bytes : 0;
    if (!o->driver_info || !g.total_bytes || g.total_bytes < needed)
        return false;
    char b1[32], b2[32], site[256];
    const char *where =
        g.nsites ? vt_report_user_frame(rep, input, g.sites[0].stack, site, sizeof site) : NULL;
    snprintf(buf, n, "%s a step since step %" PRIu64 "%s%s: %s of what was held%s; the request "
                     "would fit without it",
             vt_format_bytes(g.r.per_opening, b1, sizeof b1), g.r.from_opening,
             where ? " at " : "", where ? where : "", vt_format_bytes(g.total_bytes, b2, sizeof b2),
             strcmp(g.level, "allocated") ? " (the allocator's cache, not its tensors)" : "");
    return true;
}
