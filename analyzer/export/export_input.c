/* A read trace as the exporters name what is in it; see export_input.h. */
#include "export_input.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "input_tables.h"
#include "process_env.h"
#include "stack_where.h"

void vt_export_input_init(struct vt_export_input *x, const struct vt_input *in,
                          const struct vt_symbolize_options *sym_opt)
{
    *x = (struct vt_export_input){in, sym_opt, NULL};
}

void vt_export_input_free(struct vt_export_input *x)
{
    vt_symbolizer_free(x->sym);
    x->sym = NULL;
}

size_t vt_export_input_frames(struct vt_export_input *x, uint64_t stack, vt_frame_fn fn,
                              void *ctx)
{
    static const struct vt_symbolize_options none = {.disabled = true};
    if (!x->sym)
        x->sym = vt_input_symbolizer_new(x->in, x->sym_opt ? x->sym_opt : &none);
    return vt_input_stack_frames(x->in, x->sym, stack, 0, fn, ctx);
}

struct stack_of_input {
    struct vt_export_input *x;
    uint64_t stack;
};

static size_t walk_stack(void *src, vt_frame_fn fn, void *ctx)
{
    struct stack_of_input *s = src;
    return vt_export_input_frames(s->x, s->stack, fn, ctx);
}

const char *vt_export_input_site(struct vt_export_input *x, uint64_t stack, char *buf, size_t n)
{
    struct stack_of_input s = {x, stack};
    return vt_stack_site_frame(walk_stack, &s, buf, n);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* A label as snprintf would write it into n bytes: cut at n - 1, always
 * ended; put together by hand, since a folded export names millions of
 * frames and snprintf's parsing of the format was most of each. */
struct label {
    char *at, *end; /* end: where the terminating NUL must go at the latest */
};

static void label_put(struct label *l, const char *s, size_t len)
{
    size_t room = (size_t)(l->end - l->at);
    if (len > room)
        len = room;
    memcpy(l->at, s, len);
    l->at += len;
}

static void label_str(struct label *l, const char *s) { label_put(l, s, strlen(s)); }

static void label_uint(struct label *l, uint64_t v, unsigned base)
{
    static const char digit[] = "0123456789abcdef";
    char tmp[24];
    char *p = tmp + sizeof tmp;
    do {
        *--p = digit[v % base];
        v /= base;
    } while (v);
    label_put(l, p, (size_t)(tmp + sizeof tmp - p));
}

const char *vt_export_frame_label(const struct vt_frame *f, char *buf, size_t n)
{
    if (n == 0)
        return buf;
    struct label l = {buf, buf + n - 1};
    if (f->function && f->file && f->line) {
        label_str(&l, f->function);
        label_put(&l, " (", 2);
        label_str(&l, base_name(f->file));
        label_put(&l, ":", 1);
        label_uint(&l, f->line, 10);
        label_put(&l, ")", 1);
    } else if (f->function) {
        label_str(&l, f->function);
    } else if (f->module) {
        label_str(&l, f->module);
        label_put(&l, "+0x", 3);
        label_uint(&l, f->module_offset, 16);
    } else {
        label_put(&l, "0x", 2);
        label_uint(&l, f->ip, 16);
    }
    *l.at = '\0';
    return buf;
}

uint64_t vt_export_input_pid(const struct vt_input *in)
{
    const struct vt_process_info *p = vt_input_process(in);
    return p ? p->pid : 0;
}

long vt_export_input_rank(const struct vt_input *in)
{
    return vt_process_rank(vt_input_process(in));
}

const char *vt_export_input_name(const struct vt_input *in, char *buf, size_t n)
{
    const struct vt_process_info *p = vt_input_process(in);
    const char *cmd = p && p->argc ? p->argv[0] : p && p->exe ? p->exe : in->path;
    long rank = vt_export_input_rank(in);
    char rank_s[32] = "";
    if (rank >= 0)
        snprintf(rank_s, sizeof rank_s, ", rank %ld", rank);
    snprintf(buf, n, "%s (pid %" PRIu64 "%s, host %s)", base_name(cmd), vt_export_input_pid(in),
             rank_s, p && p->hostname ? p->hostname : "?");
    return buf;
}
