/* `vramtrace report SNAPSHOT.pickle`: the snapshot report in text or JSON
 * (docs/SNAPSHOTS.md). */
#ifndef VRAMTRACE_SNAPSHOT_SNAPSHOT_REPORT_H
#define VRAMTRACE_SNAPSHOT_SNAPSHOT_REPORT_H

#include <stdio.h>

#include "report.h"
#include "snapshot_analysis.h"

/* Analyses path and prints the report. Returns 0, or 2 (message on err). */
int vt_snap_report(const char *path, const struct vt_report_options *opt, bool json,
                       FILE *out, FILE *err);

int vt_snap_report_text(const struct vt_snap_analysis *a, const struct vt_report_options *opt,
                            FILE *out);
int vt_snap_report_json(const struct vt_snap_analysis *a, const struct vt_report_options *opt,
                            FILE *out);

/* Helpers shared by both renderers. */
bool vt_snap_device_selected(const struct vt_report_options *opt, const struct vt_snap_device *d);
/* The frames that explain an allocation: its Python frames, innermost
 * first (fn called for each; returns how many). Without any, the
 * autograd node or operator frame that allocated. */
typedef void (*vt_snap_frame_fn)(void *ctx, const char *file, const char *name, int64_t line);
size_t vt_snap_explaining_frames(const struct pk_value *frames, vt_snap_frame_fn fn, void *ctx);

#endif
