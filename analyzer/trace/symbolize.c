/* Symbolization with libdwfl; see symbolize.h. */
#define _GNU_SOURCE
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow_array.h"
#include "input_files.h"
#include "pair_map.h"
#include "python_frames.h"

#define MAX_INLINE_DEPTH 16

struct module_entry {
    const struct vt_module_info *info;
    Dwfl_Module *mod;  /* NULL if the file was not usable */
    const char *base;  /* basename of the recorded path */
};

struct vt_symbolizer {
    const struct vt_reader *reader; /* Python frames name its code records */
    Dwfl *dwfl;
    char *debuginfo_path;
    Dwfl_Callbacks callbacks;
    struct module_entry *modules;
    size_t nmodules, missing;
    struct vt_pair_map cache; /* (ip, 0) -> first << 8 | count */
    struct vt_frame *frames;
    size_t nframes, frames_cap;
    char **strings;           /* owned copies, freed at the end */
    size_t nstrings, strings_cap;
    bool disabled;
    struct vt_frame bare;     /* an address named by its module alone, uncached */
};

/* Without symbols, a native frame is its address and its module: with this
 * many modules or fewer, a scan finds it for less than the cache's lookup,
 * and a trace of many ranks does not build a cache of every address each. */
#define VT_SCAN_MODULES 16

static const char *keep(struct vt_symbolizer *s, const char *str)
{
    if (!str)
        return NULL;
    if (!vt_grow_array((void **)&s->strings, &s->strings_cap, s->nstrings + 1,
                       sizeof *s->strings))
        return NULL;
    char *copy = strdup(str);
    if (copy)
        s->strings[s->nstrings++] = copy;
    return copy;
}

/* The first readable candidate for a recorded path, in a static-size buf. */
static bool locate(const struct vt_symbolize_options *opt, const char *path, char *buf, size_t n)
{
    if (opt && opt->sysroot) {
        snprintf(buf, n, "%s/%s", opt->sysroot, path);
        if (access(buf, R_OK) == 0)
            return true;
    }
    if (path[0] && access(path, R_OK) == 0) {
        snprintf(buf, n, "%s", path);
        return true;
    }
    for (const char *const *d = opt ? opt->debug_dirs : NULL; d && *d; d++) {
        snprintf(buf, n, "%s/%s", *d, vt_path_base_name(path));
        if (access(buf, R_OK) == 0)
            return true;
    }
    return false;
}

static bool build_id_matches(Dwfl_Module *mod, const struct vt_module_info *m)
{
    if (m->build_id_len == 0)
        return true; /* nothing recorded to compare with */
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    return len > 0 && (size_t)len == m->build_id_len && memcmp(bits, m->build_id, (size_t)len) == 0;
}

struct vt_symbolizer *vt_symbolizer_new(const struct vt_reader *r,
                                        const struct vt_symbolize_options *opt)
{
    struct vt_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    vt_pair_map_init(&s->cache);
    s->reader = r;
    s->disabled = opt && opt->disabled;
    /* libdwfl's search path: "" (beside the file), .debug, then our dirs. */
    size_t len = 64;
    for (const char *const *d = opt ? opt->debug_dirs : NULL; d && *d; d++)
        len += strlen(*d) + 1;
    s->debuginfo_path = malloc(len);
    if (!s->debuginfo_path) {
        free(s);
        return NULL;
    }
    strcpy(s->debuginfo_path, ":.debug");
    for (const char *const *d = opt ? opt->debug_dirs : NULL; d && *d; d++) {
        strcat(s->debuginfo_path, ":");
        strcat(s->debuginfo_path, *d);
    }
    strcat(s->debuginfo_path, ":/usr/lib/debug");
    s->callbacks.find_elf = dwfl_build_id_find_elf;
    s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    s->callbacks.section_address = dwfl_offline_section_address;
    s->callbacks.debuginfo_path = &s->debuginfo_path;

    size_t n = vt_reader_module_count(r);
    s->modules = calloc(n ? n : 1, sizeof *s->modules);
    if (!s->modules) {
        vt_symbolizer_free(s);
        return NULL;
    }
    s->nmodules = n;
    if (!s->disabled)
        s->dwfl = dwfl_begin(&s->callbacks);
    if (s->dwfl)
        dwfl_report_begin(s->dwfl);
    /* Latest first: if a range was reused after an unload, the module
     * loaded last wins (older overlapping ones are refused by libdwfl). */
    for (size_t i = n; i-- > 0;) {
        const struct vt_module_info *m = vt_reader_module_at(r, i);
        struct module_entry *e = &s->modules[i];
        e->info = m;
        e->base = vt_path_base_name(m->path);
        if (!s->dwfl)
            continue;
        char path[4096];
        if (!locate(opt, m->path, path, sizeof path)) {
            s->missing++;
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "m%zu", i);
        e->mod = dwfl_report_elf(s->dwfl, name, path, -1, m->load_bias, false);
        if (e->mod && !build_id_matches(e->mod, m)) {
            e->mod = NULL; /* stays reported but is never asked */
            s->missing++;
        } else if (!e->mod) {
            s->missing++;
        }
    }
    if (s->dwfl)
        dwfl_report_end(s->dwfl, NULL, NULL);
    return s;
}

