/*
 * How the analyzer writes numbers for people, the same in every report and
 * command.
 */
#ifndef VRAMTRACE_COMMON_FORMAT_H
#define VRAMTRACE_COMMON_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/trace_format.h"

/* "12.34 GiB", "512.00 MiB", "4.00 KiB", "17 B" (binary units). */
const char *vt_format_bytes(uint64_t bytes, char *buf, size_t n);
/* Device UUID as "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (nvidia-smi's form). */
const char *vt_format_uuid(const uint8_t uuid[VT_UUID_SIZE], char *buf, size_t n);

#endif
