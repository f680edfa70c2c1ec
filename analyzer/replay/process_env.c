/* The launcher's words in a process record; see process_env.h. */
#include "process_env.h"

#include "input_files.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

const char *vt_process_env(const struct vt_process_info *p, const char *name)
{
    if (!p)
        return NULL;
    for (uint64_t i = 0; i < p->nenv; i++)
        if (p->env[i].name && !strcmp(p->env[i].name, name))
            return p->env[i].value;
    return NULL;
}

static long first_number(const struct vt_process_info *p, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = vt_process_env(p, names[i]);
        if (!v || !*v)
            continue;
        char *end;
        long x = strtol(v, &end, 10);
        return *end || x < 0 ? -1 : x;
    }
    return -1;
}

long vt_process_rank(const struct vt_process_info *p)
{
    static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"};
    return first_number(p, names, 4);
}

long vt_process_local_rank(const struct vt_process_info *p)
{
    static const char *const names[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID"};
    return first_number(p, names, 4);
}

long vt_process_world_size(const struct vt_process_info *p)
{
    static const char *const names[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS"};
    return first_number(p, names, 4);
}

static bool is_python(const char *program)
{
    return !strncmp(program, "python", 6) || !strncmp(program, "pypy", 4);
}

size_t vt_process_program_arg(const struct vt_process_info *p)
{
    if (!p->argc || !p->argv[0] || !is_python(vt_path_base_name(p->argv[0])))
        return 0;
    for (size_t i = 1; i < p->argc; i++) {
        const char *a = p->argv[i];
        if (!a || a[0] != '-' || !strcmp(a, "-"))
            return a ? i : 0;
        if (!strcmp(a, "-m"))
            return i + 1 < p->argc ? i + 1 : 0;
        if (!strncmp(a, "-c", 2))
            return 0;
        if (!strcmp(a, "-W") || !strcmp(a, "-X"))
            i++; /* the option's value is the next argument */
    }
    return 0;
}

const char *vt_process_session(const struct vt_process_info *p)
{
    const char *s = vt_process_env(p, "VRAMTRACE_SESSION");
    return s && *s ? s : NULL;
}

/* ---- jobs ---- */
