/* Per-site live bytes and peak states; the algorithm is in peak_tracker.h. */
#include "peak_tracker.h"

#include <stdlib.h>
#include <string.h>

#define NONE VT_SITE_NONE

void vt_sites_init(struct vt_ledger_sites *l)
{
    memset(l, 0, sizeof *l);
}

void vt_sites_free(struct vt_ledger_sites *l)
{
    free(l->sites);
    free(l->log);
    free(l->index);
    vt_sites_init(l);
}

/* Places site i in an index known to have room for it. */
static void index_put(struct vt_site_slot *index, size_t cap, unsigned shift, uint32_t i,
                      const struct vt_site *site)
{
    uint64_t h = vt_site_hash(site->stack, site->thread);
    size_t j = (size_t)(h >> shift);
    while (index[j].site != NONE)
        j = (j + 1) & (cap - 1);
    index[j] = (struct vt_site_slot){i, (uint32_t)h};
}

/* Makes room in the index for one more site (at most a quarter full: an
 * allocation's lookup then nearly always ends at its home slot, and a
 * probe past it is a mispredicted exit; half full, bench/synth_trace's 512
 * stacks cost 0.14 mispredicted branches an event in callgrind's model,
 * 0.05 at a quarter, and replayed 2-5% slower. 8 bytes a slot; the index
 * goes when the replay is over, vt_sites_settle). */
static bool index_fit(struct vt_ledger_sites *l)
{
    if (((size_t)l->nsites + 1) * 4 <= l->index_cap)
        return true;
    size_t ncap = l->index_cap ? l->index_cap * 2 : 128;
    struct vt_site_slot *n = malloc(ncap * sizeof *n);
    if (!n)
        return false;
    memset(n, 0xff, ncap * sizeof *n); /* every site NONE */
    unsigned shift = (unsigned)(64 - __builtin_ctzll(ncap));
    for (uint32_t i = 0; i < l->nsites; i++)
        index_put(n, ncap, shift, i, &l->sites[i]);
    free(l->index);
    l->index = n;
    l->index_cap = ncap;
    l->index_shift = shift;
    return true;
}

long vt_sites_add(struct vt_ledger_sites *l, uint64_t stack, uint64_t thread)
{
    if (l->nsites == NONE - 1)
        return -1;
    if (l->nsites == l->cap) {
        uint32_t ncap = l->cap ? l->cap * 2 : 64;
        /* The log first: it must hold twice the sites (see the header). */
        struct vt_site_change *log = realloc(l->log, (size_t)ncap * 2 * sizeof *log);
        if (!log)
            return -1;
        l->log = log;
        l->log_cap = (size_t)ncap * 2;
        struct vt_site *n = realloc(l->sites, (size_t)ncap * sizeof *n);
        if (!n)
            return -1;
        l->sites = n;
        l->cap = ncap;
    }
    if (!index_fit(l))
        return -1;
    uint32_t i = l->nsites++;
    l->sites[i] = (struct vt_site){.stack = stack, .thread = thread};
    index_put(l->index, l->index_cap, l->index_shift, i, &l->sites[i]);
    return (long)i;
}

void vt_sites_compact_log(struct vt_ledger_sites *l)
{
    size_t kept = 0;
    for (size_t k = 0; k < l->nlog; k++)
        if (l->sites[l->log[k].site].logged_at == l->log[k].seq)
            l->log[kept++] = l->log[k];
    l->nlog = kept;
}

void vt_sites_settle(struct vt_ledger_sites *l)
{
    free(l->index);
    l->index = NULL;
    l->index_cap = 0;
    l->index_shift = 0;
    free(l->log);
    l->log = NULL;
    l->nlog = l->log_cap = 0;
    if (l->nsites && l->nsites < l->cap) {
        struct vt_site *n = realloc(l->sites, (size_t)l->nsites * sizeof *n);
        if (n) {
            l->sites = n;
            l->cap = l->nsites;
        }
    }
}

long vt_sites_change(struct vt_ledger_sites *l, uint64_t stack, uint64_t thread,
                     int64_t delta_bytes, int64_t delta_count)
{
    long i = vt_sites_find_or_add(l, stack, thread);
    if (i >= 0)
        vt_sites_change_at(l, (uint32_t)i, delta_bytes, delta_count);
    return i;
}

void vt_peak_state_init(struct vt_peak_state *s)
{
    memset(s, 0, sizeof *s);
}

void vt_peak_state_free(struct vt_peak_state *s)
{
    free(s->bytes);
    free(s->count);
    vt_peak_state_init(s);
}

/* Both arrays to n entries (n > 0); false if either could not be (each
 * that could is resized all the same). */
static bool resize_arrays(struct vt_peak_state *s, size_t n)
{
    uint64_t *b = realloc(s->bytes, n * sizeof *b);
    if (b)
        s->bytes = b;
    uint64_t *c = realloc(s->count, n * sizeof *c);
    if (c)
        s->count = c;
    return b && c;
}

