/* The traces `vramtrace top` follows; see follow_view.h. */
#define _GNU_SOURCE /* asprintf, strdup */
#include "follow_view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grow_array.h"
#include "input_files.h"

bool vt_follow_view_init(struct vt_follow_view *v, char *const *sources, size_t n, const char *session)
{
    memset(v, 0, sizeof *v);
    if (gethostname(v->this_host, sizeof v->this_host - 1) != 0)
        v->this_host[0] = '\0';
    v->sources = calloc(n + 1, sizeof *v->sources);
    if (!v->sources)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!(v->sources[v->nsources++] = strdup(sources[i])))
            return false;
        size_t len = strlen(v->sources[i]); /* "traces/" names its files "traces/x" */
        while (len > 1 && v->sources[i][len - 1] == '/')
            v->sources[i][--len] = '\0';
    }
    return !session || (v->session = strdup(session)) != NULL;
}

void vt_follow_view_free(struct vt_follow_view *v)
{
    for (size_t i = 0; i < v->nsources; i++)
        free(v->sources[i]);
    free(v->sources);
    free(v->session);
    for (size_t i = 0; i < v->nfiles; i++) {
        free(v->files[i].path);
        vt_follow_process_free(v->files[i].process);
    }
    free(v->files);
    free(v->processes);
    for (size_t i = 0; i < v->nnotes; i++)
        free(v->notes[i]);
    free(v->notes);
    memset(v, 0, sizeof *v);
}

static bool note(struct vt_follow_view *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool note(struct vt_follow_view *v, const char *fmt, ...)
{
    if (v->nnotes == VT_FOLLOW_NOTE_MAX)
        return true; /* a directory of junk: the first ones say enough */
    if (!vt_grow_array((void **)&v->notes, &v->notes_cap, v->nnotes + 1, sizeof *v->notes))
        return false;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = k >= 0 ? malloc((size_t)k + 1) : NULL;
    if (!s)
        return false;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)k + 1, fmt, ap);
    va_end(ap);
    v->notes[v->nnotes++] = s;
    return true;
}

static bool known(const struct vt_follow_view *v, const char *path)
{
    for (size_t i = 0; i < v->nfiles; i++) /* tens of files, once a refresh */
        if (!strcmp(v->files[i].path, path))
            return true;
    return false;
}

/* The files the sources stand for now; new ones join as pending. */
static bool look_for_files(struct vt_follow_view *v)
{
    static const char *const suffixes[] = {".vtrace", NULL};
    struct vt_input_files found = {0};
    bool ok = true;
    for (size_t i = 0; ok && i < v->nsources; i++) {
        struct stat st;
        if (stat(v->sources[i], &st) == 0 && S_ISDIR(st.st_mode))
            ok = vt_input_files_below(&found, v->sources[i], suffixes, NULL);
        else
            ok = vt_input_files_take(&found, strdup(v->sources[i]));
    }
    for (size_t i = 0; ok && i < found.n; i++) {
        if (known(v, found.paths[i]))
            continue;
        ok = vt_grow_array((void **)&v->files, &v->files_cap, v->nfiles + 1, sizeof *v->files);
        if (ok) {
            v->files[v->nfiles++] = (struct vt_follow_file){found.paths[i], VT_FOLLOW_FILE_PENDING, NULL};
            found.paths[i] = NULL;
        }
    }
    vt_input_files_free(&found);
    return ok;
}

static bool skip(struct vt_follow_file *f)
{
    f->state = VT_FOLLOW_FILE_SKIPPED;
    vt_follow_process_free(f->process);
    f->process = NULL;
    return true;
}

/* A pending file: opened if it has become a trace; a process of the view
 * once its process record says whose it is. */
static bool look_at(struct vt_follow_view *v, struct vt_follow_file *f)
{
    if (!f->process) {
        struct stat st;
        if (stat(f->path, &st) != 0)
            return true; /* not there (yet): a source named before its file exists */
        struct vt_read_error err;
        int rc = vt_follow_process_open(f->path, &f->process, &err);
        if (rc > 0)
            return true;
        if (rc < 0)
            return note(v, "%s; skipped", err.message) && skip(f);
    }
    struct vt_follow_process *p = f->process;
    if (!p->info && !vt_follow_process_poll(p, v->this_host, 1))
        return note(v, "%s; skipped", p->error) && skip(f);
    if (!p->info)
        return true; /* its process record is still on its way */
    /* Another session's trace in the same directory (an earlier run) is
     * not this view's business: left alone, unread. */
    if (v->session && (!p->session || strcmp(p->session, v->session) != 0))
        return skip(f);
    if (!vt_grow_array((void **)&v->processes, &v->processes_cap, v->nprocesses + 1,
                       sizeof *v->processes))
        return false;
    v->processes[v->nprocesses++] = p;
    f->state = VT_FOLLOW_FILE_FOLLOWED;
    if (!vt_follow_process_poll(p, v->this_host, 0))
        return note(v, "%s; what came before is shown", p->error);
    return true;
}

