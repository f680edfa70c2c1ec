/* A site's stack as every view names it: stack_where.h. */
#include "stack_where.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "frame_class.h"
#include "stack_line.h"
#include "input_files.h"

/* A stack as a person reads it (docs/user/REPORT.md, "Stacks"): the program's
 * own frames first - its Python frames where recorded - then the API it
 * called, "via cudaMallocAsync"; the frames of the CUDA runtime, the
 * driver, known allocators and libc's start-up are left out (frame_class.c
 * says which). --full-stacks: every frame as recorded. */
struct where_ctx {
    struct vt_stack_writer w;
    struct vt_frame_classifier cls;
    bool full;    /* --full-stacks */
    bool fold;    /* leave out the frames that are not the program's */
    bool python;  /* the stack has Python frames: only they are shown */
    bool leading; /* still in the innermost frames, which the tag replaces */
    size_t max, shown, hidden;
    char tag[160];
};

static bool is_python_frame(const struct vt_frame *f)
{
    return f->module && !strcmp(f->module, "python");
}

static void note_python(void *ctx, const struct vt_frame *f)
{
    if (is_python_frame(f))
        *(bool *)ctx = true;
}

static void set_tag(struct where_ctx *w, const struct vt_frame *f)
{
    char name[128];
    snprintf(w->tag, sizeof w->tag, "  via %s", vt_frame_short_name(f, name, sizeof name));
}

/* "module+0xoffset", or "0xoffset" with module NULL, cut to size as snprintf
 * cuts: written by hand, since a report names tens of thousands of frames
 * without symbols this way and snprintf was a fifth of their cost. */
static void address_name(char *out, size_t size, const char *module, uint64_t offset)
{
    char hex[2 + 16 + 1], *h = hex + sizeof hex;
    *--h = '\0';
    do
        *--h = "0123456789abcdef"[offset & 15];
    while (offset >>= 4);
    *--h = 'x';
    *--h = '0';
    size_t n = 0;
    for (const char *s = module; s && *s && n + 1 < size; s++)
        out[n++] = *s;
    if (module && n + 1 < size)
        out[n++] = '+';
    for (; *h && n + 1 < size; h++)
        out[n++] = *h;
    out[n] = '\0';
}

static void where_frame(void *ctx, const struct vt_frame *f)
{
    struct where_ctx *w = ctx;
    enum vt_frame_class c = vt_frame_classify(&w->cls, f);
    if (!w->full) {
        bool folded = w->fold && c != VT_FRAME_OWN;
        if (w->leading) {
            /* The tag names the outermost of them: what the program called. */
            if (folded) {
                if (vt_frame_class_is_api(c))
                    set_tag(w, f);
                return;
            }
            w->leading = false;
            /* Python code called this native frame: the API, for the tag. */
            if (w->python && !w->tag[0] && !is_python_frame(f))
                set_tag(w, f);
        }
        if (folded || (w->python && !is_python_frame(f)))
            return;
        if (w->max && w->shown == w->max) {
            w->hidden++;
            return;
        }
        w->shown++;
    }
    char name[320];
    const char *fn = f->function;
    if (!fn) {
        if (f->module)
            address_name(name, sizeof name, f->module, f->module_offset);
        else
            address_name(name, sizeof name, NULL, f->ip);
        fn = name;
    }
    /* A Python function's name says little without its file ("forward"). */
    vt_stack_frame(&w->w, fn, f->file, f->line, is_python_frame(f));
}

void vt_stack_where(FILE *out, bool full_stacks, size_t max_frames, vt_stack_walk walk,
                    void *src)
{
    vt_stack_where_known(out, full_stacks, max_frames, walk, src, NULL, true);
}

void vt_stack_where_known(FILE *out, bool full_stacks, size_t max_frames, vt_stack_walk walk,
                          void *src, const char *api, bool may_have_python)
{
    struct where_ctx w = {.full = full_stacks, .fold = true, .leading = true,
                          .max = max_frames};
    vt_stack_begin(&w.w, out, !w.full);
    if (!w.full && may_have_python)
        walk(src, note_python, &w.python);
    walk(src, where_frame, &w);
    if (w.w.n == 0 && !w.full) {
        /* Nothing but folded frames (a runtime's own thread): show them. */
        struct where_ctx all = {.w = w.w, .leading = true, .max = max_frames};
        walk(src, where_frame, &all);
        w = all;
    }
    if (!w.tag[0] && api && !w.full)
        snprintf(w.tag, sizeof w.tag, "  via %s", api);
    vt_stack_end(&w.w, w.hidden, w.tag[0] ? w.tag : NULL);
    if (w.w.n == 0)
        fputs("(no stack recorded)", out);
}


bool vt_stack_has_python(vt_stack_walk walk, void *src)
{
    bool python = false;
    walk(src, note_python, &python);
    return python;
}

bool vt_stack_frame_names_site(struct vt_frame_classifier *cls, const struct vt_frame *f,
                               bool python)
{
    return vt_frame_classify(cls, f) == VT_FRAME_OWN && (!python || is_python_frame(f));
}

struct site_frame {
    struct vt_frame_classifier cls;
    bool python, found;
    char *buf;
    size_t n;
};

static void note_site_frame(void *ctx, const struct vt_frame *f)
{
    struct site_frame *s = ctx;
    /* Every frame is classified: a static runtime's entry is known by the
     * frame before it. */
    if (!vt_stack_frame_names_site(&s->cls, f, s->python) || s->found || !f->function)
        return;
    if (f->file && f->line)
        snprintf(s->buf, s->n, "%s (%s:%" PRIu64 ")", f->function, vt_path_base_name(f->file),
                 (uint64_t)f->line);
    else
        snprintf(s->buf, s->n, "%s", f->function);
    s->found = true;
}

const char *vt_stack_site_frame(vt_stack_walk walk, void *src, char *buf, size_t n)
{
    struct site_frame s = {.python = vt_stack_has_python(walk, src), .buf = buf, .n = n};
    walk(src, note_site_frame, &s);
    return s.found ? buf : NULL;
}
