/* `vramtrace top`'s frame as lines of text; see top_frame.h. */
#define _GNU_SOURCE /* vasprintf */
#include "top_frame.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "frame_class.h"
#include "grow_array.h"
#include "growth_rule.h"
#include "stack_line.h"
#include "terminal_text.h"

/* The last minute in this many characters (3 s each). */
#define SPARK_COLUMNS 20
#define GPUS_MAX 64
#define FRAMES_SHOWN 4

const char *top_sort_name(enum vt_follow_sort key)
{
    switch (key) {
    case VT_FOLLOW_SORT_PEAK: return "peak";
    case VT_FOLLOW_SORT_GROWTH: return "growth";
    case VT_FOLLOW_SORT_RANK: return "rank";
    default: return "now";
    }
}

void top_lines_clear(struct top_lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->lines[i].text);
    l->n = 0;
}

void top_symbols_free(struct top_symbols *s)
{
    vt_symbolizer_free(s->sym);
    s->sym = NULL;
    s->process = NULL;
}

/* Bytes of s that fit in width columns (UTF-8: a continuation byte takes
 * no column of its own). */
static size_t fit(const char *s, size_t width)
{
    size_t cols = 0, i = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xc0) == 0x80)
            continue;
        if (cols == width)
            break;
        cols++;
    }
    return i;
}

static bool add(struct top_lines *out, enum top_line_kind kind, long process, size_t width,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static bool add(struct top_lines *out, enum top_line_kind kind, long process, size_t width,
                const char *fmt, ...)
{
    if (!vt_grow_array((void **)&out->lines, &out->cap, out->n + 1, sizeof *out->lines))
        return false;
    va_list ap;
    va_start(ap, fmt);
    char *text;
    int k = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (k < 0)
        return false;
    vt_terminal_clean(text); /* names come from traces (terminal_text.h) */
    text[fit(text, width)] = '\0';
    size_t len = strlen(text); /* no trailing blanks: a line compares as it reads */
    while (len && text[len - 1] == ' ')
        text[--len] = '\0';
    out->lines[out->n++] = (struct top_line){kind, process, text};
    return true;
}

static const char *clock_of(const struct vt_follow_process *p, uint64_t mono_ns, char *buf, size_t n)
{
    uint64_t wall = vt_follow_process_wall_ns(p, mono_ns);
    time_t t = (time_t)(wall / 1000000000u);
    struct tm tm;
    if (!wall || !localtime_r(&t, &tm) || !strftime(buf, n, "%H:%M:%S", &tm))
        snprintf(buf, n, "-");
    return buf;
}

static void sparkline(const struct vt_follow_process *p, uint64_t now_ns, bool utf8, char *out,
                      size_t n)
{
    static const char *const blocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                         "\u2585", "\u2586", "\u2587", "\u2588"};
    static const char ascii[] = "_.:-=+*#";
    uint64_t v[SPARK_COLUMNS], max = 0;
    vt_follow_process_history(p, now_ns, v, SPARK_COLUMNS);
    for (size_t c = 0; c < SPARK_COLUMNS; c++)
        if (v[c] != VT_FOLLOW_NO_HISTORY && v[c] > max)
            max = v[c];
    size_t o = 0;
    for (size_t c = 0; c < SPARK_COLUMNS && o + 4 < n; c++) {
        if (v[c] == VT_FOLLOW_NO_HISTORY) {
            out[o++] = ' '; /* before the process began */
            continue;
        }
        size_t level = max ? (size_t)((v[c] * 7 + max / 2) / max) : 0;
        if (utf8) {
            memcpy(out + o, blocks[level], 3);
            o += 3;
        } else {
            out[o++] = ascii[level];
        }
    }
    out[o] = '\0';
}

/* The process's device ordinals: "0", "0,1", "-". */
static const char *devices_text(const struct vt_follow_process *p, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < p->replay.nledgers && o + 1 < n; k++) {
        const struct vt_ledger *l = &p->replay.ledgers[k];
        if (l->category != VT_CAT_DEVICE)
            continue;
        int w = snprintf(buf + o, n - o, "%s%" PRId64, o ? "," : "", l->device);
        if (w < 0)
            break;
        o += (size_t)w;
    }
    return o ? buf : "-";
}

/* The capacity of the device PyTorch's allocator was sampled on (0:
 * unknown): the growth's forecast needs it. */
static uint64_t sampled_device_total(const struct vt_follow_process *p)
{
    const struct vt_alloc_samples *s = p->replay.samples;
    const struct vt_device_info *dev =
        s && s->device >= 0 ? vt_reader_device(p->reader, (uint64_t)s->device) : NULL;
    return dev ? dev->total_bytes : 0;
}

