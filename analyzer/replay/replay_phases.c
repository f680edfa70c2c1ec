/*
 * Phase peaks: for each phase name and ledger, the largest total while the
 * name was open (replay.h gives the meaning; this file the bookkeeping).
 *
 * Why not simply offer every new total to every open name: that costs
 * O(open names) per allocation, and a 9 KB trace that opens 4,000 nested
 * ranges and then allocates 20,000 times took minutes to report
 * (docs/internals/RELIABILITY.md, finding 4). Instead, "max since mark":
 *
 * A name's mark is the moment it opened (from closed). Its peak over that
 * open interval is the largest total of the ledger since its mark. Marks
 * are numbered in order; of two open names, the later mark's interval is
 * the tail of the earlier's, so "max since mark" never increases from older
 * to newer marks. Consecutive marks with the same max form a level (struct
 * vt_phase_level); a ledger keeps its levels as a stack, oldest first:
 *
 *   - an allocation makes the total T: only levels below T change, and those
 *     are the newest ones; they merge into one level whose max is T, reached
 *     now, with one state of the ledger (brought up to date the way
 *     peak_tracker.h describes, reusing the newest merged level's copy).
 *     Most allocations do not exceed the newest level: one comparison,
 *     however many names are open (vt_phases_after_alloc);
 *   - a name opening pushes a level holding the current total, or joins the
 *     newest level if the ledger has not changed since it was made. The
 *     total at that moment is offered to the name's record right away (as
 *     the eager scheme did), so such a level carries no state;
 *   - a name closing finds its level (the last with first_mark <= its mark:
 *     a binary search, usually the newest), leaves it, and folds the
 *     level's max into its record: a copy of the level's state when that
 *     is a new peak for the name (vt_peak_state_copy walks only the sites
 *     changed since the record's last copy).
 *
 * A level is made once (at an open) and merged away once, so an event costs
 * O(1) amortized; opening or closing a name costs O(ledgers) and a binary
 * search. A level nobody is in any more gives its state back at once
 * (a few are kept for reuse) and is dropped from the top, or, in the middle,
 * when such levels become half of the stack.
 *
 * The results are those of the eager scheme, ties included (the earliest
 * instant of the largest total wins): tests/analyzer/test_phase_depth.c
 * checks them against a brute-force replay.
 */
#include "replay_phases.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"

#define SPARE_MAX (sizeof ((struct vt_ledger *)0)->spare_states / sizeof(void *))

/* ---- records (one per name and ledger, found through the index) ---- */

const struct vt_phase_peak *vt_ledger_phase(const struct vt_ledger *l, uint64_t name)
{
    uint64_t *i = vt_pair_map_get(&l->phase_index, name, 0);
    return i ? &l->phases[*i] : NULL;
}

static struct vt_phase_peak *get_phase(struct vt_ledger *l, uint64_t name)
{
    uint64_t *i = vt_pair_map_get(&l->phase_index, name, 0);
    if (i)
        return &l->phases[*i];
    if (!vt_grow_array((void **)&l->phases, &l->phases_cap, l->nphases + 1, sizeof *l->phases) ||
        !vt_pair_map_put_new(&l->phase_index, name, 0, l->nphases))
        return NULL;
    struct vt_phase_peak *p = &l->phases[l->nphases++];
    memset(p, 0, sizeof *p);
    p->name = name;
    vt_peak_state_init(&p->state);
    return p;
}

/* ---- states of levels, reused ---- */

static struct vt_peak_state *state_take(struct vt_ledger *l)
{
    if (l->nspare_states)
        return l->spare_states[--l->nspare_states];
    struct vt_peak_state *s = malloc(sizeof *s);
    if (s)
        vt_peak_state_init(s);
    return s;
}

static void state_drop(struct vt_peak_state *s)
{
    vt_peak_state_free(s);
    free(s);
}

/* A spare keeps its copy of the ledger (valid at its taken_at), so the
 * next offer walks only what changed since: the newest given back is
 * reused first, and the oldest is freed when too many wait. */
static void state_give(struct vt_ledger *l, struct vt_peak_state *s)
{
    if (!s)
        return;
    s->has_peak = false;
    if (l->nspare_states == SPARE_MAX) {
        state_drop(l->spare_states[0]);
        memmove(l->spare_states, l->spare_states + 1, (SPARE_MAX - 1) * sizeof *l->spare_states);
        l->nspare_states--;
    }
    l->spare_states[l->nspare_states++] = s;
}

/* ---- levels ---- */

/* The level of an open name's mark, or NULL (only after running out of
 * memory). The newest level first: most ranges end innermost first. */
