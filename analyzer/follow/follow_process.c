/* One process followed while it runs; see follow_process.h. */
#define _GNU_SOURCE /* strdup */
#include "follow_process.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "follow_command.h"
#include "process_env.h"
#include "grow_array.h"

#define POLL_BATCH 256
#define NS_PER_S 1000000000ull

/* ---- the last minute ---- */

/* The device total went from before to after at time_ns: seconds since
 * the latest one noted held before all along. */
static void note_history(struct vt_follow_process *p, uint64_t time_ns, uint64_t before,
                         uint64_t after)
{
    uint64_t s = time_ns / NS_PER_S;
    if (!p->has_history) {
        p->history_first = p->history_last = s;
        p->has_history = true;
        p->history[s % VT_FOLLOW_HISTORY_SECONDS].second = s;
        p->history[s % VT_FOLLOW_HISTORY_SECONDS].max_bytes = before;
    }
    if (s > p->history_last) {
        uint64_t from = p->history_last + 1;
        if (s - from >= VT_FOLLOW_HISTORY_SECONDS)
            from = s - VT_FOLLOW_HISTORY_SECONDS + 1; /* older ones leave the minute anyway */
        for (uint64_t t = from; t <= s; t++) {
            p->history[t % VT_FOLLOW_HISTORY_SECONDS].second = t;
            p->history[t % VT_FOLLOW_HISTORY_SECONDS].max_bytes = before;
        }
        p->history_last = s;
    }
    /* An event out of order (another thread's, a little older) counts in
     * the latest second. */
    uint64_t *m = &p->history[p->history_last % VT_FOLLOW_HISTORY_SECONDS].max_bytes;
    if (after > *m)
        *m = after;
}

void vt_follow_process_history(const struct vt_follow_process *p, uint64_t now_ns, uint64_t *out,
                               size_t n)
{
    uint64_t now_s = now_ns / NS_PER_S;
    for (size_t c = 0; c < n; c++) {
        uint64_t first = now_s + 1 - VT_FOLLOW_HISTORY_SECONDS + c * VT_FOLLOW_HISTORY_SECONDS / n;
        uint64_t end = now_s + 1 - VT_FOLLOW_HISTORY_SECONDS + (c + 1) * VT_FOLLOW_HISTORY_SECONDS / n;
        if (!p->has_history || end <= p->history_first) {
            out[c] = VT_FOLLOW_NO_HISTORY;
            continue;
        }
        uint64_t m = 0;
        for (uint64_t t = first; t < end; t++) {
            uint64_t v = 0;
            if (p->has_history && t > p->history_last)
                v = p->exited ? 0 : p->device_bytes; /* nothing changed since */
            else if (p->has_history && p->history[t % VT_FOLLOW_HISTORY_SECONDS].second == t)
                v = p->history[t % VT_FOLLOW_HISTORY_SECONDS].max_bytes;
            if (v > m)
                m = v;
        }
        out[c] = m;
    }
}

/* ---- the replay's hooks ---- */

static void on_live(void *ctx, struct vt_replay *rp, const struct vt_ledger *l,
                    const struct vt_live *e, bool begins)
{
    struct vt_follow_process *p = ctx;
    if (l->category != VT_CAT_DEVICE)
        return;
    uint64_t before = p->device_bytes;
    p->device_bytes = begins ? before + e->size : before - e->size;
    if (!p->has_peak || p->device_bytes > p->peak_bytes) {
        p->peak_bytes = p->device_bytes;
        p->peak_time_ns = rp->last_time_ns;
        p->has_peak = true;
    }
    note_history(p, rp->last_time_ns, before, p->device_bytes);
}

static struct vt_follow_phase *phase_of(struct vt_follow_process *p, uint64_t name)
{
    for (size_t i = 0; i < p->nphases; i++) /* a process has few phase names */
        if (p->phases[i].name == name)
            return &p->phases[i];
    if (!vt_grow_array((void **)&p->phases, &p->phases_cap, p->nphases + 1, sizeof *p->phases))
        return NULL;
    p->phases[p->nphases] = (struct vt_follow_phase){.name = name};
    return &p->phases[p->nphases++];
}

static void on_range(void *ctx, struct vt_replay *rp, uint64_t name, uint64_t time_ns, bool opens)
{
    (void)time_ns;
    struct vt_follow_process *p = ctx;
    struct vt_follow_phase *ph = phase_of(p, name);
    if (!ph) {
        rp->out_of_memory = true;
        return;
    }
    if (opens) {
        if (ph->open++ == 0)
            ph->opened_order = ++p->phase_openings;
    } else if (ph->open > 0) {
        ph->open--;
    }
}

/* ---- opening and polling ---- */

int vt_follow_process_open(const char *path, struct vt_follow_process **out, struct vt_read_error *err)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0)
        return 1; /* just made by its writer: nothing to tell yet */
    struct vt_follow_process *p = calloc(1, sizeof *p);
    if (!p || !(p->path = strdup(path))) {
        free(p);
        snprintf(err->message, sizeof err->message, "%s: out of memory", path);
        return -1;
    }
    if (vt_reader_open(path, &p->reader, err) != 0) {
        free(p->path);
        free(p);
        return -1;
    }
    vt_reader_lean(p->reader); /* many followed at once: no compressed copy kept */
    vt_replay_init(&p->replay, p->reader);
    p->replay.on_live = on_live;
    p->replay.on_live_ctx = p;
    p->replay.on_range = on_range;
    p->replay.on_range_ctx = p;
    p->rank = p->local_rank = -1;
    *out = p;
    return 0;
}