/* The report's growth: "+8.00 MiB" PyTorch's allocator grows by a step
 * where it was sampled (growth_rule.h), else what a phase grows by per
 * opening; "none" where phases repeat and nothing grows, "-" before. */
static const char *growth_text(const struct vt_follow_process *p, char *buf, size_t n)
{
    char b[32];
    struct vt_growth_told told;
    if (vt_growth_told_of(&p->replay, sampled_device_total(p), &told)) {
        snprintf(buf, n, "+%s", vt_format_bytes(told.r.per_opening, b, sizeof b));
        return buf;
    }
    struct vt_follow_growth g = vt_follow_process_growth(p);
    if (!g.grows)
        return g.repeated ? "none" : "-";
    snprintf(buf, n, "+%s", vt_format_bytes(g.result.per_opening, b, sizeof b));
    return buf;
}

static const char *failures_text(const struct vt_follow_process *p, char *buf, size_t n)
{
    struct vt_oom first;
    size_t failed = vt_follow_process_failures(p, &first, NULL);
    if (!failed)
        return "0";
    snprintf(buf, n, "%zu %s", failed, vt_verdict_name(first.verdict));
    return buf;
}

#define ROW_FORMAT "%5s %5s %-12.12s %-5.5s %8s %c %10s %10s %8s %s %-14.14s %11s %-22.22s %s"

/* The rank, with the mark of a rank that diverges: "*2". */
static const char *rank_text(const struct vt_follow_process *p, long index,
                             const struct top_frame_options *o, char *buf, size_t n)
{
    char r[24]; /* vt_format_rank may answer with a constant, not r */
    snprintf(buf, n, "%s%s", top_divergence_marked(o->divergence, (size_t)index) ? "*" : "",
             vt_format_rank(p->rank, r, sizeof r));
    return buf;
}

static bool add_row(struct top_lines *out, const struct vt_follow_process *p, long index,
                    const struct top_frame_options *o, uint64_t now_ns)
{
    char r[32], lr[24], dev[64], pid[24], now[32], peak[32], at[32], spark[4 * SPARK_COLUMNS + 1],
        growth[40], fails[64];
    snprintf(pid, sizeof pid, "%" PRIu64, p->info->pid);
    sparkline(p, now_ns, o->utf8, spark, sizeof spark);
    return add(out, p->exited ? TOP_LINE_EXITED : TOP_LINE_ROW, index, o->width, ROW_FORMAT,
               rank_text(p, index, o, r, sizeof r), vt_format_rank(p->local_rank, lr, sizeof lr),
               p->info->hostname ? p->info->hostname : "-", devices_text(p, dev, sizeof dev), pid,
               p->broken ? 'B' : p->exited ? 'X' : 'R',
               vt_format_bytes(p->exited ? 0 : p->device_bytes, now, sizeof now),
               vt_format_bytes(p->peak_bytes, peak, sizeof peak),
               p->has_peak ? clock_of(p, p->peak_time_ns, at, sizeof at) : "-", spark,
               p->exited ? "(exited)" : vt_follow_process_phase(p) ? vt_follow_process_phase(p) : "-",
               growth_text(p, growth, sizeof growth), failures_text(p, fails, sizeof fails),
               p->command);
}

