#define _GNU_SOURCE /* dladdr */
#include "exit_line.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "live_rule.h"

#define VT_EXIT_DEVICES 64   /* device ordinals counted (0..63; more: not shown) */
#define VT_EXIT_UNCOUNTED 255 /* an entry's ledger when its device is not counted */

static struct {
    bool say;                   /* decided at start (and cleared in a fork child) */
    bool parent_checked;        /* at the first record: is the parent traced? */
    struct vt_live_rule live;   /* the report's live set; an entry's ledger: its device */
    uint64_t now[VT_EXIT_DEVICES], peak[VT_EXIT_DEVICES];
    bool used[VT_EXIT_DEVICES];
    uint64_t failed;            /* allocation calls that failed */
} tally;

/* Whether the parent process has this library loaded: then this process
 * is a worker of a traced program, which speaks for the job. */
static bool parent_traced(void)
{
    Dl_info info;
    if (!dladdr((const void *)(uintptr_t)vt_exit_line_init, &info) || !info.dli_fname)
        return false;
    const char *self = strrchr(info.dli_fname, '/');
    self = self ? self + 1 : info.dli_fname;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/maps", (long)getppid());
    FILE *f = fopen(path, "re");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        const char *name = strrchr(line, '/');
        if (name && !strncmp(name + 1, self, strlen(self)) && name[1 + strlen(self)] == '\n')
            found = true;
    }
    fclose(f);
    return found;
}

void vt_exit_line_init(bool quiet)
{
    const char *session = getenv("VRAMTRACE_SESSION");
    /* The parent is looked at once the process traces (its first record):
     * a shell or `timeout` that never uses CUDA reads nothing. */
    tally.say = !quiet && isatty(2) && !(session && *session);
    vt_live_rule_init(&tally.live);
}

void vt_exit_line_after_fork_child(void)
{
    tally.say = false;
}

/* A device's total and its largest (the report's peak of that device's
 * ledger). */
static void change(uint8_t device, int64_t delta)
{
    if (device >= VT_EXIT_DEVICES)
        return;
    tally.used[device] = true;
    tally.now[device] += (uint64_t)delta;
    if (tally.now[device] > tally.peak[device])
        tally.peak[device] = tally.now[device];
}

/* Nothing said rather than a figure it cannot stand by. */
static void out_of_memory(void)
{
    tally.say = false;
    vt_live_rule_free(&tally.live);
}

/* Device memory by the report's live-set rule (live_rule.h, the same code
 * the analyzer's replay runs): what ends, ends in its own device's total. */
void vt_exit_line_note(const struct vt_mem_record *r)
{
    if (!tally.say)
        return;
    if (!tally.parent_checked) {
        tally.parent_checked = true;
        if (parent_traced()) {
            tally.say = false;
            return;
        }
    }
    struct vt_live ended;
    if (r->kind == VT_KIND_VA_MAP) { /* a mapping holds a VMM handle's memory */
        bool oom = false;
        if (vt_live_rule_map(&tally.live, r->op, r->addr, r->aux, r->result, &ended, &oom))
            change(ended.ledger, -(int64_t)ended.size);
        if (oom)
            out_of_memory();
        return;
    }
    if (vt_kind_category(r->kind) != VT_CAT_DEVICE)
        return;
    if (r->op == VT_OP_FREE) {
        if (vt_live_rule_free_event(&tally.live, r->kind, r->addr, r->result, &ended) ==
            VT_LIVE_FREE_ENDED)
            change(ended.ledger, -(int64_t)ended.size);
        return;
    }
    struct vt_live *e = NULL;
    switch (vt_live_rule_alloc(&tally.live, r->kind, r->addr, r->size, r->result, &e)) {
    case VT_LIVE_RETAINED: return;
    case VT_LIVE_FAILED: tally.failed++; return;
    case VT_LIVE_TAKES: break;
    }
    bool replaced;
    if (!(e = vt_live_rule_take(&tally.live, e, r->kind, r->addr, r->size, &replaced, &ended))) {
        out_of_memory();
        return;
    }
    if (replaced) /* a free the tracer did not see */
        change(ended.ledger, -(int64_t)ended.size);
    e->ledger = r->device >= 0 && r->device < VT_EXIT_DEVICES ? (uint8_t)r->device
                                                               : VT_EXIT_UNCOUNTED;
    change(e->ledger, (int64_t)r->size);
}

void vt_exit_line_say(const char *trace_path)
{
    /* A process that allocated nothing has no trace (the writer removed
     * the file it had not started). */
    if (!tally.say || !trace_path || !*trace_path || access(trace_path, F_OK) != 0)
        return;
    tally.say = false; /* once */
    char line[2048], b[32];
    size_t n = (size_t)snprintf(line, sizeof line, "vramtrace: trace %s", trace_path);
    bool any = false;
    for (int d = 0; d < VT_EXIT_DEVICES && n < sizeof line; d++)
        if (tally.used[d]) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%s device %d peak %s",
                                  any ? ";" : ":", d, vt_format_bytes(tally.peak[d], b, sizeof b));
            any = true;
        }
    if (!any && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ": no GPU memory allocated");
    if (tally.failed && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "; %" PRIu64 " allocation call%s failed",
                              tally.failed, tally.failed == 1 ? "" : "s");
    if (n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "; read it: vramtrace report %s\n",
                              trace_path);
    if (n >= sizeof line)
        return; /* a path too long for one line: nothing rather than half */
    /* One write, errno as it was: the program's own stderr is not touched
     * otherwise. */
    int saved = errno;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(2, line + off, n - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    errno = saved;
}
