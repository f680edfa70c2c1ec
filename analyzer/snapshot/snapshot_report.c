/* The snapshot report's entry point and the helpers both renderers use. */
#include "snapshot_report.h"

#include <string.h>

bool vt_snap_device_selected(const struct vt_report_options *opt, const struct vt_snap_device *d)
{
    return !opt->has_device || opt->device == d->device;
}

size_t vt_snap_explaining_frames(const struct pk_value *frames, vt_snap_frame_fn fn, void *ctx)
{
    size_t n = vt_snap_frame_count(frames), shown = 0;
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (vt_snap_frame(frames, i, &file, &name, &line) && vt_snap_frame_is_python(file)) {
            fn(ctx, file, name, line);
            shown++;
        }
    }
    if (shown)
        return shown;
    for (size_t i = 0; i < n; i++) {
        const char *file, *name;
        int64_t line;
        if (vt_snap_frame(frames, i, &file, &name, &line) &&
            (strstr(name, "Backward") || !strncmp(name, "at::_ops::", 10))) {
            fn(ctx, file, name, line);
            return 1;
        }
    }
    return 0;
}

int vt_snap_report(const char *path, const struct vt_report_options *opt, bool json,
                       FILE *out, FILE *err)
{
    struct vt_snap_analysis a;
    char msg[512];
    int status = vt_snap_analysis_run(&a, path, msg, sizeof msg);
    if (status) {
        fprintf(err, "vramtrace: %s\n", msg);
    } else {
        status = json ? vt_snap_report_json(&a, opt, out) : vt_snap_report_text(&a, opt, out);
        for (size_t k = 0; k < a.ndevices; k++)
            if (a.devices[k].tl.inconsistencies)
                fprintf(err,
                        "vramtrace: %s: device %lld: %zu trace entries disagree with the final "
                        "state (figures around them are approximate)\n",
                        path, (long long)a.devices[k].device, a.devices[k].tl.inconsistencies);
    }
    vt_snap_analysis_free(&a);
    return status;
}