static bool add_header(const struct vt_follow_view *v, const struct top_frame_options *o,
                       time_t now, struct top_lines *out)
{
    size_t running = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        running += !v->processes[i]->exited;
    struct vt_follow_gpu gpus[GPUS_MAX];
    size_t ngpus = vt_follow_view_gpus(v, gpus, GPUS_MAX);
    char clock[16] = "-";
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(clock, sizeof clock, "%H:%M:%S", &tm);
    bool ok = add(out, TOP_LINE_TITLE, -1, o->width,
                  "vramtrace top - %s - %zu process%s: %zu running, %zu exited - %zu GPU%s - "
                  "sort %s - every %.1fs",
                  clock, v->nprocesses, v->nprocesses == 1 ? "" : "es", running,
                  v->nprocesses - running, ngpus, ngpus == 1 ? "" : "s", top_sort_name(o->sort),
                  (double)o->delay_ns / 1e9);
    for (size_t g = 0; ok && g < ngpus; g++) {
        char b[32], c[32], id[48] = "";
        if (gpus[g].has_uuid)
            vt_format_uuid(gpus[g].uuid, id, sizeof id);
        id[12] = '\0'; /* "GPU-xxxxxxxx": enough to tell them apart */
        char share[16] = "";
        if (gpus[g].capacity)
            snprintf(share, sizeof share, " (%.0f%%)", 100.0 * (double)gpus[g].bytes /
                                                           (double)gpus[g].capacity);
        ok = add(out, TOP_LINE_HEADER, -1, o->width,
                 "GPU %" PRId64 " %s %s: %s of %s%s, %zu process%s running%s%s",
                 gpus[g].ordinal, gpus[g].host, id[0] ? id : "(no uuid)",
                 vt_format_bytes(gpus[g].bytes, b, sizeof b),
                 gpus[g].capacity ? vt_format_bytes(gpus[g].capacity, c, sizeof c) : "?", share,
                 gpus[g].running, gpus[g].running == 1 ? "" : "es",
                 gpus[g].name ? " - " : "", gpus[g].name ? gpus[g].name : "");
    }
    size_t fp;
    struct vt_oom first;
    if (ok && vt_follow_view_first_failure(v, &fp, &first)) {
        const struct vt_follow_process *p = v->processes[fp];
        char r[24], at[16], b[32];
        const char *api = vt_reader_api(p->reader, first.label ? first.label : first.api);
        ok = add(out, TOP_LINE_HEADER, -1, o->width,
                 "first failure: rank %s pid %" PRIu64 " at %s, device %" PRId64
                 ": %s of %s failed: %s",
                 vt_format_rank(p->rank, r, sizeof r), p->info->pid,
                 clock_of(p, first.time_ns, at, sizeof at), first.device, api ? api : "allocation",
                 vt_format_bytes(first.requested_bytes, b, sizeof b),
                 vt_verdict_name(first.verdict));
    } else if (ok) {
        ok = add(out, TOP_LINE_HEADER, -1, o->width, "first failure: none");
    }
    return ok && add(out, TOP_LINE_BLANK, -1, o->width, "%s", "");
}

/* ---- the opened process ---- */

/* A stack as the report writes it (stack_line.h, frame_class.h): the
 * program's own frames, innermost first, then "via" the API it called. */
struct stack_text {
    struct vt_stack_writer w;
    struct vt_frame_classifier classes;
    size_t own;
    char via[128];
};

static void add_frame(void *ctx, const struct vt_frame *f)
{
    struct stack_text *s = ctx;
    enum vt_frame_class c = vt_frame_classify(&s->classes, f);
    char name[256];
    if (c == VT_FRAME_OWN) {
        if (s->own++ < FRAMES_SHOWN)
            vt_stack_frame(&s->w, vt_frame_short_name(f, name, sizeof name), f->file, f->line,
                           false);
    } else if (vt_frame_class_is_api(c) && !s->own) {
        vt_frame_short_name(f, s->via, sizeof s->via); /* the outermost: the call made */
    }
}

/* The stack's text, malloc'ed (NULL: out of memory). */
static char *stack_text(const struct vt_follow_process *p, struct vt_symbolizer *sym, uint64_t stack)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    if (!out)
        return NULL;
    struct stack_text st = {.own = 0};
    vt_stack_begin(&st.w, out, false);
    vt_stack_frames(p->reader, sym, stack, 0, add_frame, &st);
    char tag[160] = "";
    if (st.via[0])
        snprintf(tag, sizeof tag, "  via %s", st.via);
    vt_stack_end(&st.w, st.own > FRAMES_SHOWN ? st.own - FRAMES_SHOWN : 0, tag);
    if (!st.w.n)
        fputs("(no frame of the program's own)", out);
    fclose(out);
    return text;
}

/* The symbolizer of the opened process, made again when modules came. */
static struct vt_symbolizer *symbols_of(struct top_symbols *s, const struct vt_follow_process *p)
{
    if (!s)
        return NULL;
    size_t modules = vt_reader_module_count(p->reader);
    if (s->process != p || s->modules != modules || !s->sym) {
        vt_symbolizer_free(s->sym);
        s->sym = vt_symbolizer_new(p->reader, s->options);
        s->process = p;
        s->modules = modules;
    }
    return s->sym;
}

/* "; newest event 0.08 s before this frame": how far behind the trace is
 * (the flush interval and the writer's round, when the process is busy).
 * Only for a running process of this host: another host's clock does not
 * compare. */
