/*
 * Filters that select nothing are mistakes - a pid from another run, a
 * device the job never used, a misspelt phase - and an empty report would
 * hide them. Each is said with what does exist:
 *   vramtrace report: no pid 123; pids: 5678, 5679
 * (--rank: the ranks the launchers gave, RANK and its kin, analysis.h).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "snapshot_analysis.h"
#include "terminal_text.h"

#define LIST_MAX 24 /* values listed; past that the list ends with "..." */

/* Distinct values in the order first seen. */
struct seen {
    char items[LIST_MAX][64];
    size_t n;
    bool more;
    char text[LIST_MAX * 66 + 8];
};

static void seen_add(struct seen *s, const char *item)
{
    for (size_t k = 0; k < s->n; k++)
        if (!strncmp(s->items[k], item, sizeof s->items[k] - 1))
            return;
    if (s->n == LIST_MAX) {
        s->more = true;
        return;
    }
    snprintf(s->items[s->n++], sizeof s->items[0], "%s", item);
}

/* "a, b, c", or "none". */
static const char *seen_list(struct seen *s)
{
    size_t len = 0;
    s->text[0] = '\0';
    for (size_t k = 0; k < s->n; k++)
        len += (size_t)snprintf(s->text + len, sizeof s->text - len, "%s%s", k ? ", " : "",
                                s->items[k]);
    if (s->more)
        snprintf(s->text + len, sizeof s->text - len, ", ...");
    return s->n ? s->text : "none";
}

bool vt_report_filters_match(const struct vt_report *rep, FILE *err)
{
    const struct vt_report_options *opt = rep->opt;
    const struct vt_analysis *a = rep->a;
    char buf[64];
    if (opt->select.has_pid) {
        struct seen pids = {0};
        bool hit = false;
        for (size_t i = 0; i < a->ninputs; i++) {
            const struct vt_process_info *p = vt_input_process(&a->inputs[i]);
            if (!p)
                continue;
            snprintf(buf, sizeof buf, "%" PRIu64, p->pid);
            seen_add(&pids, buf);
            hit |= p->pid == opt->select.pid;
        }
        if (!hit) {
            fprintf(err, "vramtrace report: no pid %" PRIu64 "; pids: %s\n", opt->select.pid,
                    seen_list(&pids));
            return false;
        }
    }
    if (opt->select.has_rank) {
        struct seen ranks = {0};
        bool hit = false;
        for (size_t i = 0; i < a->ninputs; i++) {
            long rank = vt_report_rank(rep, i);
            if (rank < 0)
                continue;
            snprintf(buf, sizeof buf, "%ld", rank);
            seen_add(&ranks, buf);
            hit |= (uint64_t)rank == opt->select.rank;
        }
        if (!hit) {
            fprintf(err, "vramtrace report: no rank %" PRIu64 "; ranks: %s\n", opt->select.rank,
                    seen_list(&ranks));
            return false;
        }
    }
    if (opt->select.has_device) {
        struct seen devices = {0};
        bool hit = false;
        for (size_t i = 0; i < a->ninputs; i++) {
            if (!vt_report_input_selected(rep, i))
                continue;
            const struct vt_replay *rp = &a->inputs[i].replay;
            for (size_t k = 0; k < rp->nledgers; k++) {
                if (rp->ledgers[k].device < 0)
                    continue;
                snprintf(buf, sizeof buf, "%" PRId64, rp->ledgers[k].device);
                seen_add(&devices, buf);
                hit |= rp->ledgers[k].device == opt->select.device;
            }
        }
        if (!hit) {
            fprintf(err, "vramtrace report: no device %" PRId64 "; devices: %s\n", opt->select.device,
                    seen_list(&devices));
            return false;
        }
    }
    if (opt->select.phase) {
        struct seen phases = {0};
        bool hit = false;
        for (size_t i = 0; i < a->ninputs; i++) {
            if (!vt_report_input_selected(rep, i))
                continue;
            const struct vt_replay *rp = &a->inputs[i].replay;
            for (size_t k = 0; k < rp->nledgers; k++) {
                const struct vt_ledger *l = &rp->ledgers[k];
                if (!vt_report_ledger_selected(rep, l))
                    continue;
                for (size_t m = 0; m < l->nphases; m++) {
                    const char *name = vt_report_string(rep, i, l->phases[m].name);
                    if (!name)
                        continue;
                    seen_add(&phases, name);
                    hit |= !strcmp(name, opt->select.phase);
                }
            }
        }
        if (!hit) {
            fprintf(err, "vramtrace report: no phase \"%s\"; phases: ", opt->select.phase);
            vt_terminal_put(err, seen_list(&phases));
            fputc('\n', err);
            return false;
        }
    }
    if (opt->moment.at == VT_REPORT_AT_OOM) {
        /* --at oom:N: some process failed N times on the devices selected */
        uint64_t most = 0;
        for (size_t i = 0; i < a->ninputs; i++) {
            if (!vt_report_input_selected(rep, i))
                continue;
            uint64_t n = 0;
            const struct vt_replay *rp = &a->inputs[i].replay;
            for (size_t k = 0; k < rp->nledgers; k++)
                if (rp->ledgers[k].category == VT_CAT_DEVICE &&
                    vt_report_ledger_selected(rep, &rp->ledgers[k]))
                    n += rp->ledgers[k].nooms;
            most = n > most ? n : most;
        }
        if (most < opt->moment.oom) {
            if (most)
                fprintf(err, "vramtrace report: no failure %" PRIu64 "; the most of one process: %" PRIu64 "\n",
                        opt->moment.oom, most);
            else
                fprintf(err, "vramtrace report: no failure %" PRIu64 "; no allocation failed\n",
                        opt->moment.oom);
            return false;
        }
    }
    return true;
}

bool vt_snap_filters_match(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                           FILE *err)
{
    if (!select->has_device)
        return true;
    struct seen devices = {0};
    char buf[32];
    for (size_t k = 0; k < a->ndevices; k++) {
        if (a->devices[k].device == select->device)
            return true;
        snprintf(buf, sizeof buf, "%" PRId64, a->devices[k].device);
        seen_add(&devices, buf);
    }
    fprintf(err, "vramtrace report: %s: no device %" PRId64 "; devices: %s\n", a->snap.path,
            select->device, seen_list(&devices));
    return false;
}
