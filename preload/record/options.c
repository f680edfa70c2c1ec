/* Environment options and the output path template. See options.h. */
#include "options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tracer_services.h"

struct option_spec {
    const char *env;
    enum vt_option_kind kind;
    const char *def;
    uint64_t min, max;
    const char *desc;
};

static const struct option_spec specs[VT_OPTION_COUNT_] = {
#define VT_OPTION_SPEC(name, kind, def, min, max, desc) \
    {"VRAMTRACE_" #name, kind, def, min, max, desc},
    VT_OPTION_LIST(VT_OPTION_SPEC)
#undef VT_OPTION_SPEC
};

static bool parse_number(const char *text, enum vt_option_kind kind, uint64_t min,
                         uint64_t max, uint64_t *out)
{
    if (kind == VT_OPT_BOOL) {
        if (!strcmp(text, "1") || !strcmp(text, "yes") || !strcmp(text, "true") ||
            !strcmp(text, "on")) {
            *out = 1;
            return true;
        }
        if (!strcmp(text, "0") || !strcmp(text, "no") || !strcmp(text, "false") ||
            !strcmp(text, "off") || !strcmp(text, "")) {
            *out = 0;
            return true;
        }
        return false;
    }
    if (*text < '0' || *text > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

int vt_options_parse(struct vt_options *o, vt_env_lookup lookup, void *ctx, int errfd)
{
    int bad = 0;
    for (int i = 0; i < VT_OPTION_COUNT_; i++) {
        const struct option_spec *s = &specs[i];
        const char *v = lookup ? lookup(s->env, ctx) : NULL;
        o->str[i] = s->def;
        o->num[i] = 0;
        if (s->kind != VT_OPT_STRING)
            parse_number(s->def, s->kind, s->min, s->max, &o->num[i]);
        if (!v)
            continue;
        if (s->kind == VT_OPT_STRING) {
            if (*v) {
                o->str[i] = v;
            } else {
                vt_say(errfd, "vramtrace: %s is empty; using the default \"%s\"\n", s->env, s->def);
                bad++;
            }
            continue;
        }
        uint64_t n;
        if (parse_number(v, s->kind, s->min, s->max, &n)) {
            o->str[i] = v;
            o->num[i] = n;
        } else {
            if (s->kind == VT_OPT_BOOL)
                vt_say(errfd, "vramtrace: %s=\"%s\" is not 0 or 1; using the default %s\n",
                       s->env, v, s->def);
            else
                vt_say(errfd, "vramtrace: %s=\"%s\" is not a number in %llu..%llu; using the default %s\n",
                       s->env, v, (unsigned long long)s->min, (unsigned long long)s->max, s->def);
            bad++;
        }
    }
    return bad;
}

void vt_options_print(const struct vt_options *o, int fd)
{
    for (int i = 0; i < VT_OPTION_COUNT_; i++)
        vt_say(fd, "vramtrace: %s=%s  (%s)\n", specs[i].env, o->str[i], specs[i].desc);
}

static int append(char *out, size_t outlen, size_t *pos, const char *s, size_t n, bool sanitize)
{
    if (*pos + n >= outlen)
        return -1;
    for (size_t i = 0; i < n; i++)
        out[(*pos)++] = sanitize && s[i] == '/' ? '_' : s[i];
    out[*pos] = '\0';
    return 0;
}

int vt_expand_path(const char *tmpl, const struct vt_path_facts *f, char *out, size_t outlen)
{
    size_t pos = 0;
    if (outlen == 0)
        return -1;
    out[0] = '\0';
    for (const char *c = tmpl; *c; c++) {
        char num[32];
        const char *s = c;
        size_t n = 1;
        bool sanitize = false;
        if (c[0] == '%' && c[1]) {
            switch (c[1]) {
            case 'p':
                n = (size_t)snprintf(num, sizeof num, "%ld", f->pid);
                s = num;
                c++;
                break;
            case 'h':
                s = f->host && *f->host ? f->host : "unknownhost";
                n = strlen(s);
                sanitize = true;
                c++;
                break;
            case 'r':
                s = f->rank && *f->rank ? f->rank : "norank";
                n = strlen(s);
                sanitize = true;
                c++;
                break;
            case 'l':
                s = f->local_rank && *f->local_rank ? f->local_rank : "nolocal";
                n = strlen(s);
                sanitize = true;
                c++;
                break;
            case '%':
                c++;
                break;
            default:
                break; /* keep an unknown %x as it is */
            }
        }
        if (append(out, outlen, &pos, s, n, sanitize))
            return -1;
    }
    return 0;
}

static const char *first_set(const char *const *names, size_t n, vt_env_lookup lookup, void *ctx)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = lookup(names[i], ctx);
        if (v && *v)
            return v;
    }
    return NULL;
}

const char *vt_rank_from_env(vt_env_lookup lookup, void *ctx)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    return first_set(names, sizeof names / sizeof names[0], lookup, ctx);
}

const char *vt_local_rank_from_env(vt_env_lookup lookup, void *ctx)
{
    static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID"};
    return first_set(names, sizeof names / sizeof names[0], lookup, ctx);
}
