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
#include "pair_map.h"

#define VT_EXIT_DEVICES 64 /* device ordinals counted (0..63; more: not shown) */
#define VT_REFS_KEY 0x100  /* added to a kind: the key of its refs and device */

static struct {
    bool say;                   /* decided at start (and cleared in a fork child) */
    bool parent_checked;        /* at the first record: is the parent traced? */
    struct vt_pair_map live;    /* (kind, addr) -> size; (kind + VT_REFS_KEY, addr) -> device << 32 | refs */
    uint64_t now[VT_EXIT_DEVICES], peak[VT_EXIT_DEVICES];
    bool used[VT_EXIT_DEVICES];
    uint64_t failed;            /* allocation calls that failed */
    bool out_of_memory;
} X;

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
    X.say = !quiet && isatty(2) && !(session && *session);
    vt_pair_map_init(&X.live);
}

void vt_exit_line_after_fork_child(void)
{
    X.say = false;
}

static void change(int64_t device, int64_t delta)
{
    if (device < 0 || device >= VT_EXIT_DEVICES)
        return;
    X.used[device] = true;
    X.now[device] += (uint64_t)delta;
    if (X.now[device] > X.peak[device])
        X.peak[device] = X.now[device];
}

/* The allocation at (kind, addr) ends, whatever its references. */
static void remove_live(uint8_t kind, uint64_t addr, uint64_t meta)
{
    uint64_t size = 0;
    vt_pair_map_remove(&X.live, kind + VT_REFS_KEY, addr, NULL);
    vt_pair_map_remove(&X.live, kind, addr, &size);
    change((int32_t)(meta >> 32), -(int64_t)size);
}

/* A free of (kind, addr): its last reference ends it. False if none is live. */
static bool end_live(uint8_t kind, uint64_t addr)
{
    uint64_t *meta = vt_pair_map_get(&X.live, kind + VT_REFS_KEY, addr);
    if (!meta)
        return false;
    if ((*meta & 0xffffffffu) > 1)
        --*meta; /* another reference remains */
    else
        remove_live(kind, addr, *meta);
    return true;
}

/* The report's live-set rule for device memory (analyzer/replay/replay.c):
 * a failed call changes nothing, an allocation at a live key of size 0 is
 * one more reference and otherwise replaces it, a free ends its own kind's
 * entry or else another device kind's at that address. */
void vt_exit_line_note(const struct vt_mem_record *r)
{
    if (!X.say)
        return;
    if (!X.parent_checked) {
        X.parent_checked = true;
        if (parent_traced()) {
            X.say = false;
            return;
        }
    }
    if (vt_kind_category(r->kind) != VT_CAT_DEVICE)
        return;
    if (r->op == VT_OP_FREE) {
        if (r->result != 0 || end_live(r->kind, r->addr))
            return;
        for (unsigned k = 1; k < VT_KIND_COUNT_; k++)
            if (k != r->kind && vt_kind_category(k) == VT_CAT_DEVICE && end_live((uint8_t)k, r->addr))
                return;
        return;
    }
    if (r->result != 0) {
        X.failed++;
        return;
    }
    uint64_t *meta = vt_pair_map_get(&X.live, r->kind + VT_REFS_KEY, r->addr);
    if (meta && r->size == 0) {
        ++*meta; /* a retained handle */
        return;
    }
    if (meta)
        remove_live(r->kind, r->addr, *meta); /* replaced: a free the tracer did not see */
    if (!vt_pair_map_put(&X.live, r->kind, r->addr, r->size) ||
        !vt_pair_map_put(&X.live, r->kind + VT_REFS_KEY, r->addr,
                         (uint64_t)(uint32_t)r->device << 32 | 1)) {
        X.out_of_memory = true;
        X.say = false; /* a figure it cannot stand by is not said */
        return;
    }
    change(r->device, (int64_t)r->size);
}

void vt_exit_line_say(const char *trace_path)
{
    /* A process that allocated nothing has no trace (the writer removed
     * the file it had not started). */
    if (!X.say || !trace_path || !*trace_path || access(trace_path, F_OK) != 0)
        return;
    X.say = false; /* once */
    char line[2048], b[32];
    size_t n = (size_t)snprintf(line, sizeof line, "vramtrace: trace %s", trace_path);
    bool any = false;
    for (int d = 0; d < VT_EXIT_DEVICES && n < sizeof line; d++)
        if (X.used[d]) {
            n += (size_t)snprintf(line + n, sizeof line - n, "%s device %d peak %s",
                                  any ? ";" : ":", d, vt_format_bytes(X.peak[d], b, sizeof b));
            any = true;
        }
    if (!any && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, ": no GPU memory allocated");
    if (X.failed && n < sizeof line)
        n += (size_t)snprintf(line + n, sizeof line - n, "; %" PRIu64 " allocation call%s failed",
                              X.failed, X.failed == 1 ? "" : "s");
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
