/* PYTORCH_CUDA_ALLOC_CONF parsing for the allocator model (alloc_policy.h). */
#include "alloc_policy.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

void vt_alloc_config_default(struct vt_alloc_config *c)
{
    memset(c, 0, sizeof *c);
    c->max_split_size = UINT64_MAX;
    c->max_non_split_rounding = VT_PT_LARGE_BUFFER;
}

static bool parse_uint(const char *s, size_t n, uint64_t *v)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    if (buf[0] == '-')
        return false;
    unsigned long long x = strtoull(buf, &end, 10);
    if (errno || *end)
        return false;
    *v = x;
    return true;
}

static bool parse_double(const char *s, size_t n, double *v)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    *v = strtod(buf, &end);
    return !errno && !*end;
}

static bool is_pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

/* "[256:1,512:2,>:8]" (keys in MiB, powers of two) or "4". */
static bool parse_divisions(struct vt_alloc_config *c, const char *v, size_t n, char *err,
                            size_t errlen)
{
    uint64_t d;
    if (n && v[0] != '[') {
        if (!parse_uint(v, n, &d) || (d && !is_pow2(d))) {
            snprintf(err, errlen, "roundup_power2_divisions wants a power of 2, not '%.*s'",
                     (int)n, v);
            return false;
        }
        for (int i = 0; i < VT_PT_INTERVALS; i++)
            c->roundup_power2_divisions[i] = d;
        return true;
    }
    if (n < 2 || v[n - 1] != ']') {
        snprintf(err, errlen, "roundup_power2_divisions: unterminated list '%.*s'", (int)n, v);
        return false;
    }
    const char *p = v + 1, *end = v + n - 1;
    size_t last = 0;
    bool any = false;
    while (p < end) {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        const char *comma = memchr(p, ',', (size_t)(end - p));
        if (!comma)
            comma = end;
        if (!colon || colon > comma || !parse_uint(colon + 1, (size_t)(comma - colon - 1), &d) ||
            !is_pow2(d)) {
            snprintf(err, errlen, "roundup_power2_divisions: bad entry '%.*s'", (int)(comma - p), p);
            return false;
        }
        if (colon - p == 1 && *p == '>') {
            /* ">" covers the intervals above the last one named. */
            for (size_t i = any ? last + 1 : 0; i < VT_PT_INTERVALS; i++)
                c->roundup_power2_divisions[i] = d;
        } else {
            uint64_t mb;
            if (!parse_uint(p, (size_t)(colon - p), &mb) || !is_pow2(mb)) {
                snprintf(err, errlen, "roundup_power2_divisions: '%.*s' is not a power-of-2 size in MiB",
                         (int)(colon - p), p);
                return false;
            }
            size_t index = 63u - (unsigned)__builtin_clzll(mb);
            if (index > VT_PT_INTERVALS - 1)
                index = VT_PT_INTERVALS - 1;
            if (!any) /* the first entry also covers the intervals below it */
                for (size_t i = 0; i < index; i++)
                    c->roundup_power2_divisions[i] = d;
            c->roundup_power2_divisions[index] = d;
            last = index;
            any = true;
        }
        p = comma + 1;
    }
    return true;
}

static bool parse_bool(const char *v, size_t n, bool *b)
{
    if ((n == 4 && !strncmp(v, "True", 4)) || (n == 4 && !strncmp(v, "true", 4))) {
        *b = true;
        return true;
    }
    if ((n == 5 && !strncmp(v, "False", 5)) || (n == 5 && !strncmp(v, "false", 5))) {
        *b = false;
        return true;
    }
    return false;
}

#define KEY(k) (kn == sizeof(k) - 1 && !strncmp(key, k, kn))

