/*
 * `vramtrace top`'s full-screen view, drawn with ncurses: the frame's lines
 * (top_frame.h) with the title in bold, the column names in reverse, the
 * chosen process highlighted and exited ones dim; an opened process's
 * details under the header, the table scrolled to the chosen row; a
 * status line at the bottom. The view is read again every delay; a key redraws at once from
 * what was read.
 *
 * Keys, as top(1) has them where it has them: q quits; b, p, g, r sort
 * by bytes now, peak, growth, rank; up/down (or k/j) choose a process;
 * Enter (or o) opens it below the table and closes it again, Esc closes
 * it; ? shows the keys until the next key.
 */
#define _XOPEN_SOURCE_EXTENDED 1 /* ncursesw: wide characters */
#include <curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "top_run.h"

#define KEY_ESCAPE 27

static const char *const help_text[] = {
    "vramtrace top - keys",
    "",
    "  q          quit",
    "  b          sort by device bytes now (most first)",
    "  p          sort by peak so far",
    "  g          sort by growth per step",
    "  r          sort by rank",
    "  up, k      choose the process above",
    "  down, j    choose the process below",
    "  Enter, o   open the chosen process (its live call sites, phase, last failure);",
    "             again to close it",
    "  Esc        close it",
    "  ?          this help (any key returns)",
    "",
    "Columns: RANK (*: the rank diverges from the median rank at a call site, as the",
    "report's job says; open it for where), LOCAL (local rank), HOST, GPU (device ordinals), PID, S (R running,",
    "X exited, B trace broken), NOW (device bytes live), PEAK and PEAK AT, LAST MINUTE",
    "(device bytes, 3 s a character), PHASE (innermost open), GROWTH/STEP (the report's",
    "growth across openings: a phase whose bytes at its closings rose 3 times in a row",
    "up to the last, per opening), FAILURES (count and the first one's verdict), COMMAND.",
    "",
    "docs/user/TOP.md says more.",
};

struct screen_state {
    long chosen;        /* process index chosen, -1: the first row */
    bool help;
    size_t *order;
    size_t order_cap;
    size_t said;        /* notes seen */
};

static void draw_help(void)
{
    erase();
    for (size_t i = 0; i < sizeof help_text / sizeof help_text[0] && (int)i < LINES; i++)
        mvaddnstr((int)i, 0, help_text[i], COLS);
    refresh();
}

static void draw_line(int y, const struct top_line *l, const struct screen_state *s)
{
    attr_t a = A_NORMAL;
    switch (l->kind) {
    case TOP_LINE_TITLE: a = A_BOLD; break;
    case TOP_LINE_COLUMNS: a = A_REVERSE; break;
    case TOP_LINE_EXITED: a = A_DIM; break;
    default: break;
    }
    if ((l->kind == TOP_LINE_ROW || l->kind == TOP_LINE_EXITED) && l->process == s->chosen)
        a |= A_STANDOUT | A_BOLD;
    attrset(a);
    mvaddstr(y, 0, l->text);
}

static bool is_row(const struct top_line *l)
{
    return l->kind == TOP_LINE_ROW || l->kind == TOP_LINE_EXITED;
}

/* The header, then the opened process's details (always in sight), then
 * the table scrolled so that the chosen row is on the screen; the last
 * line says the keys or the files skipped. */
static void draw(const struct vt_follow_view *v, struct top_run_options *o, struct screen_state *s,
                 struct top_lines *lines, uint64_t now_ns)
{
    o->frame.width = COLS > 0 ? (size_t)COLS : 80;
    if (!top_frame_build(v, &o->frame, now_ns, time(NULL), s->order, lines))
        return;
    erase();
    int y = 0, bottom = LINES - 1;
    size_t table = 0, rows = 0, chosen_at = 0;
    for (size_t i = 0; i < lines->n; i++) {
        const struct top_line *l = &lines->lines[i];
        if (l->kind == TOP_LINE_COLUMNS && !table)
            table = i;
        if (is_row(l)) {
            if (l->process == s->chosen)
                chosen_at = rows;
            rows++;
        }
        if (!table && y < bottom)
            draw_line(y++, l, s); /* the header */
    }
    for (size_t i = 0; i < lines->n && y < bottom; i++)
        if (lines->lines[i].kind == TOP_LINE_DETAIL)
            draw_line(y++, &lines->lines[i], s);
    if (o->frame.opened >= 0 && y < bottom)
        y++;
    if (table && y < bottom)
        draw_line(y++, &lines->lines[table], s);
    size_t room = y < bottom ? (size_t)(bottom - y) : 0;
    size_t skip = room && chosen_at >= room ? chosen_at - room + 1 : 0;
    for (size_t i = table + 1, r = 0; table && i < lines->n && y < bottom; i++) {
        if (!is_row(&lines->lines[i]))
            continue;
        if (r++ >= skip)
            draw_line(y++, &lines->lines[i], s);
    }
    attrset(A_NORMAL);
    if (v->nnotes)
        mvprintw(LINES - 1, 0, "%zu file%s skipped or broken; last: %.*s", v->nnotes,
                 v->nnotes == 1 ? "" : "s", COLS > 60 ? COLS - 40 : 20, v->notes[v->nnotes - 1]);
    else if (rows > room)
        mvprintw(LINES - 1, 0, "rows %zu-%zu of %zu (up/down)  q quit  b/p/g/r sort  Enter open  "
                 "? help", skip + 1, skip + room, rows);
    else
        mvaddnstr(LINES - 1, 0, "q quit  b/p/g/r sort  up/down choose  Enter open  ? help", COLS - 1);
    refresh();
}