void vt_peak_state_settle(struct vt_peak_state *s, size_t nsites)
{
    if (nsites >= s->cap)
        return;
    if (nsites == 0) { /* no site: the state's figures stay, its arrays go */
        free(s->bytes);
        free(s->count);
        s->bytes = s->count = NULL;
        s->cap = 0;
        return;
    }
    /* a site past nsites does not exist: nothing is lost (where realloc
     * fails, the larger array stays, valid for nsites all the same) */
    (void)resize_arrays(s, nsites);
    s->cap = nsites;
}

static bool state_fit(struct vt_peak_state *s, size_t n)
{
    if (n <= s->cap)
        return true;
    /* Small first: a record is kept per phase name and ledger, most of them
     * over a few sites. */
    size_t ncap = s->cap ? s->cap : 4;
    while (ncap < n)
        ncap *= 2;
    if (!resize_arrays(s, ncap))
        return false;
    memset(s->bytes + s->cap, 0, (ncap - s->cap) * sizeof *s->bytes);
    memset(s->count + s->cap, 0, (ncap - s->cap) * sizeof *s->count);
    s->cap = ncap;
    return true;
}

bool vt_peak_state_offer(struct vt_peak_state *s, struct vt_ledger_sites *l,
                         uint64_t time_ns)
{
    return vt_peak_state_is_new_peak(s, l) && vt_peak_state_take(s, l, time_ns);
}

bool vt_peak_state_take(struct vt_peak_state *s, struct vt_ledger_sites *l, uint64_t time_ns)
{
    if (!state_fit(s, l->nsites))
        return false; /* out of memory: keep the older, consistent copy */
    /* Only sites changed after the previous copy differ from it. */
    for (size_t k = l->nlog; k-- > 0 && l->log[k].seq > s->taken_at;) {
        uint32_t i = l->log[k].site;
        s->bytes[i] = l->sites[i].bytes;
        s->count[i] = l->sites[i].count;
    }
    s->taken_at = l->seq;
    l->state_seq = l->seq;
    s->peak_bytes = l->total_bytes;
    s->peak_count = l->total_count;
    s->peak_time_ns = time_ns;
    s->has_peak = true;
    return true;
}

bool vt_peak_state_copy(struct vt_peak_state *dst, const struct vt_peak_state *src,
                        const struct vt_ledger_sites *l)
{
    if (!state_fit(dst, l->nsites))
        return false;
    /* A site unchanged since both copies were taken holds the same bytes in
     * both; any other was changed after the older one, so it is in the
     * newest part of the change log. src->cap covers every site that
     * existed when src was taken: a site past it was created later, with
     * nothing live at src's instant. */
    uint64_t since = dst->taken_at < src->taken_at ? dst->taken_at : src->taken_at;
    for (size_t k = l->nlog; k-- > 0 && l->log[k].seq > since;) {
        uint32_t i = l->log[k].site;
        dst->bytes[i] = i < src->cap ? src->bytes[i] : 0;
        dst->count[i] = i < src->cap ? src->count[i] : 0;
    }
    dst->taken_at = src->taken_at;
    dst->peak_bytes = src->peak_bytes;
    dst->peak_count = src->peak_count;
    dst->peak_time_ns = src->peak_time_ns;
    dst->has_peak = src->has_peak;
    return true;
}

static int by_bytes_desc(const void *pa, const void *pb)
{
    const struct vt_site_bytes *a = pa, *b = pb;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? 1 : -1;
    /* Deterministic order for equal sizes: older sites first. */
    if (a->stack != b->stack)
        return a->stack < b->stack ? -1 : 1;
    return a->thread < b->thread ? -1 : a->thread > b->thread;
}

size_t vt_sites_top(const struct vt_ledger_sites *l, const struct vt_peak_state *s,
                    struct vt_site_bytes *out, size_t n)
{
    if (n == 0)
        return 0;
    /* Keep the n largest in out[] (sorted), inserting each candidate: n is
     * small (a screen of rows) while sites can be many. */
    size_t have = 0;
    for (uint32_t i = 0; i < l->nsites; i++) {
        uint64_t bytes, count;
        if (s) {
            if (i >= s->cap)
                break;
            bytes = s->bytes[i];
            count = s->count[i];
        } else {
            bytes = l->sites[i].bytes;
            count = l->sites[i].count;
        }
        if (bytes == 0)
            continue;
        struct vt_site_bytes cand = {l->sites[i].stack, l->sites[i].thread, bytes, count};
        if (have == n && by_bytes_desc(&cand, &out[n - 1]) >= 0)
            continue;
        size_t pos = have < n ? have++ : n - 1;
        while (pos > 0 && by_bytes_desc(&cand, &out[pos - 1]) < 0) {
            out[pos] = out[pos - 1];
            pos--;
        }
        out[pos] = cand;
    }
    return have;
}
