#include "format.h"

#include <inttypes.h>
#include <stdio.h>

/* Rounding: to two decimals, a half away from zero, on the exact value
 * (bytes / 1024^k, in integers): 12482248704 bytes, exactly 11.625 GiB, is
 * "11.63 GiB". printf's "%.2f" rounds such a tie to even ("11.62"), the
 * page's Number.toFixed(2) away from zero: the rule is the page's, so
 * every view writes the same figure. */
const char *vt_format_bytes(uint64_t bytes, char *buf, size_t n)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, n, "%" PRIu64 " B", bytes);
        return buf;
    }
    unsigned u = 0, shift = 10;
    while (u < 4 && bytes >> shift >= 1024) {
        u++;
        shift += 10;
    }
    uint64_t whole = bytes >> shift, rest = bytes & ((UINT64_C(1) << shift) - 1);
    /* rest < 2^50, so rest * 100 fits; whole * 100 < 2^64 as whole < 2^14 at PiB */
    uint64_t hundredths = whole * 100 + ((rest * 100 + (UINT64_C(1) << (shift - 1))) >> shift);
    snprintf(buf, n, "%" PRIu64 ".%02" PRIu64 " %s", hundredths / 100, hundredths % 100, units[u]);
    return buf;
}

/* Signed seconds with three decimals from nanoseconds ("+0.002s",
 * "-1.250s"), rounded a half away from zero on the exact count, as the
 * page's fmtNs does. */
const char *vt_format_seconds(int64_t ns, char *buf, size_t n)
{
    uint64_t a = ns < 0 ? (uint64_t)-(ns + 1) + 1 : (uint64_t)ns;
    uint64_t ms = a / 1000000 + (a % 1000000 >= 500000);
    snprintf(buf, n, "%c%" PRIu64 ".%03" PRIu64 "s", ns < 0 ? '-' : '+', ms / 1000, ms % 1000);
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

const char *vt_format_rank(long rank, char *buf, size_t n)
{
    if (rank < 0)
        return "-";
    snprintf(buf, n, "%ld", rank);
    return buf;
}
