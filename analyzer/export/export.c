/* The export formats by name; see export.h. */
#include "export.h"

#include <stdlib.h>
#include <string.h>

#include "run_traces.h"

static const struct {
    const char *name, *help;
    void *(*plan)(char *const *traces, size_t n, const struct vt_export_options *opt,
                  struct vt_run_observers *obs, FILE **said, FILE *err);
    int (*write)(void *state, const struct vt_run_result *run, FILE *out, FILE *err);
    void (*free)(void *state);
} formats[] = {
#define AS_ROW(id, name, fn, help) {name, help, fn##_plan, fn##_write, fn##_free},
    VT_EXPORT_FORMATS(AS_ROW)
#undef AS_ROW
};

bool vt_export_format_parse(const char *s, enum vt_export_format *out)
{
    for (int f = 0; f < VT_EXPORT_FORMAT_COUNT_; f++)
        if (!strcmp(s, formats[f].name)) {
            *out = (enum vt_export_format)f;
            return true;
        }
    return false;
}

const char *vt_export_format_name(enum vt_export_format f)
{
    return formats[f].name;
}

const char *vt_export_format_help(enum vt_export_format f)
{
    return formats[f].help;
}

struct vt_export {
    enum vt_export_format format;
    void *state;
};

struct vt_export *vt_export_plan(enum vt_export_format f, char *const *traces, size_t n,
                                 const struct vt_export_options *opt,
                                 struct vt_run_observers *obs, FILE **said, FILE *err)
{
    struct vt_export *x = malloc(sizeof *x);
    if (!x) {
        fputs("vramtrace export: out of memory\n", err);
        return NULL;
    }
    *said = err;
    x->format = f;
    x->state = formats[f].plan(traces, n, opt, obs, said, err);
    if (!x->state) {
        free(x);
        return NULL;
    }
    return x;
}

int vt_export_write(struct vt_export *x, const struct vt_run_result *run, FILE *out, FILE *err)
{
    return formats[x->format].write(x->state, run, out, err);
}

void vt_export_free(struct vt_export *x)
{
    if (x)
        formats[x->format].free(x->state);
    free(x);
}

bool vt_export_read_all(const struct vt_run_result *run, char *const *traces, size_t n)
{
    bool ok = run->status == 0 && !run->unread && run->a.ninputs == n;
    for (size_t i = 0; ok && i < n; i++)
        ok = !strcmp(run->a.inputs[i].path, traces[i]);
    return ok;
}
