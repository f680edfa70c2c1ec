/* Reads the VTSIM_* environment once (documented in docs/user/SIMULATED_GPU.md). */
#define _GNU_SOURCE
#include "sim_internal.h"

#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_CAPACITY (24ull << 30)        /* one realistic 24 GiB GPU */
#define DEFAULT_CONTEXT_BYTES (384ull << 20)  /* what a CUDA context costs, roughly */

static struct vtsim_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

int vtsim_parse_bytes(const char *text, uint64_t *bytes)
{
    static const struct { const char *suffix; double scale; } units[] = {
        { "TiB", 1099511627776.0 }, { "GiB", 1073741824.0 }, { "MiB", 1048576.0 },
        { "KiB", 1024.0 }, { "B", 1.0 }, { "", 1.0 },
    };
    char *end = NULL;
    double value = strtod(text, &end);
    if (end == text || !(value >= 0) || !isfinite(value))
        return -1;
    while (*end == ' ')
        end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            double b = value * units[i].scale;
            if (b >= 1.8e19)
                return -1;
            *bytes = (uint64_t)llround(b);
            return 0;
        }
    }
    return -1;
}

static void bad_env(const char *name, const char *value)
{
    fprintf(stderr, "vtsim: ignoring bad %s=\"%s\"\n", name, value);
}

static int open_log(const char *name)
{
    const char *path = getenv(name);
    if (!path || !*path)
        return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        fprintf(stderr, "vtsim: cannot open %s=%s\n", name, path);
    return fd;
}

/* VTSIM_MEMORY is one size or a comma list, one per device (the last one
 * repeats).  Returns how many entries it had. */
static int read_capacities(void)
{
    const char *env = getenv("VTSIM_MEMORY");
    int n = 0;
    for (int i = 0; i < VTSIM_MAX_DEVICES; i++)
        config.capacity[i] = DEFAULT_CAPACITY;
    if (!env || !*env)
        return 0;
    char copy[512];
    snprintf(copy, sizeof copy, "%s", env);
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < VTSIM_MAX_DEVICES;
         tok = strtok_r(NULL, ",", &save)) {
        uint64_t b;
        if (vtsim_parse_bytes(tok, &b) != 0 || b == 0) {
            bad_env("VTSIM_MEMORY", env);
            return 0;
        }
        config.capacity[n++] = b;
    }
    for (int i = n; i < VTSIM_MAX_DEVICES; i++)
        config.capacity[i] = config.capacity[n - 1];
    return n;
}

static void read_config(void)
{
    int listed = read_capacities();
    config.devices = listed > 0 ? listed : 1;
    const char *env = getenv("VTSIM_DEVICES");
    if (env && *env) {
        char *end;
        long d = strtol(env, &end, 10);
        if (*end || d < 0 || d > VTSIM_MAX_DEVICES)
            bad_env("VTSIM_DEVICES", env);
        else
            config.devices = (int)d;
    }
    config.context_bytes = DEFAULT_CONTEXT_BYTES;
    env = getenv("VTSIM_CONTEXT_BYTES");
    if (env && *env && vtsim_parse_bytes(env, &config.context_bytes) != 0) {
        bad_env("VTSIM_CONTEXT_BYTES", env);
        config.context_bytes = DEFAULT_CONTEXT_BYTES;
    }
    config.granule = VTSIM_ALLOC_ALIGN;
    env = getenv("VTSIM_GRANULE");
    if (env && *env) {
        uint64_t g;
        if (vtsim_parse_bytes(env, &g) != 0 || g < VTSIM_ALLOC_ALIGN || (g & (g - 1)))
            bad_env("VTSIM_GRANULE", env);  /* must be a power of two >= 512 */
        else
            config.granule = g;
    }
    env = getenv("VTSIM_SHARED");
    if (env && *env) {
        if (strlen(env) >= sizeof config.shared - 2 || strchr(env, '/'))
            bad_env("VTSIM_SHARED", env);
        else
            snprintf(config.shared, sizeof config.shared, "%s", env);
    }
    /* As the real driver: a comma list of physical ordinals, read up to the
     * first entry that is not one (or repeats one); set but empty: no device.
     * Ordinals past the node's devices end it too (sim_capacity.c). */
    env = getenv("CUDA_VISIBLE_DEVICES");
    if (env) {
        config.has_visible = 1;
        for (const char *p = env; *p && config.nvisible < VTSIM_MAX_DEVICES;) {
            while (*p == ' ')
                p++;
            char *end;
            long d = strtol(p, &end, 10);
            if (end == p || d < 0 || d >= VTSIM_MAX_DEVICES || (*end && *end != ',' && *end != ' '))
                break;
            int dup = 0;
            for (int i = 0; i < config.nvisible; i++)
                dup |= config.visible[i] == (int)d;
            if (dup)
                break;
            config.visible[config.nvisible++] = (int)d;
            p = end;
            while (*p == ' ')
                p++;
            if (*p != ',')
                break;
            p++;
        }
    }
    config.ledger_fd = open_log("VTSIM_LEDGER");
    config.lookup_fd = open_log("VTSIM_LOOKUP_LOG");
}

const struct vtsim_config *vtsim_config(void)
{
    pthread_once(&config_once, read_config);
    return &config;
}
