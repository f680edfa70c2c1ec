/*
 * Stack lines that fit (stack_line.h). The writer marks a stack with
 * control characters, which no text from a trace can carry (the writer
 * shows those as '?', terminal_text.h):
 *
 *   BEGIN name LOC " (file:line)" SHORT ":line" NEXT name ... TAIL hidden TAIL tag END
 *
 * and the stream, at the end of each line, keeps as many frames as the
 * width allows and writes the line without the marks. Lines with stacks
 * in a row (a table) wait for each other, to be written in one form.
 */
#define _GNU_SOURCE /* fopencookie */
#include "stack_line.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "grow_array.h"
#include "terminal_text.h"

enum {
    MARK_SHORT = 0x19, /* then the frame's location in the short form */
    MARK_LOC = 0x1a,   /* then its location: " (file:line)" */
    MARK_BEGIN = 0x1c, /* the first frame follows */
    MARK_NEXT = 0x1d,  /* the next frame follows */
    MARK_TAIL = 0x1e,  /* TAIL hidden TAIL tag */
    MARK_END = 0x1f,   /* then the rest of the line */
};

struct span {
    const char *s;
    size_t len, cols;
};

struct frame_span {
    struct span name, loc[3]; /* by form: " (file:line)", ":line", "" */
};

enum form { FULL, SHORT, BARE };

struct lines {
    FILE *to;
    size_t width;
    char *line; /* the line being written */
    size_t len, cap;
    char *block; /* lines with stacks in a row, waiting for their form */
    size_t block_len, block_cap;
    struct frame_span *frames; /* of the line parsed last */
    size_t frames_cap;
    FILE *fit;  /* a block's lines fitted (flush_block), kept from block to block */
    char *fit_text;
    size_t fit_len;
};

/* A line with a stack. */
struct stack_line {
    struct span prefix, tag, suffix;
    const struct frame_span *frames; /* n of them: lines.frames, or a copy */
    size_t n, hidden;
};

/* Columns of UTF-8 text: one per character (wide characters count one). */
static struct span span_of(const char *s, const char *end)
{
    struct span sp = {s, (size_t)(end - s), 0};
    for (const char *p = s; p < end; p++)
        sp.cols += ((unsigned char)*p & 0xc0) != 0x80;
    return sp;
}

/* Everything the stream writes goes through here: its text came from a
 * trace too, and no control character of it (the marks above are gone by
 * now) may reach a terminal. */
static void put_text(struct lines *l, const char *s, size_t len)
{
    vt_terminal_write(l->to, s, len);
}

static void put_span(struct lines *l, struct span sp)
{
    put_text(l, sp.s, sp.len);
}

/* The columns of " <- ... N more" (none for 0): counted, not printed, as
 * a line's fitting asks it for every frame of every form. */
static size_t more_columns(size_t more)
{
    if (!more)
        return 0;
    size_t digits = 1;
    for (; more >= 10; more /= 10)
        digits++;
    return sizeof " <- ... " - 1 + digits + sizeof " more" - 1;
}

/* false: no stack on the line (or out of memory). */
static bool parse(struct lines *l, const char *s, size_t len, struct stack_line *sl)
{
    const char *end = s + len;
    const char *begin = memchr(s, MARK_BEGIN, len);
    const char *tail = begin ? memchr(begin, MARK_TAIL, (size_t)(end - begin)) : NULL;
    const char *tail2 = tail ? memchr(tail + 1, MARK_TAIL, (size_t)(end - tail - 1)) : NULL;
    const char *stop = tail2 ? memchr(tail2 + 1, MARK_END, (size_t)(end - tail2 - 1)) : NULL;
    if (!stop)
        return false;
    size_t n = 0;
    for (const char *f = begin + 1; f <= tail; n++) {
        const char *next = memchr(f, MARK_NEXT, (size_t)(tail - f));
        if (!next)
            next = tail;
        if (!vt_grow_array((void **)&l->frames, &l->frames_cap, n + 1, sizeof *l->frames))
            return false;
        struct frame_span *fs = &l->frames[n];
        const char *loc = memchr(f, MARK_LOC, (size_t)(next - f));
        const char *sh = loc ? memchr(loc, MARK_SHORT, (size_t)(next - loc)) : NULL;
        fs->name = span_of(f, loc ? loc : next);
        fs->loc[FULL] = loc ? span_of(loc + 1, sh ? sh : next) : span_of(next, next);
        fs->loc[SHORT] = sh ? span_of(sh + 1, next) : fs->loc[FULL];
        fs->loc[BARE] = span_of(next, next);
        f = next + 1;
    }
    sl->frames = l->frames;
    sl->n = n;
    sl->hidden = (size_t)strtoull(tail + 1, NULL, 10);
    sl->prefix = span_of(s, begin);
    sl->tag = span_of(tail2 + 1, stop);
    sl->suffix = span_of(stop + 1, end);
    return true;
}