static struct vt_phase_level *level_of(struct vt_ledger *l, uint64_t mark)
{
    if (!l->nlevels)
        return NULL;
    if (l->levels[l->nlevels - 1].first_mark <= mark)
        return &l->levels[l->nlevels - 1];
    size_t lo = 0, hi = l->nlevels - 1; /* the first level past the mark is in [lo, hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->levels[mid].first_mark <= mark)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &l->levels[lo - 1] : NULL;
}

static bool level_push(struct vt_ledger *l, uint64_t mark, uint32_t members)
{
    if (l->nlevels && l->levels[l->nlevels - 1].seq == l->sites.seq) {
        /* Nothing changed since the newest level's max: the same max. */
        struct vt_phase_level *top = &l->levels[l->nlevels - 1];
        if (top->members == 0)
            l->empty_levels--;
        top->members += members;
        return true;
    }
    if (!vt_grow_array((void **)&l->levels, &l->levels_cap, l->nlevels + 1, sizeof *l->levels))
        return false;
    l->levels[l->nlevels++] =
        (struct vt_phase_level){mark, l->sites.total_bytes, l->sites.seq, NULL, members};
    return true;
}

/* Levels nobody is in: dropped from the top at once, from the middle when
 * they are half of the stack (which keeps the stack O(open names)). */
static void drop_empty_levels(struct vt_ledger *l)
{
    while (l->nlevels && l->levels[l->nlevels - 1].members == 0) {
        state_give(l, l->levels[--l->nlevels].state);
        l->empty_levels--;
    }
    if (l->empty_levels < 16 || l->empty_levels * 2 < l->nlevels)
        return;
    /* An empty level's marks are all closed: its neighbours' marks map as before. */
    size_t n = 0;
    for (size_t i = 0; i < l->nlevels; i++)
        if (l->levels[i].members)
            l->levels[n++] = l->levels[i];
    l->nlevels = n;
    l->empty_levels = 0;
}

bool vt_phases_raise(const struct vt_open_phases *ph, struct vt_ledger *l, uint64_t time_ns)
{
    bool ok = true;
    if (!l->phase_records_made) {
        /* The first allocation of a ledger made while names were open: they
         * get their records now, in the order the eager scheme made them. */
        for (size_t k = 0; k < ph->n; k++)
            if (!get_phase(l, ph->names[k].name))
                ok = false;
        l->phase_records_made = true;
    }
    uint64_t total = l->sites.total_bytes;
    size_t j = l->nlevels;
    uint32_t members = 0;
    struct vt_peak_state *state = NULL;
    while (j > 0 && l->levels[j - 1].value < total) {
        struct vt_phase_level *lv = &l->levels[--j];
        members += lv->members;
        if (!lv->members)
            l->empty_levels--;
        if (!state)
            state = lv->state; /* the newest copy: the least to bring up to date */
        else
            state_give(l, lv->state);
    }
    if (!members) { /* only empty levels were below */
        state_give(l, state);
        l->nlevels = j;
        return ok;
    }
    if (!state)
        state = state_take(l);
    if (!state || !vt_peak_state_offer(state, &l->sites, time_ns))
        ok = false; /* then the level's max has no state: not folded */
    struct vt_phase_level *lv = &l->levels[j]; /* keeps the oldest first_mark */
    lv->value = total;
    lv->seq = l->sites.seq;
    lv->state = state;
    lv->members = members;
    l->nlevels = j + 1;
    return ok;
}

/* The level's max into the name's record, if it is a new peak for it (a tie
 * keeps the earlier instant, as the eager scheme did). false: out of memory. */
static bool fold(struct vt_ledger *l, struct vt_phase_peak *p, const struct vt_phase_level *lv)
{
    if (!lv || !lv->state || !lv->state->has_peak)
        return true;
    if (p->state.has_peak && lv->state->peak_bytes <= p->state.peak_bytes)
        return true;
    return vt_peak_state_copy(&p->state, lv->state, &l->sites);
}

bool vt_phases_new_ledger(const struct vt_open_phases *ph, struct vt_ledger *l)
{
    /* Every open name's max in this ledger starts at its (empty) beginning:
     * one level from mark 0 holds them all. */
    return !ph->n || level_push(l, 0, (uint32_t)ph->n);
}

/* ---- names ---- */

void vt_open_phases_init(struct vt_open_phases *ph)
{
    memset(ph, 0, sizeof *ph);
    vt_pair_map_init(&ph->index);
    vt_pair_map_init(&ph->opened);
}

/* Marks count up as names open from closed: the smallest mark open is the
 * name open longest. */
static uint64_t open_by_mark(const struct vt_open_phases *ph, bool newest)
{
    uint64_t name = 0, best = 0;
    for (size_t i = 0; i < ph->n; i++) {
        uint64_t m = ph->names[i].mark;
        if (!name || (newest ? m > best : m < best)) {
            name = ph->names[i].name;
            best = m;
        }
    }
    return name;
}

uint64_t vt_open_phases_outermost(const struct vt_open_phases *ph)
{
    return open_by_mark(ph, false);
}

uint64_t vt_open_phases_innermost(const struct vt_open_phases *ph)
{
    return open_by_mark(ph, true);
}

void vt_open_phases_free(struct vt_open_phases *ph)
{
    vt_pair_map_free(&ph->index);
    vt_pair_map_free(&ph->opened);
    free(ph->names);
    memset(ph, 0, sizeof *ph);
}