void vt_symbolizer_free(struct vt_symbolizer *s)
{
    if (!s)
        return;
    if (s->dwfl)
        dwfl_end(s->dwfl);
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    free(s->strings);
    free(s->frames);
    free(s->modules);
    free(s->debuginfo_path);
    vt_pair_map_free(&s->cache);
    free(s);
}

size_t vt_symbolizer_missing(const struct vt_symbolizer *s) { return s->missing; }

static struct vt_frame *push_frame(struct vt_symbolizer *s)
{
    if (!vt_grow_array((void **)&s->frames, &s->frames_cap, s->nframes + 1, sizeof *s->frames))
        return NULL;
    struct vt_frame *f = &s->frames[s->nframes++];
    memset(f, 0, sizeof *f);
    return f;
}

static const struct module_entry *module_of(const struct vt_symbolizer *s, uint64_t ip)
{
    for (size_t i = s->nmodules; i-- > 0;) {
        const struct vt_module_info *m = s->modules[i].info;
        if (ip >= m->start && ip < m->end)
            return &s->modules[i];
    }
    return NULL;
}

static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
    const char *plain = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
    /* C has no linkage names; for C++ the plain name is more readable and
     * the linkage name unambiguous: prefer the plain one. */
    return plain ? plain : name;
}

/* The source file named by a DW_AT_call_file index in the CU of die. */
static const char *call_file(Dwarf_Die *cudie, Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    Dwarf_Word idx;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &idx) != 0)
        return NULL;
    Dwarf_Files *files;
    size_t nfiles;
    if (dwarf_getsrcfiles(cudie, &files, &nfiles) != 0 || idx >= nfiles)
        return NULL;
    return dwarf_filesrc(files, idx, NULL, NULL);
}