void vt_follow_process_free(struct vt_follow_process *p)
{
    if (!p)
        return;
    vt_replay_free(&p->replay);
    vt_reader_close(p->reader);
    free(p->phases);
    free(p->path);
    free(p);
}

static void take_process(struct vt_follow_process *p, const struct vt_process_info *info)
{
    p->info = info;
    p->rank = vt_process_rank(info);
    p->local_rank = vt_process_local_rank(info);
    p->session = vt_process_session(info);
    vt_follow_command(info, p->command, sizeof p->command);
}

/* A process of this host without a trailer: gone, or a zombie no one
 * reaped yet (it runs no more either). */
static bool pid_gone(uint64_t pid)
{
    if (pid == 0 || pid > (uint64_t)INT32_MAX)
        return false;
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return true;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%llu/stat", (unsigned long long)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *close_paren = strrchr(buf, ')'); /* the state follows the command's name */
    return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

bool vt_follow_process_poll(struct vt_follow_process *p, const char *this_host, uint64_t max)
{
    if (p->broken)
        return false;
    int rc = vt_reader_follow(p->reader);
    struct vt_replay_mem batch[POLL_BATCH];
    struct vt_record rec;
    for (uint64_t read = 0; rc > 0 && (!max || read < max); read++) {
        int n = max ? 0 : vt_reader_next_mem_events(p->reader, batch, POLL_BATCH);
        if (n > 0) {
            vt_replay_feed_mem_events(&p->replay, batch, (size_t)n);
            p->records += (uint64_t)n;
            continue;
        }
        rc = vt_reader_next(p->reader, &rec);
        if (rc <= 0)
            break;
        p->records++;
        if (rec.type == VT_REC_PROCESS && !p->info)
            take_process(p, rec.u.process);
        vt_replay_feed(&p->replay, &rec);
    }
    if (rc < 0) {
        p->broken = true;
        snprintf(p->error, sizeof p->error, "%s", vt_reader_error(p->reader)->message);
        return false;
    }
    if (vt_reader_has_trailer(p->reader))
        p->exited = true;
    else if (p->info && this_host && p->info->hostname && !strcmp(p->info->hostname, this_host) &&
             pid_gone(p->info->pid))
        p->exited = true;
    return true;
}

/* ---- what the view shows ---- */

const char *vt_follow_process_phase(const struct vt_follow_process *p)
{
    const struct vt_follow_phase *inner = NULL;
    for (size_t i = 0; i < p->nphases; i++)
        if (p->phases[i].open && (!inner || p->phases[i].opened_order > inner->opened_order))
            inner = &p->phases[i];
    return inner ? vt_reader_string(p->reader, inner->name) : NULL;
}

struct vt_follow_growth vt_follow_process_growth(const struct vt_follow_process *p)
{
    struct vt_follow_growth best = {0};
    for (size_t k = 0; k < p->replay.nledgers; k++) {
        const struct vt_ledger *l = &p->replay.ledgers[k];
        if (l->category != VT_CAT_DEVICE)
            continue;
        for (size_t i = 0; i < l->nphases; i++) {
            const struct vt_phase_peak *ph = &l->phases[i];
            best.repeated |= ph->growth.closings > VT_GROWTH_MIN_RISES;
            struct vt_growth_result g;
            if (vt_growth_of(&ph->growth, &g) &&
                (!best.grows || g.per_opening > best.result.per_opening)) {
                best.grows = true;
                best.ledger = l;
                best.phase = ph;
                best.result = g;
            }
        }
    }
    return best;
}

size_t vt_follow_process_failures(const struct vt_follow_process *p, struct vt_oom *first,
                                  struct vt_oom *last)
{
    size_t failed = 0;
    const struct vt_oom *earliest = NULL, *latest = NULL;
    for (size_t k = 0; k < p->replay.nledgers; k++) {
        const struct vt_ledger *l = &p->replay.ledgers[k];
        if (l->category != VT_CAT_DEVICE)
            continue;
        for (size_t m = 0, end; m < l->nooms; m = end) {
            end = vt_oom_request_end(l, m);
            if (!vt_oom_request_failed(l, m))
                continue;
            failed++;
            if (!earliest || l->ooms[m].time_ns < earliest->time_ns)
                earliest = &l->ooms[m];
            if (!latest || l->ooms[m].time_ns >= latest->time_ns)
                latest = &l->ooms[m];
        }
    }
    /* diagnosed with what followed them so far */
    if (first && earliest) {
        *first = *earliest;
        vt_oom_diagnose(first);
    }
    if (last && latest) {
        *last = *latest;
        vt_oom_diagnose(last);
    }
    return failed;
}

uint64_t vt_follow_process_wall_ns(const struct vt_follow_process *p, uint64_t mono_ns)
{
    if (!p->info || !p->info->start_realtime_ns)
        return 0;
    return mono_ns - p->info->start_mono_ns + p->info->start_realtime_ns;
}
