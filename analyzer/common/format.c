#include "format.h"

#include <inttypes.h>
#include <stdio.h>

const char *vt_format_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, n, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    unsigned u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, n, "%.2f %s", v, units[u]);
    return buf;
}

const char *vt_format_uuid(const uint8_t u[VT_UUID_SIZE], char *buf, size_t n)
{
    snprintf(buf, n,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
             u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
    return buf;
}
