/* The export formats by name; see export.h. */
#include "export.h"

#include <string.h>

static const struct {
    const char *name, *help;
    vt_export_fn fn;
} formats[] = {
#define AS_ROW(id, name, fn, help) {name, help, fn},
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

int vt_export(enum vt_export_format f, char *const *traces, size_t n,
              const struct vt_export_options *opt, FILE *out, FILE *err)
{
    return formats[f].fn(traces, n, opt, out, err);
}