/* Fills frames for pc inside mod; returns how many. */
static size_t symbolize_in_module(struct vt_symbolizer *s, const struct module_entry *e,
                                  uint64_t ip, uint64_t pc)
{
    size_t first = s->nframes;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *dl = dwfl_module_getsrc(e->mod, pc);
    if (dl)
        file = dwfl_lineinfo(dl, NULL, &line, NULL, NULL, NULL);

    Dwarf_Addr bias = 0;
    Dwarf_Die *cudie = dwfl_module_addrdie(e->mod, pc, &bias);
    Dwarf_Die *scopes = NULL;
    int nscopes = cudie ? dwarf_getscopes(cudie, pc - bias, &scopes) : 0;
    /* Walk outwards: each inlined subroutine is a frame whose caller's
     * line is its DW_AT_call_line. dwarf_getscopes lists an inlined
     * instance followed by its abstract definition's scopes, not its
     * caller's, so the scopes around each concrete instance are asked for
     * again with dwarf_getscopes_die. The enclosing subprogram ends it. */
    int i = 0;
    while (i < nscopes && s->nframes - first < MAX_INLINE_DEPTH) {
        int tag = dwarf_tag(&scopes[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) {
            i++;
            continue;
        }
        struct vt_frame *f = push_frame(s);
        if (!f)
            break;
        f->ip = ip;
        f->function = keep(s, die_name(&scopes[i]));
        f->file = keep(s, file);
        f->line = line > 0 ? (uint64_t)line : 0;
        f->module = e->base;
        f->module_offset = ip - e->info->load_bias;
        f->inlined = tag == DW_TAG_inlined_subroutine;
        if (tag == DW_TAG_subprogram)
            break;
        Dwarf_Attribute attr;
        Dwarf_Word cl = 0;
        dwarf_formudata(dwarf_attr(&scopes[i], DW_AT_call_line, &attr), &cl);
        file = call_file(cudie, &scopes[i]);
        line = (int)cl;
        Dwarf_Die *outer = NULL;
        int nouter = dwarf_getscopes_die(&scopes[i], &outer);
        free(scopes);
        scopes = outer;
        nscopes = nouter > 0 ? nouter : 0;
        i = 1; /* outer[0] is the instance itself */
    }
    free(scopes);
    if (s->nframes == first) {
        /* No DWARF scope: the symbol table, with the line table if any. */
        struct vt_frame *f = push_frame(s);
        if (!f)
            return 0;
        f->ip = ip;
        f->function = keep(s, dwfl_module_addrname(e->mod, pc));
        f->file = keep(s, file);
        f->line = line > 0 ? (uint64_t)line : 0;
        f->module = e->base;
        f->module_offset = ip - e->info->load_bias;
    } else if (!s->frames[s->nframes - 1].function) {
        s->frames[s->nframes - 1].function = keep(s, dwfl_module_addrname(e->mod, pc));
    }
    return s->nframes - first;
}

size_t vt_symbolize(struct vt_symbolizer *s, uint64_t ip, const struct vt_frame **frames)
{
    static struct vt_frame oom_frame; /* only when memory ran out */
    if (s->nmodules <= VT_SCAN_MODULES && (!s->dwfl || s->nmodules == 0) &&
        !vt_ip_is_py_frame(ip)) {
        const struct module_entry *e = module_of(s, ip ? ip - 1 : 0);
        s->bare = (struct vt_frame){.ip = ip};
        if (e) {
            s->bare.module = e->base;
            s->bare.module_offset = ip - e->info->load_bias;
        }
        *frames = &s->bare;
        return 1;
    }
    uint64_t *hit = vt_pair_map_get(&s->cache, ip, 0);
    if (hit) {
        *frames = &s->frames[*hit >> 8];
        return (size_t)(*hit & 0xff);
    }
    size_t first = s->nframes, n = 0;
    uint64_t pc = ip ? ip - 1 : 0; /* a return address points after the call */
    const struct module_entry *e = vt_ip_is_py_frame(ip) ? NULL : module_of(s, pc);
    if (vt_ip_is_py_frame(ip)) {
        struct vt_frame *f = push_frame(s);
        if (f) {
            vt_python_frame(s->reader, ip, f);
            n = 1;
        }
    } else if (e && e->mod && s->dwfl) {
        n = symbolize_in_module(s, e, ip, pc);
    }
    if (n == 0) {
        struct vt_frame *f = push_frame(s);
        if (!f) {
            oom_frame.ip = ip;
            *frames = &oom_frame;
            return 1;
        }
        f->ip = ip;
        if (e) {
            f->module = e->base;
            f->module_offset = ip - e->info->load_bias;
        }
        n = 1;
    }
    vt_pair_map_put(&s->cache, ip, 0, (uint64_t)first << 8 | n);
    *frames = &s->frames[first];
    return n;
}

bool vt_stack_frames_may_be_named(const struct vt_reader *r, const struct vt_symbolizer *sym)
{
    /* vt_symbolize names a native frame only through libdw's modules */
    return sym && (vt_reader_has_python_frames(r) || (sym->dwfl && sym->nmodules));
}

bool vt_stack_frames_may_be_python(const struct vt_reader *r, const struct vt_symbolizer *sym)
{
    if (!sym)
        return false; /* addresses only, no module */
    if (vt_reader_has_python_frames(r))
        return true;
    for (size_t i = 0; i < sym->nmodules; i++)
        if (sym->modules[i].base && !strcmp(sym->modules[i].base, "python"))
            return true;
    return false;
}

static bool is_tracer_frame(const struct vt_frame *f)
{
    return f->module && !strncmp(f->module, "libvramtrace", 12);
}

size_t vt_stack_frames(const struct vt_reader *r, struct vt_symbolizer *sym, uint64_t stack,
                       size_t max, vt_frame_fn fn, void *ctx)
{
    size_t delivered = 0;
    uint64_t parent, ip;
    /* The trie's parents always have smaller ids, so this walk ends. */
    for (uint64_t node = stack; node && vt_reader_stack_node(r, node, &parent, &ip);
         node = parent) {
        const struct vt_frame *frames;
        struct vt_frame bare = {.ip = ip};
        size_t n = 1;
        if (sym)
            n = vt_symbolize(sym, ip, &frames);
        else
            frames = &bare;
        for (size_t k = 0; k < n; k++) {
            if (is_tracer_frame(&frames[k]))
                continue;
            if (max && delivered == max)
                return delivered;
            fn(ctx, &frames[k]);
            delivered++;
        }
    }
    return delivered;
}
