/* One trace replayed for an exporter; see export_trace.h. */
#include "export_trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "stack_where.h"

static void live_hook(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                      const struct vt_live *e, bool begins)
{
    (void)rp;
    struct vt_export_trace *t = ctx;
    t->hooks.on_live(t->hooks.ctx, t, l, e, begins);
}

static void oom_hook(void *ctx, struct vt_replay *rp, struct vt_ledger *l, struct vt_oom *o)
{
    (void)rp;
    struct vt_export_trace *t = ctx;
    t->hooks.on_oom(t->hooks.ctx, t, l, o);
}

int vt_export_trace_run(struct vt_export_trace *t, const char *path,
                        const struct vt_export_hooks *hooks,
                        const struct vt_symbolize_options *sym, FILE *err)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    t->sym_opt = sym;
    if (hooks)
        t->hooks = *hooks;
    struct vt_read_error re;
    if (vt_reader_open(path, &t->reader, &re)) {
        fprintf(err, "vramtrace: %s\n", re.message);
        return 2;
    }
    vt_reader_read_ahead(t->reader);
    vt_replay_init(&t->replay, t->reader);
    t->replay_open = true;
    if (t->hooks.on_live) {
        t->replay.on_live = live_hook;
        t->replay.on_live_ctx = t;
    }
    if (t->hooks.on_oom) {
        /* Without on_change and outside a GPU merge the replay calls
         * nothing else with this context. */
        t->replay.on_oom = oom_hook;
        t->replay.on_change_ctx = t;
    }
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(t->reader, &rec)) > 0) {
        if (vt_record_is_timed(rec.type))
            t->now_ns = rec.time_ns;
        if (t->hooks.on_record && !t->hooks.on_record(t->hooks.ctx, t, &rec))
            break;
        vt_replay_feed(&t->replay, &rec);
        if (t->replay.out_of_memory)
            break;
    }
    vt_replay_finish(&t->replay);
    if (rc < 0) {
        fprintf(err, "vramtrace: %s\n", vt_reader_error(t->reader)->message);
        return 2;
    }
    if (t->replay.out_of_memory) {
        fprintf(err, "vramtrace: %s: out of memory\n", path);
        return 2;
    }
    if (vt_reader_truncated(t->reader))
        fprintf(err, "vramtrace: %s: %s\n", path, vt_reader_truncation_note(t->reader));
    return 0;
}

void vt_export_trace_free(struct vt_export_trace *t)
{
    vt_symbolizer_free(t->sym);
    if (t->replay_open)
        vt_replay_free(&t->replay);
    if (t->reader)
        vt_reader_close(t->reader);
    memset(t, 0, sizeof *t);
}

size_t vt_export_frames(struct vt_export_trace *t, uint64_t stack, vt_frame_fn fn,
                        void *ctx)
{
    static const struct vt_symbolize_options none = {.disabled = true};
    if (!t->sym)
        t->sym = vt_symbolizer_new(t->reader, t->sym_opt ? t->sym_opt : &none);
    return vt_stack_frames(t->reader, t->sym, stack, 0, fn, ctx);
}

size_t vt_export_stack_walk(void *src, vt_frame_fn fn, void *ctx)
{
    struct vt_export_stack *s = src;
    return vt_export_frames(s->t, s->stack, fn, ctx);
}

const char *vt_export_site_frame(struct vt_export_trace *t, uint64_t stack, char *buf, size_t n)
{
    struct vt_export_stack s = {t, stack};
    return vt_stack_site_frame(vt_export_stack_walk, &s, buf, n);
}

uint64_t vt_export_pid(const struct vt_reader *r)
{
    const struct vt_process_info *p = vt_reader_process(r);
    return p ? p->pid : 0;
}

long vt_export_rank(const struct vt_reader *r)
{
    return vt_process_rank(vt_reader_process(r));
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *vt_export_process_name(const struct vt_export_trace *t, char *buf, size_t n)
{
    const struct vt_process_info *p = vt_reader_process(t->reader);
    const char *cmd = p && p->argc ? p->argv[0] : p && p->exe ? p->exe : t->path;
    long rank = vt_export_rank(t->reader);
    char rank_s[32] = "";
    if (rank >= 0)
        snprintf(rank_s, sizeof rank_s, ", rank %ld", rank);
    snprintf(buf, n, "%s (pid %" PRIu64 "%s, host %s)", base_name(cmd), vt_export_pid(t->reader),
             rank_s,
             p && p->hostname ? p->hostname : "?");
    return buf;
}