bool vt_follow_view_refresh(struct vt_follow_view *v)
{
    v->refreshes++;
    if (!look_for_files(v))
        return false;
    for (size_t i = 0; i < v->nfiles; i++) {
        struct vt_follow_file *f = &v->files[i];
        if (f->state == VT_FOLLOW_FILE_PENDING) {
            if (!look_at(v, f))
                return false;
        } else if (f->state == VT_FOLLOW_FILE_FOLLOWED && !f->process->broken) {
            if (!vt_follow_process_poll(f->process, v->this_host, 0) &&
                !note(v, "%s; what came before is shown", f->process->error))
                return false;
        }
    }
    return true;
}

/* ---- order ---- */

struct sort_ctx {
    const struct vt_follow_view *v;
    enum vt_follow_sort key;
};
static struct sort_ctx sorting; /* qsort has no context argument */

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b ? 1 : 0;
}

static int by_rank(const struct vt_follow_process *a, const struct vt_follow_process *b)
{
    if (a->rank != b->rank)
        return a->rank < 0 ? 1 : b->rank < 0 ? -1 : a->rank < b->rank ? -1 : 1;
    uint64_t pa = a->info->pid, pb = b->info->pid;
    return pa < pb ? -1 : pa > pb ? 1 : strcmp(a->path, b->path);
}

static int by_key(const void *x, const void *y)
{
    const struct vt_follow_process *a = sorting.v->processes[*(const size_t *)x];
    const struct vt_follow_process *b = sorting.v->processes[*(const size_t *)y];
    int c = 0;
    switch (sorting.key) {
    case VT_FOLLOW_SORT_NOW:
        c = cmp_u64_desc(a->exited ? 0 : a->device_bytes, b->exited ? 0 : b->device_bytes);
        break;
    case VT_FOLLOW_SORT_PEAK:
        c = cmp_u64_desc(a->peak_bytes, b->peak_bytes);
        break;
    case VT_FOLLOW_SORT_GROWTH:
        c = cmp_u64_desc(vt_follow_process_growth(a).result.per_opening,
                         vt_follow_process_growth(b).result.per_opening);
        break;
    case VT_FOLLOW_SORT_RANK:
        break;
    }
    return c ? c : by_rank(a, b);
}

void vt_follow_view_order(const struct vt_follow_view *v, enum vt_follow_sort key, size_t *order)
{
    for (size_t i = 0; i < v->nprocesses; i++)
        order[i] = i;
    sorting = (struct sort_ctx){v, key};
    qsort(order, v->nprocesses, sizeof *order, by_key);
}

/* ---- GPUs ---- */

static bool same_gpu(const struct vt_follow_gpu *g, const struct vt_follow_process *p,
                     const struct vt_device_info *d, int64_t device)
{
    const char *host = p->info->hostname ? p->info->hostname : "";
    if (strcmp(g->host, host) != 0)
        return false;
    if (d && g->has_uuid)
        return !memcmp(g->uuid, d->uuid, VT_UUID_SIZE);
    return !d && !g->has_uuid && g->ordinal == device;
}

long vt_follow_view_gpu_of(const struct vt_follow_gpu *gpus, size_t n, const struct vt_follow_process *p,
                           int64_t device)
{
    const struct vt_device_info *d =
        device >= 0 ? vt_reader_device(p->reader, (uint64_t)device) : NULL;
    for (size_t g = 0; g < n; g++)
        if (same_gpu(&gpus[g], p, d, device))
            return (long)g;
    return -1;
}

size_t vt_follow_view_gpus(const struct vt_follow_view *v, struct vt_follow_gpu *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        const struct vt_follow_process *p = v->processes[i];
        for (size_t k = 0; k < p->replay.nledgers; k++) {
            const struct vt_ledger *l = &p->replay.ledgers[k];
            if (l->category != VT_CAT_DEVICE)
                continue;
            long g = vt_follow_view_gpu_of(out, n, p, l->device);
            if (g < 0) {
                if (n == max)
                    continue;
                const struct vt_device_info *d =
                    l->device >= 0 ? vt_reader_device(p->reader, (uint64_t)l->device) : NULL;
                out[n] = (struct vt_follow_gpu){
                    .host = p->info->hostname ? p->info->hostname : "",
                    .has_uuid = d != NULL,
                    .ordinal = l->device,
                    .name = d ? d->name : NULL,
                    .capacity = d ? d->total_bytes : 0,
                };
                if (d)
                    memcpy(out[n].uuid, d->uuid, VT_UUID_SIZE);
                g = (long)n++;
            }
            out[g].processes++;
            if (!p->exited) { /* an exited process's memory went back to the driver */
                out[g].running++;
                out[g].bytes += l->sites.total_bytes;
            }
        }
    }
    return n;
}

bool vt_follow_view_first_failure(const struct vt_follow_view *v, size_t *process, struct vt_oom *oom)
{
    bool found = false;
    uint64_t when = 0;
    for (size_t i = 0; i < v->nprocesses; i++) {
        struct vt_oom o;
        if (!vt_follow_process_failures(v->processes[i], &o, NULL))
            continue;
        uint64_t w = vt_follow_process_wall_ns(v->processes[i], o.time_ns);
        if (!found || w < when) {
            found = true;
            when = w;
            *process = i;
            *oom = o;
        }
    }
    return found;
}
