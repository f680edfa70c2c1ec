/* The snapshot report's entry point: analyse, then render as asked. */
#include "snapshot_report.h"

#include "snapshot_render.h"

int vt_snap_report(const char *path, const struct vt_report_options *opt, bool json, FILE *out,
                   FILE *err)
{
    struct vt_snap_analysis a;
    char msg[512];
    int status = vt_snap_analysis_run(&a, path, msg, sizeof msg);
    if (status) {
        fprintf(err, "vramtrace: %s\n", msg);
    } else if (!vt_snap_filters_match(&a, opt, err)) {
        status = 2;
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
