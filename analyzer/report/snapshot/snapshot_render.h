/* The two renderers of a snapshot analysis (snapshot_report_text.c,
 * snapshot_report_json.c) and what both use; report_document.c picks one. */
#ifndef VRAMTRACE_REPORT_SNAPSHOT_RENDER_H
#define VRAMTRACE_REPORT_SNAPSHOT_RENDER_H

#include <stdbool.h>
#include <stdio.h>

#include "json_writer.h"
#include "report.h"
#include "snapshot_analysis.h"

int vt_snap_report_text(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                        const struct vt_report_layout *layout, FILE *out);
/* The frames that explain an allocation (Python first, torch's own left
 * out), fitted to the line; --full-stacks: every frame recorded. */
void vt_snap_print_where(FILE *out, const struct vt_pickle_value *frames,
                         const struct vt_report_layout *layout);
/* "frames": the frames that explain an allocation, as JSON objects
 * (function, file, line); also the report's allocator_view (report_torch.c). */
void vt_snap_frames_json(struct vt_json *j, const struct vt_pickle_value *frames);
/* One snapshot as an object of the report's "snapshots" array. */
void vt_snap_report_json_object(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                                const struct vt_report_layout *layout, struct vt_json *j);

/* False, with what the snapshot has on err, when --device selects none of
 * its devices (report_filters.c). */
bool vt_snap_filters_match(const struct vt_snap_analysis *a, const struct vt_report_selection *select,
                           FILE *err);

/* Whether --device selects this device of the snapshot. */
static inline bool vt_snap_device_selected(const struct vt_report_selection *select,
                                           const struct vt_snap_device *d)
{
    return !select->has_device || select->device == d->device;
}

#endif