static void age_text(const struct vt_follow_view *v, const struct vt_follow_process *p,
                     uint64_t now_ns, char *buf, size_t n)
{
    buf[0] = '\0';
    if (!p->exited && p->replay.has_time && p->info->hostname &&
        !strcmp(p->info->hostname, v->this_host) && now_ns >= p->replay.last_time_ns)
        snprintf(buf, n, "; newest event %.3f s before this frame",
                 (double)(now_ns - p->replay.last_time_ns) / 1e9);
}

/* The phase that grows most per opening, as the report says it, and the
 * call sites that grew over its run of rises. */
static bool add_growth(const struct vt_follow_process *p, const struct vt_follow_growth *g,
                       struct vt_symbolizer *sym, const struct top_frame_options *o,
                       struct top_lines *out)
{
    char b1[32], b2[32], b3[32];
    const char *name = vt_reader_string(p->reader, g->phase->name);
    bool ok = add(out, TOP_LINE_DETAIL, -1, o->width,
                  "  growth across openings: %s +%s per opening from opening %" PRIu64
                  " (%" PRIu64 " in a row up to the last of %" PRIu64 "; %s -> %s), device %" PRId64,
                  name ? name : "?", vt_format_bytes(g->result.per_opening, b1, sizeof b1),
                  g->result.from_opening, g->result.openings, g->result.closings,
                  vt_format_bytes(g->result.first_bytes, b2, sizeof b2),
                  vt_format_bytes(g->result.last_bytes, b3, sizeof b3), g->ledger->device);
    struct vt_growth_site grown[32];
    size_t n = vt_growth_sites(&g->phase->growth, grown, o->sites < 32 ? o->sites : 32);
    if (ok && n)
        ok = add(out, TOP_LINE_DETAIL, -1, o->width, "   per opening  grown at");
    for (size_t i = 0; ok && i < n; i++) {
        char *text = stack_text(p, sym, g->ledger->sites.sites[grown[i].site].stack);
        ok = text && add(out, TOP_LINE_DETAIL, -1, o->width, "  %12s  %s",
                         vt_format_bytes(grown[i].per_opening, b1, sizeof b1), text);
        free(text);
    }
    return ok;
}

/* PyTorch's allocator's growth a step, its forecast and the site that
 * grew most (growth_rule.h), as the report says them. */
static bool add_allocator_growth(const struct vt_follow_process *p, const struct vt_growth_told *g,
                                 struct vt_symbolizer *sym, struct top_lines *out, size_t w)
{
    char b1[32], fill[96] = "";
    if (g->fills)
        snprintf(fill, sizeof fill, "; the device fills at step %" PRIu64 " (in about %.1f s)",
                 g->fills_at_step, (double)g->fills_in_ns / 1e9);
    bool ok = add(out, TOP_LINE_DETAIL, -1, w,
                  "  growth (PyTorch's allocator, %s bytes): +%s a step since step %" PRIu64 "%s",
                  g->level, vt_format_bytes(g->r.per_opening, b1, sizeof b1), g->r.from_opening,
                  fill);
    if (ok && g->nsites) {
        char *text = stack_text(p, sym, g->sites[0].stack);
        ok = text && add(out, TOP_LINE_DETAIL, -1, w, "  %12s  %s",
                         vt_format_bytes(g->sites[0].bytes, b1, sizeof b1), text);
        free(text);
    }
    return ok;
}