/* The most frames (at least 0) that fit on the line in the form. */
static size_t frames_that_fit(const struct lines *l, const struct stack_line *sl, enum form form)
{
    if (!l->width)
        return sl->n;
    size_t fixed = sl->prefix.cols + sl->tag.cols + sl->suffix.cols, used = 0, keep = 0;
    for (size_t k = 0; k < sl->n; k++) {
        used += (k ? 4 : 0) + sl->frames[k].name.cols + sl->frames[k].loc[form].cols;
        if (fixed + used + more_columns(sl->n - (k + 1) + sl->hidden) <= l->width)
            keep = k + 1;
    }
    return keep;
}

/* Files kept, unless leaving them out shows more frames. */
static enum form best_form(const struct lines *l, const struct stack_line *sl)
{
    size_t full = frames_that_fit(l, sl, FULL);
    return full < sl->n && frames_that_fit(l, sl, SHORT) > full ? SHORT : FULL;
}

/* The line in the form: the frames that fit, at least the first (by its
 * name alone if it does not fit with its location). */
static void put_stack_line(struct lines *l, const struct stack_line *sl, enum form form)
{
    size_t keep = frames_that_fit(l, sl, form);
    if (keep == 0)
        form = BARE, keep = sl->n ? 1 : 0;
    put_span(l, sl->prefix);
    for (size_t k = 0; k < keep; k++) {
        if (k)
            fputs(" <- ", l->to);
        put_span(l, sl->frames[k].name);
        put_span(l, sl->frames[k].loc[form]);
    }
    if (sl->n - keep + sl->hidden)
        fprintf(l->to, " <- ... %zu more", sl->n - keep + sl->hidden);
    put_span(l, sl->tag);
    put_span(l, sl->suffix);
}

/* Two frames alike, as the widest form writes them. */
static bool same_frame(const struct frame_span *a, const struct frame_span *b)
{
    return a->name.len == b->name.len && a->loc[FULL].len == b->loc[FULL].len &&
           !memcmp(a->name.s, b->name.s, a->name.len) &&
           !memcmp(a->loc[FULL].s, b->loc[FULL].s, a->loc[FULL].len);
}

/* A line whose fitted stack reads as another's, for a different stack:
 * its first frames, then the frame d where the stacks part (in the form
 * parting: with its file where the short form reads alike), so that the
 * two lines tell the sites apart ("tensor:47 <- create_fp32_partitions:70
 * <- ... 1 more  via cudaMalloc"). As many first frames as fit (at least one); the line may
 * be longer than the width when the frames that tell the sites apart are. */
static void put_parted_line(struct lines *l, const struct stack_line *sl, size_t d,
                            enum form form, enum form parting)
{
    const struct frame_span *fr = sl->frames;
    size_t rest = sl->n - d - 1 + sl->hidden;
    size_t fixed = sl->prefix.cols + sl->tag.cols + sl->suffix.cols + 4 + fr[d].name.cols +
                   fr[d].loc[parting].cols + more_columns(rest);
    /* The first frames in the table's form, else the first by name alone;
     * none where the first is where the stacks part (its line moved). */
    size_t x = 0;
    for (int pass = 0; pass < 2 && !x && d; pass++) {
        size_t used = 0;
        for (size_t k = 0; k < d; k++) {
            used += (k ? 4 : 0) + fr[k].name.cols + fr[k].loc[form].cols;
            if (!l->width || fixed + used + more_columns(d - (k + 1)) <= l->width)
                x = k + 1;
        }
        if (!x && form != BARE)
            form = BARE;
        else if (!x)
            x = 1; /* longer than the width: the frames that tell the sites apart are */
    }
    put_span(l, sl->prefix);
    for (size_t k = 0; k < x; k++) {
        if (k)
            fputs(" <- ", l->to);
        put_span(l, fr[k].name);
        put_span(l, fr[k].loc[form]);
    }
    if (d > x)
        fprintf(l->to, " <- ... %zu more", d - x);
    if (d)
        fputs(" <- ", l->to);
    put_span(l, fr[d].name);
    put_span(l, fr[d].loc[parting]);
    if (rest)
        fprintf(l->to, " <- ... %zu more", rest);
    put_span(l, sl->tag);
    put_span(l, sl->suffix);
}

/* One waiting line: its text, and its stack when it has one. */
struct block_line {
    const char *raw;
    size_t len;
    bool stack;
    struct stack_line sl;  /* its frames a copy, frames */
    struct frame_span *frames;
    size_t n;
    const char *fitted;  /* as put_stack_line writes it (in lines.fit_text) */
    size_t fitted_from, fitted_len;
    size_t stack_from, stack_len; /* its stack in fitted: what precedes and
                                   * follows it (bytes, counts) is not the site */
};