/* The chosen process moved by step rows in the order shown. */
static void choose(const struct vt_follow_view *v, struct screen_state *s, int step)
{
    if (!v->nprocesses)
        return;
    size_t at = 0;
    for (size_t i = 0; i < v->nprocesses; i++)
        if ((long)s->order[i] == s->chosen)
            at = i;
    if (s->chosen < 0)
        at = 0;
    else if (step < 0 && at > 0)
        at--;
    else if (step > 0 && at + 1 < v->nprocesses)
        at++;
    s->chosen = (long)s->order[at];
}

/* Handles a key: false to quit. */
static bool on_key(int key, const struct vt_follow_view *v, struct top_run_options *o,
                   struct screen_state *s)
{
    if (s->help) {
        s->help = false;
        return true;
    }
    switch (key) {
    case 'q': case 'Q': return false;
    case 'b': o->frame.sort = VT_FOLLOW_SORT_NOW; break;
    case 'p': o->frame.sort = VT_FOLLOW_SORT_PEAK; break;
    case 'g': o->frame.sort = VT_FOLLOW_SORT_GROWTH; break;
    case 'r': o->frame.sort = VT_FOLLOW_SORT_RANK; break;
    case KEY_UP: case 'k': choose(v, s, -1); break;
    case KEY_DOWN: case 'j': choose(v, s, 1); break;
    case '\n': case '\r': case KEY_ENTER: case 'o':
        if (o->frame.opened >= 0) {
            o->frame.opened = -1;
        } else {
            if (s->chosen < 0)
                choose(v, s, 0);
            o->frame.opened = s->chosen;
        }
        break;
    case KEY_ESCAPE: o->frame.opened = -1; break;
    case '?': case 'h': s->help = true; break;
    default: break;
    }
    return true;
}

int top_screen_run(struct vt_follow_view *v, struct top_run_options *o)
{
    /* newterm, not initscr: initscr exits the program on a terminal it
     * does not know; this says what to do instead. */
    SCREEN *screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        fprintf(stderr, "vramtrace top: cannot drive this terminal (TERM=%s); -b prints frames "
                        "instead\n", getenv("TERM") ? getenv("TERM") : "");
        return 2;
    }
    set_term(screen);
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    set_escdelay(25);
    curs_set(0);
    struct screen_state s = {.chosen = -1};
    struct top_lines lines = {0};
    int status = 0;
    bool quit = false;
    for (uint64_t frame = 0; !quit && (!o->frames || frame < o->frames); frame++) {
        uint64_t now_ns = top_now_ns();
        if (!vt_follow_view_refresh(v)) {
            status = 2;
            break;
        }
        if (v->nprocesses + 1 > s.order_cap) {
            s.order_cap = 2 * (v->nprocesses + 1);
            free(s.order);
            if (!(s.order = malloc(s.order_cap * sizeof *s.order))) {
                status = 2;
                break;
            }
        }
        if (frame == 0 && o->open_pid >= 0)
            o->frame.opened = s.chosen = top_process_of_pid(v, o->open_pid);
        uint64_t frame_ns = top_now_ns(); /* the frame's time: after reading */
        if (s.help)
            draw_help();
        else
            draw(v, o, &s, &lines, frame_ns);
        if (o->frames && frame + 1 == o->frames)
            break;
        if (o->frame.divergence) /* the next frame's marks, off this frame's clock */
            top_divergence_update(o->frame.divergence, v);
        /* Keys until the next refresh is due. */
        uint64_t due = now_ns + o->frame.delay_ns;
        for (uint64_t t = top_now_ns(); !quit && t < due; t = top_now_ns()) {
            timeout((int)((due - t) / 1000000u) + 1);
            int key = getch();
            if (key == ERR)
                continue;
            if (key == KEY_RESIZE) {
                /* redrawn at its new size below */
            } else if (!on_key(key, v, o, &s)) {
                quit = true;
                break;
            }
            if (s.help)
                draw_help();
            else
                draw(v, o, &s, &lines, frame_ns);
        }
    }
    endwin();
    delscreen(screen);
    top_lines_clear(&lines);
    free(lines.lines);
    free(s.order);
    if (status)
        fputs("vramtrace top: out of memory\n", stderr);
    return status;
}
