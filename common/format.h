/*
 * How vramtrace writes numbers for people, the same in every report and
 * command and in the tracer's line at exit.
 */
#ifndef VRAMTRACE_COMMON_FORMAT_H
#define VRAMTRACE_COMMON_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/trace_format.h"

/* "12.34 GiB", "512.00 MiB", "4.00 KiB", "17 B" (binary units; two
 * decimals, a half rounded away from zero: 11.625 GiB is "11.63 GiB"). */
const char *vt_format_bytes(uint64_t bytes, char *buf, size_t n);
/* "+0.002s", "-1.250s": nanoseconds as signed seconds, three decimals, a
 * half rounded away from zero. */
const char *vt_format_seconds(int64_t ns, char *buf, size_t n);
/* A rank as people read it: "3", or "-" when the launcher did not say (< 0). */
const char *vt_format_rank(long rank, char *buf, size_t n);
/* Device UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi's form). */
const char *vt_format_uuid(const uint8_t uuid[VT_UUID_SIZE], char *buf, size_t n);

#endif