static bool apply(struct vt_alloc_config *c, const char *key, size_t kn, const char *v, size_t n,
                  char *err, size_t errlen)
{
    uint64_t u;
    double d;
    if (KEY("max_split_size_mb")) {
        if (!parse_uint(v, n, &u) || u < VT_PT_LARGE_BUFFER / MIB) {
            snprintf(err, errlen, "max_split_size_mb must be a number of MiB >= 20, not '%.*s'",
                     (int)n, v);
            return false;
        }
        c->max_split_size = u > UINT64_MAX / MIB ? UINT64_MAX : u * MIB;
    } else if (KEY("max_non_split_rounding_mb")) {
        if (!parse_uint(v, n, &u) || u > UINT64_MAX / MIB) {
            snprintf(err, errlen, "max_non_split_rounding_mb wants a number of MiB, not '%.*s'",
                     (int)n, v);
            return false;
        }
        c->max_non_split_rounding = u * MIB;
    } else if (KEY("roundup_power2_divisions")) {
        return parse_divisions(c, v, n, err, errlen);
    } else if (KEY("garbage_collection_threshold")) {
        if (!parse_double(v, n, &d) || !(d > 0.0 && d < 1.0)) {
            snprintf(err, errlen, "garbage_collection_threshold must be in (0, 1), not '%.*s'",
                     (int)n, v);
            return false;
        }
        c->garbage_collection_threshold = d;
    } else if (KEY("per_process_memory_fraction")) {
        if (!parse_double(v, n, &d) || !(d > 0.0 && d <= 1.0)) {
            snprintf(err, errlen, "per_process_memory_fraction must be in (0, 1], not '%.*s'",
                     (int)n, v);
            return false;
        }
        c->per_process_memory_fraction = d;
    } else if (KEY("expandable_segments")) {
        if (!parse_bool(v, n, &c->expandable_segments)) {
            snprintf(err, errlen, "expandable_segments wants True or False, not '%.*s'", (int)n, v);
            return false;
        }
    } else if (KEY("backend")) {
        if (!(n == 6 && !strncmp(v, "native", 6))) {
            snprintf(err, errlen,
                     "backend:%.*s: only the native caching allocator is modelled "
                     "(cudaMallocAsync has no cache of its own to simulate)",
                     (int)n, v);
            return false;
        }
    } else if (KEY("pinned_num_register_threads") || KEY("pinned_use_cuda_host_register") ||
               KEY("release_lock_on_cudamalloc") || KEY("pinned_use_background_threads") ||
               KEY("graph_capture_record_stream_reuse")) {
        /* Host-side or locking options: no effect on device memory layout. */
    } else {
        snprintf(err, errlen, "unknown allocator option '%.*s'", (int)kn, key);
        return false;
    }
    return true;
}

bool vt_alloc_config_parse(struct vt_alloc_config *c, const char *spec, char *err, size_t errlen)
{
    const char *p = spec;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *colon = strchr(p, ':');
        if (!colon) {
            snprintf(err, errlen, "'%s': expected KEY:VALUE", p);
            return false;
        }
        const char *v = colon + 1, *e = v;
        if (*e == '[') {
            while (*e && *e != ']')
                e++;
            if (*e == ']')
                e++;
        } else {
            while (*e && *e != ',')
                e++;
        }
        if (!apply(c, p, (size_t)(colon - p), v, (size_t)(e - v), err, errlen))
            return false;
        p = e;
    }
    return true;
}

void vt_alloc_config_format(const struct vt_alloc_config *c, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = 0;
#define ADD(...)                                                          \
    do {                                                                  \
        if (len < n) {                                                    \
            int w = snprintf(buf + len, n - len, "%s", len ? "," : "");   \
            len += w > 0 ? (size_t)w : 0;                                 \
        }                                                                 \
        if (len < n) {                                                    \
            int w = snprintf(buf + len, n - len, __VA_ARGS__);            \
            len += w > 0 ? (size_t)w : 0;                                 \
        }                                                                 \
    } while (0)
    if (c->max_split_size != UINT64_MAX)
        ADD("max_split_size_mb:%llu", (unsigned long long)(c->max_split_size / MIB));
    if (c->max_non_split_rounding != VT_PT_LARGE_BUFFER)
        ADD("max_non_split_rounding_mb:%llu", (unsigned long long)(c->max_non_split_rounding / MIB));
    bool any = false;
    for (int i = 0; i < VT_PT_INTERVALS; i++)
        any |= c->roundup_power2_divisions[i] > 1;
    if (any) {
        bool same = true;
        for (int i = 1; i < VT_PT_INTERVALS; i++)
            same &= c->roundup_power2_divisions[i] == c->roundup_power2_divisions[0];
        if (same) {
            ADD("roundup_power2_divisions:%llu", (unsigned long long)c->roundup_power2_divisions[0]);
        } else {
            ADD("roundup_power2_divisions:[");
            for (int i = 0; i < VT_PT_INTERVALS && len < n; i++) {
                int w = snprintf(buf + len, n - len, "%s%llu:%llu", i ? "," : "", 1ull << i,
                                 (unsigned long long)c->roundup_power2_divisions[i]);
                len += w > 0 ? (size_t)w : 0;
            }
            if (len < n) {
                int w = snprintf(buf + len, n - len, "]");
                len += w > 0 ? (size_t)w : 0;
            }
        }
    }
    if (c->garbage_collection_threshold > 0)
        ADD("garbage_collection_threshold:%g", c->garbage_collection_threshold);
    if (c->expandable_segments)
        ADD("expandable_segments:True");
    if (c->per_process_memory_fraction > 0)
        ADD("per_process_memory_fraction:%g", c->per_process_memory_fraction);
    if (len == 0)
        snprintf(buf, n, "default");
#undef ADD
}