bool vt_phases_open(struct vt_open_phases *ph, struct vt_ledger *ledgers, size_t nledgers,
                    uint64_t name, uint64_t time_ns)
{
    /* Counted for the process, not per ledger: a range opened before the
     * first allocation opened all the same. */
    uint64_t *opened = vt_pair_map_get(&ph->opened, name, 0);
    if (opened)
        ++*opened;
    else if (!vt_pair_map_put_new(&ph->opened, name, 0, 1))
        return false;
    uint64_t *k = vt_pair_map_get(&ph->index, name, 0);
    bool first = !k, ok = true;
    size_t idx;
    if (first) {
        if (ph->n == UINT32_MAX ||
            !vt_grow_array((void **)&ph->names, &ph->cap, ph->n + 1, sizeof *ph->names) ||
            !vt_pair_map_put_new(&ph->index, name, 0, ph->n))
            return false;
        idx = ph->n++;
        ph->names[idx].name = name;
        ph->names[idx].count = 0;
        ph->names[idx].mark = ++ph->marks_made;
    } else {
        idx = (size_t)*k;
    }
    ph->names[idx].count++;
    uint64_t mark = ph->names[idx].mark;
    for (size_t i = 0; i < nledgers; i++) {
        struct vt_ledger *l = &ledgers[i];
        struct vt_phase_peak *p = get_phase(l, name);
        if (!p) {
            ok = false;
            continue;
        }
        if (first) {
            /* The total at the moment a phase opens is its first candidate. */
            vt_peak_state_offer(&p->state, &l->sites, time_ns);
            if (!level_push(l, mark, 1))
                ok = false;
        } else if (!p->state.has_peak) {
            /* Open already, but with no peak yet in this ledger (made after
             * the name opened): what its level holds first, then now. */
            if (!fold(l, p, level_of(l, mark)))
                ok = false;
            vt_peak_state_offer(&p->state, &l->sites, time_ns);
        }
        /* Otherwise now is inside the open interval: its level has it. */
    }
    return ok;
}

bool vt_phases_close(struct vt_open_phases *ph, struct vt_ledger *ledgers, size_t nledgers,
                     uint64_t name, uint64_t time_ns)
{
    uint64_t *k = vt_pair_map_get(&ph->index, name, 0);
    if (!k)
        return true;
    size_t idx = (size_t)*k;
    if (--ph->names[idx].count)
        return true;
    bool ok = true;
    uint64_t mark = ph->names[idx].mark;
    for (size_t i = 0; i < nledgers; i++) {
        struct vt_ledger *l = &ledgers[i];
        /* (a ledger whose phase records are not made yet holds nothing:
         * its closing is not counted; records stay in first-seen order) */
        uint64_t *rec = vt_pair_map_get(&l->phase_index, name, 0);
        if (rec)
            vt_growth_close(&l->phases[*rec].growth, &l->sites, &l->growth_copied, time_ns);
        struct vt_phase_level *lv = level_of(l, mark);
        if (!lv || !lv->members)
            continue; /* only after running out of memory */
        if (lv->state) {
            struct vt_phase_peak *p = get_phase(l, name);
            if (!p || !fold(l, p, lv))
                ok = false;
        }
        if (--lv->members == 0) {
            l->empty_levels++;
            state_give(l, lv->state);
            lv->state = NULL;
            drop_empty_levels(l);
        }
    }
    /* Out of the open set (the last entry takes its place). */
    vt_pair_map_remove_at(&ph->index, k);
    ph->names[idx] = ph->names[--ph->n];
    if (idx < ph->n) {
        uint64_t *moved = vt_pair_map_get(&ph->index, ph->names[idx].name, 0);
        if (moved)
            *moved = idx;
    }
    return ok;
}

bool vt_phases_finish(const struct vt_open_phases *ph, struct vt_ledger *ledgers,
                      size_t nledgers)
{
    bool ok = true;
    for (size_t i = 0; i < nledgers; i++)
        for (size_t k = 0; k < ledgers[i].nphases; k++) {
            struct vt_phase_peak *p = &ledgers[i].phases[k];
            const uint64_t *opened = vt_pair_map_get(&ph->opened, p->name, 0);
            p->opened = opened ? *opened : 0;
            p->open_at_exit = vt_pair_map_get(&ph->index, p->name, 0) != NULL;
        }
    for (size_t k = 0; k < ph->n; k++)
        for (size_t i = 0; i < nledgers; i++) {
            struct vt_ledger *l = &ledgers[i];
            const struct vt_phase_level *lv = level_of(l, ph->names[k].mark);
            if (!lv || !lv->state)
                continue;
            struct vt_phase_peak *p = get_phase(l, ph->names[k].name);
            if (!p || !fold(l, p, lv))
                ok = false;
        }
    return ok;
}

void vt_phases_free_ledger(struct vt_ledger *l)
{
    for (size_t i = 0; i < l->nphases; i++) {
        vt_peak_state_free(&l->phases[i].state);
        vt_growth_free(&l->phases[i].growth);
    }
    free(l->phases);
    vt_pair_map_free(&l->phase_index);
    for (size_t i = 0; i < l->nlevels; i++)
        if (l->levels[i].state)
            state_drop(l->levels[i].state);
    free(l->levels);
    for (size_t i = 0; i < l->nspare_states; i++)
        state_drop(l->spare_states[i]);
}
