/* `vramtrace report SNAPSHOT.pickle`: the snapshot report in text or JSON
 * (docs/SNAPSHOTS.md). */
#ifndef VRAMTRACE_REPORT_SNAPSHOT_REPORT_H
#define VRAMTRACE_REPORT_SNAPSHOT_REPORT_H

#include <stdio.h>

#include "report.h"

/* Analyses path and prints the report. Returns 0, or 2 (message on err). */
int vt_snap_report(const char *path, const struct vt_report_options *opt, bool json, FILE *out,
                   FILE *err);

#endif