/* Two lines' stacks fitted to the same text. */
static bool fitted_alike(const struct block_line *a, const struct block_line *b)
{
    return a->stack_len == b->stack_len &&
           !memcmp(a->fitted + a->stack_from, b->fitted + b->stack_from, a->stack_len);
}

/* Appends the line as put_stack_line writes it to lines.fit, at
 * b->fitted_from; false if out of memory. One stream for every line of
 * every block: a stream of its own a line (open_memstream zeroes 8 KiB)
 * cost more than the line. */
static bool fitted_text(struct lines *l, enum form form, struct block_line *b)
{
    if (!l->fit && !(l->fit = open_memstream(&l->fit_text, &l->fit_len)))
        return false;
    long from = ftell(l->fit);
    FILE *to = l->to;
    l->to = l->fit;
    put_stack_line(l, &b->sl, form);
    l->to = to;
    long end = ftell(l->fit);
    if (from < 0 || end < from || ferror(l->fit))
        return false;
    b->fitted_from = (size_t)from;
    b->fitted_len = (size_t)(end - from);
    return true;
}

/* Where the stack of b first differs from that of another line whose
 * stack is fitted to the same text (its twin: the figures before the
 * stacks may differ, the rows still name two sites alike); SIZE_MAX if
 * none. *full: only the file tells that frame from a twin's. */
static size_t parting_frame(const struct block_line *lines, size_t count, size_t i,
                            enum form form, bool *full)
{
    const struct block_line *b = &lines[i];
    size_t d = SIZE_MAX;
    for (size_t j = 0; j < count; j++) {
        const struct block_line *o = &lines[j];
        if (j == i || !o->stack || !fitted_alike(o, b))
            continue;
        size_t k = 0;
        while (k < b->n && k < o->n && same_frame(&b->frames[k], &o->frames[k]))
            k++;
        if (k < b->n && k < d)
            d = k;
    }
    *full = false;
    for (size_t j = 0; d != SIZE_MAX && j < count; j++) {
        const struct block_line *o = &lines[j];
        if (j == i || !o->stack || d >= o->n || !fitted_alike(o, b) ||
            same_frame(&o->frames[d], &b->frames[d]))
            continue; /* not a twin that parts there */
        if (o->frames[d].name.len == b->frames[d].name.len &&
            o->frames[d].loc[form].len == b->frames[d].loc[form].len &&
            !memcmp(o->frames[d].name.s, b->frames[d].name.s, b->frames[d].name.len) &&
            !memcmp(o->frames[d].loc[form].s, b->frames[d].loc[form].s,
                    b->frames[d].loc[form].len))
            *full = true;
    }
    return d;
}

/* Writes the waiting stack lines (a table, usually) in one form: without
 * files if any of them is better so. Lines that would read alike for
 * different stacks show the frame where their stacks part. */
static void flush_block(struct lines *l)
{
    enum form form = FULL;
    size_t count = 0;
    for (size_t i = 0; i < l->block_len; i++)
        count += l->block[i] == '\n';
    struct block_line *lines = calloc(count + 1, sizeof *lines);
    bool ok = lines != NULL && (!l->fit || fseek(l->fit, 0, SEEK_SET) == 0);
    size_t k = 0;
    /* Each line parsed once: its frames kept for the fitting and the
     * parting. */
    for (size_t i = 0; i < l->block_len; k++) {
        const char *s = l->block + i;
        size_t len = (size_t)((char *)memchr(s, '\n', l->block_len - i) - s);
        i += len + 1;
        struct stack_line sl;
        bool stack = parse(l, s, len, &sl);
        if (stack && best_form(l, &sl) == SHORT)
            form = SHORT;
        if (!ok)
            continue;
        struct block_line *b = &lines[k];
        *b = (struct block_line){.raw = s, .len = len, .sl = sl};
        if (stack && (ok = (b->frames = malloc((sl.n + 1) * sizeof *b->frames)) != NULL)) {
            memcpy(b->frames, sl.frames, sl.n * sizeof *b->frames);
            b->sl.frames = b->frames;
            b->n = sl.n;
            b->stack = true;
        }
    }
    for (k = 0; ok && k < count; k++) {
        struct block_line *b = &lines[k];
        if (!b->stack)
            continue;
        ok = fitted_text(l, form, b);
        b->stack_from = b->sl.prefix.len;
        b->stack_len = b->fitted_len - b->sl.prefix.len - b->sl.suffix.len;
    }
    if (ok && l->fit)
        ok = fflush(l->fit) == 0;
    for (k = 0; ok && k < count; k++)
        lines[k].fitted = l->fit_text + lines[k].fitted_from;
    k = 0;
    for (size_t i = 0; i < l->block_len; k++) {
        const char *s = l->block + i;
        size_t len = (size_t)((char *)memchr(s, '\n', l->block_len - i) - s);
        i += len + 1;
        const struct block_line *b = ok ? &lines[k] : NULL;
        bool full = false;
        size_t d = b && b->stack ? parting_frame(lines, count, k, form, &full) : SIZE_MAX;
        struct stack_line sl;
        if (b && b->stack && d < b->n)
            put_parted_line(l, &b->sl, d, form, full ? FULL : SHORT);
        else if (b && b->stack)
            fwrite(b->fitted, 1, b->fitted_len, l->to); /* as put_stack_line wrote it */
        else if (!b && parse(l, s, len, &sl)) /* out of memory: without the parting */
            put_stack_line(l, &sl, form);
        else
            put_text(l, s, len); /* out of memory: as it is */
        fputc('\n', l->to);
    }
    for (k = 0; lines && k < count; k++)
        free(lines[k].frames);
    free(lines);
    l->block_len = 0;
}

