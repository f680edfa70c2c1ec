/* The HTML page's timelines, from the read's notes; see timeline_notes.h. */
#include "timeline_notes.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum note_tag { NOTE_CHANGE = 1, NOTE_RANGE };

struct note_change {
    uint64_t time_ns, size, total_bytes;
    uint64_t site_ledger_begins; /* site | ledger << 32 | begins << 40 */
};

struct note_range {
    uint64_t name, time_ns, opens;
};

struct vt_timeline_notes_input {
    struct vt_input_notes *notes;
    size_t input;
    vt_live_fn prev;             /* the on_live hook this one chains to */
    void *prev_ctx;
};

bool vt_timeline_notes_init(struct vt_timeline_notes *tn, size_t ninputs)
{
    memset(tn, 0, sizeof *tn);
    tn->inputs = calloc(ninputs + 1, sizeof *tn->inputs);
    tn->notes = vt_input_notes_new(ninputs);
    tn->n = ninputs;
    return tn->inputs && tn->notes;
}

void vt_timeline_notes_free(struct vt_timeline_notes *tn)
{
    vt_input_notes_free(tn->notes);
    free(tn->inputs);
    memset(tn, 0, sizeof *tn);
}

static void note(struct vt_timeline_notes_input *ni, enum note_tag tag, const void *body,
                 size_t n)
{
    unsigned char t = (unsigned char)tag;
    vt_input_notes_add(ni->notes, ni->input, &t, 1);
    vt_input_notes_add(ni->notes, ni->input, body, n);
}

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct vt_timeline_notes_input *ni = ctx;
    if (ni->prev)
        ni->prev(ni->prev_ctx, rp, l, e, begins);
    uint64_t li = (uint64_t)(l - rp->ledgers);
    struct note_change c = {rp->last_time_ns, e->size, l->sites.total_bytes,
                            e->site | li << 32 | (uint64_t)begins << 40};
    note(ni, NOTE_CHANGE, &c, sizeof c);
}

static void on_range(void *ctx, struct vt_replay *rp, uint64_t name, uint64_t time_ns, bool opens)
{
    (void)rp;
    struct note_range r = {name, time_ns, opens};
    note(ctx, NOTE_RANGE, &r, sizeof r);
}

void vt_timeline_notes_prepare(void *ctx, struct vt_input *in)
{
    struct vt_timeline_notes *tn = ctx;
    if (in->index >= tn->n)
        return;
    struct vt_timeline_notes_input *ni = &tn->inputs[in->index];
    *ni = (struct vt_timeline_notes_input){tn->notes, in->index, in->replay.on_live,
                                           in->replay.on_live_ctx};
    in->replay.on_live = on_live;
    in->replay.on_live_ctx = ni;
    in->replay.on_range = on_range;
    in->replay.on_range_ctx = ni;
}

/* One input's notes into its timeline; false when they could not be read
 * back whole. */
static bool play(const struct vt_timeline_notes *tn, const struct vt_input *in,
                 struct vt_timeline *tl)
{
    struct vt_input_notes_cursor c;
    if (!vt_input_notes_rewind(tn->notes, in->index, &c))
        return false;
    const struct vt_replay *rp = &in->replay;
    unsigned char tag;
    bool ok = true;
    while (ok && vt_input_notes_next(&c, &tag, 1)) {
        if (tag == NOTE_CHANGE) {
            struct note_change n;
            ok = vt_input_notes_next(&c, &n, sizeof n);
            size_t li = (size_t)(n.site_ledger_begins >> 32 & 0xff);
            ok = ok && li < rp->nledgers;
            struct vt_timeline_change ch = {n.time_ns, n.size, n.total_bytes,
                                            (uint32_t)n.site_ledger_begins,
                                            (n.site_ledger_begins >> 40 & 1) != 0};
            if (ok)
                vt_timeline_change(tl, &rp->ledgers[li], li, &ch);
        } else if (tag == NOTE_RANGE) {
            struct note_range n;
            ok = vt_input_notes_next(&c, &n, sizeof n);
            if (ok)
                vt_timeline_range(tl, n.name, n.time_ns, n.opens != 0);
        } else {
            ok = false;
        }
    }
    vt_input_notes_cursor_free(&c);
    return ok;
}

bool vt_timelines_play(const struct vt_timeline_notes *tn, const struct vt_analysis *a,
                       const bool *chosen, struct vt_timeline *tl)
{
    bool ok = tn && tn->notes && vt_input_notes_whole(tn->notes);
    for (size_t i = 0; i < a->ninputs; i++) {
        if (ok && chosen[i] && i < tn->n && !play(tn, &a->inputs[i], &tl[i]))
            ok = false;
        vt_timeline_finish(&tl[i]);
        if (tl[i].out_of_memory)
            ok = false;
    }
    return ok;
}