static bool add_detail(const struct vt_follow_view *v, const struct vt_follow_process *p,
                       const struct top_frame_options *o, uint64_t now_ns, struct top_lines *out)
{
    size_t index = 0;
    while (index < v->nprocesses && v->processes[index] != p)
        index++;
    char age[96];
    age_text(v, p, now_ns, age, sizeof age);
    char r[24], lr[24], b1[32], b2[32], at[16];
    size_t w = o->width;
    bool ok = add(out, TOP_LINE_DETAIL, -1, w, "pid %" PRIu64 " (rank %s, local rank %s) on %s: %s",
                  p->info->pid, vt_format_rank(p->rank, r, sizeof r),
                  vt_format_rank(p->local_rank, lr, sizeof lr),
                  p->info->hostname ? p->info->hostname : "?", p->command) &&
              add(out, TOP_LINE_DETAIL, -1, w, "  trace %s: %" PRIu64 " records read, %s%s",
                  p->path, p->records,
                  p->broken ? "broken" : p->exited ? "exited" : "running", age) &&
              add(out, TOP_LINE_DETAIL, -1, w, "  device bytes now %s, peak %s at %s",
                  vt_format_bytes(p->exited ? 0 : p->device_bytes, b1, sizeof b1),
                  vt_format_bytes(p->peak_bytes, b2, sizeof b2),
                  p->has_peak ? clock_of(p, p->peak_time_ns, at, sizeof at) : "-");
    const char *phase = vt_follow_process_phase(p);
    struct vt_follow_growth g = vt_follow_process_growth(p);
    struct vt_symbolizer *sym = symbols_of(o->symbols, p);
    ok = ok && add(out, TOP_LINE_DETAIL, -1, w, "  phase now %s", phase ? phase : "-");
    struct vt_growth_told told;
    bool allocator_grows = vt_growth_told_of(&p->replay, sampled_device_total(p), &told);
    if (ok && allocator_grows)
        ok = add_allocator_growth(p, &told, sym, out, w);
    if (ok && g.grows)
        ok = add_growth(p, &g, sym, o, out);
    else if (ok && !allocator_grows)
        ok = add(out, TOP_LINE_DETAIL, -1, w, "  growth across openings: %s",
                 g.repeated ? "none (each repeated phase ends where it ended before)"
                            : "no phase has closed 4 times yet");
    char said[1024];
    for (size_t k = 0; ok && top_divergence_say(o->divergence, index, k, said, sizeof said); k++)
        ok = add(out, TOP_LINE_DETAIL, -1, w, "  %s", said);
    for (size_t k = 0; ok && k < p->replay.nledgers; k++) {
        const struct vt_ledger *l = &p->replay.ledgers[k];
        if (l->category != VT_CAT_DEVICE || p->exited)
            continue;
        struct vt_site_bytes top[32];
        size_t n = vt_sites_top(&l->sites, NULL, top, o->sites < 32 ? o->sites : 32);
        ok = add(out, TOP_LINE_DETAIL, -1, w, "  live call sites on device %" PRId64 " (%zu shown):",
                 l->device, n) &&
             add(out, TOP_LINE_DETAIL, -1, w, "         bytes   count  allocated at");
        for (size_t s = 0; ok && s < n; s++) {
            char *text = stack_text(p, sym, top[s].stack);
            ok = text && add(out, TOP_LINE_DETAIL, -1, w, "  %12s %7" PRIu64 "  %s",
                             vt_format_bytes(top[s].bytes, b1, sizeof b1), top[s].count, text);
            free(text);
        }
    }
    struct vt_oom last;
    size_t failed = ok ? vt_follow_process_failures(p, NULL, &last) : 0;
    if (ok && failed) {
        const char *api = vt_reader_api(p->reader, last.label ? last.label : last.api);
        char b3[32], b4[32];
        ok = add(out, TOP_LINE_DETAIL, -1, w,
                 "  last failure (of %zu): at %s, device %" PRId64 ": %s of %s failed: %s; %s free "
                 "of %s, this process held %s",
                 failed, clock_of(p, last.time_ns, at, sizeof at), last.device,
                 api ? api : "allocation", vt_format_bytes(last.requested_bytes, b1, sizeof b1),
                 vt_verdict_name(last.verdict),
                 last.driver_info ? vt_format_bytes(last.free_bytes, b2, sizeof b2) : "?",
                 last.driver_info ? vt_format_bytes(last.total_bytes, b3, sizeof b3) : "?",
                 vt_format_bytes(last.process_bytes, b4, sizeof b4));
    } else if (ok) {
        ok = add(out, TOP_LINE_DETAIL, -1, w, "  no failed allocation");
    }
    return ok;
}

bool top_frame_build(const struct vt_follow_view *v, const struct top_frame_options *o,
                     uint64_t now_ns, time_t now, size_t *order, struct top_lines *out)
{
    top_lines_clear(out);
    if (o->divergence && !o->divergence->updated)
        top_divergence_update(o->divergence, v); /* out of memory: no marks */
    if (!add_header(v, o, now, out) ||
        !add(out, TOP_LINE_COLUMNS, -1, o->width, ROW_FORMAT, "RANK", "LOCAL", "HOST", "GPU",
             "PID", 'S', "NOW", "PEAK", "PEAK AT", "LAST MINUTE         ", "PHASE",
             "GROWTH/STEP", "FAILURES", "COMMAND"))
        return false;
    vt_follow_view_order(v, o->sort, order);
    for (size_t i = 0; i < v->nprocesses; i++)
        if (!add_row(out, v->processes[order[i]], (long)order[i], o, now_ns))
            return false;
    if (o->opened >= 0 && (size_t)o->opened < v->nprocesses)
        return add(out, TOP_LINE_BLANK, -1, o->width, "%s", "") &&
               add_detail(v, v->processes[o->opened], o, now_ns, out);
    return true;
}