/* A whole line (with its newline): waits in the block if it has a stack. */
static void end_line(struct lines *l)
{
    struct stack_line sl;
    l->line[l->len++] = '\n';
    if (parse(l, l->line, l->len - 1, &sl) &&
        vt_grow_array((void **)&l->block, &l->block_cap, l->block_len + l->len, 1)) {
        memcpy(l->block + l->block_len, l->line, l->len);
        l->block_len += l->len;
    } else {
        flush_block(l);
        put_text(l, l->line, l->len);
    }
    l->len = 0;
}

static ssize_t lines_write(void *cookie, const char *buf, size_t size)
{
    struct lines *l = cookie;
    for (size_t i = 0; i < size;) {
        const char *nl = memchr(buf + i, '\n', size - i);
        size_t n = nl ? (size_t)(nl - (buf + i)) : size - i;
        if (!vt_grow_array((void **)&l->line, &l->cap, l->len + n + 1, 1))
            return 0;
        memcpy(l->line + l->len, buf + i, n);
        l->len += n;
        i += n;
        if (nl) {
            end_line(l);
            i++;
        }
    }
    return ferror(l->to) ? 0 : (ssize_t)size;
}

static int lines_close(void *cookie)
{
    struct lines *l = cookie;
    struct stack_line sl;
    flush_block(l);
    if (l->len && parse(l, l->line, l->len, &sl))
        put_stack_line(l, &sl, best_form(l, &sl));
    else if (l->len)
        put_text(l, l->line, l->len);
    int status = ferror(l->to) ? EOF : 0;
    free(l->line);
    free(l->block);
    free(l->frames);
    if (l->fit)
        fclose(l->fit);
    free(l->fit_text);
    free(l);
    return status;
}

FILE *vt_stack_lines_open(FILE *to, size_t width)
{
    struct lines *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->to = to;
    l->width = width;
    FILE *f = fopencookie(l, "w", (cookie_io_functions_t){.write = lines_write,
                                                          .close = lines_close});
    if (!f)
        free(l);
    return f;
}

int vt_stack_lines_close(FILE *lines)
{
    return fclose(lines);
}

void vt_stack_begin(struct vt_stack_writer *w, FILE *out, bool fit)
{
    w->out = out;
    w->fit = fit;
    w->n = 0;
}

void vt_stack_frame(struct vt_stack_writer *w, const char *name, const char *file,
                    uint64_t line, bool keep_file)
{
    if (w->fit)
        fputc(w->n ? MARK_NEXT : MARK_BEGIN, w->out);
    else if (w->n)
        fputs(" <- ", w->out);
    w->n++;
    vt_terminal_put(w->out, name);
    if (!file)
        return;
    const char *base = strrchr(file, '/');
    const char *bs = strrchr(file, '\\');
    if (bs && (!base || bs > base))
        base = bs;
    if (w->fit)
        fputc(MARK_LOC, w->out);
    fputs(" (", w->out);
    vt_terminal_put(w->out, base ? base + 1 : file);
    if (line)
        fprintf(w->out, ":%llu", (unsigned long long)line);
    fputc(')', w->out);
    if (w->fit && !keep_file) {
        fputc(MARK_SHORT, w->out);
        if (line)
            fprintf(w->out, ":%llu", (unsigned long long)line);
    }
}

void vt_stack_end(struct vt_stack_writer *w, size_t hidden, const char *tag)
{
    if (!w->n)
        return;
    if (w->fit)
        fprintf(w->out, "%c%zu%c", MARK_TAIL, hidden, MARK_TAIL);
    else if (hidden)
        fprintf(w->out, " <- ... %zu more", hidden);
    if (tag)
        vt_terminal_put(w->out, tag);
    if (w->fit)
        fputc(MARK_END, w->out);
}
