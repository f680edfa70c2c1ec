/*
 * The trace reader: preamble, records, id tables (chunks: chunk_source.c).
 * See trace_reader.h for what is an error and what is a truncation.
 */
#define _GNU_SOURCE
#include "trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "chunk_source.h"
#include "grow_array.h"
#include "pair_map.h"
#include "stack_nodes.h"
#include "stack_share.h"

/* Ids below this may be defined in any order (API ids are the hooks' own
 * numbering, so they are sparse); above it a new id may exceed the largest
 * one defined so far by one only. Tables therefore grow linearly with the
 * data, never by a jump a hostile file chooses. */
#define VT_ID_FREE_RANGE 65536u
/* Everything the tables hold together (strings, stack nodes, threads...).
 * A hostile file of tiny records could otherwise make tables many times
 * larger than itself. */
#define VT_TABLE_BYTES_MAX (1024ull << 20)
/* Stack nodes a reader holds: a parent's id is kept in 32 bits (the
 * budget above stops far sooner, at 64 Mi nodes). */
#define VT_NODES_MAX UINT32_MAX
#define VT_DEVICE_ORDINAL_MAX 4096u

/* ---- a string arena: copies live until close ---- */
struct arena_block {
    struct arena_block *next;
    size_t used, size;
    char data[];
};

/* An allocation site (format version 4, VT_REC_SITE), its fields checked
 * when it was defined. */
struct read_site {
    uint8_t op, kind;
    uint8_t figures; /* its MEM records end with two device figures
                      * (vt_mem_has_device_figures, by the file's version) */
    uint8_t slow;    /* figures, or a failure: never a plain memory event */
    int32_t device;         /* ordinal, -1 if unknown */
    uint64_t api, label, thread, stack, result, aux;
};

struct id_table {   /* dense array indexed by id of pointers */
    void **items;
    uint64_t cap;
    uint64_t max_id; /* largest id defined, 0 if none */
};

struct vt_reader {
    char *path;
    int fd;                 /* -1 for a memory reader, or suspended */
    bool suspended;         /* its file closed until the next chunk (vt_reader_suspend) */
    dev_t dev;              /* the file opened: another one in its place */
    ino_t ino;              /* is not read on resuming */
    const uint8_t *mem;     /* memory reader */
    uint64_t file_size;
    uint16_t version;
    uint32_t time_unit_ns;  /* of every dt field (the preamble's; 1 in version 1) */

    uint64_t pos;           /* next chunk header offset */
    uint64_t chunk_offset;  /* offset of the chunk being decoded */
    uint64_t chunks, records;
    struct vt_chunk_source source;
    const uint8_t *raw;     /* the chunk being decoded (the source's buffer) */
    size_t raw_len, raw_pos; /* raw_len: where its records end */
    /* Version 3: the chunk's dt column, [dt_p, dt_end) still to be read;
     * NULL, NULL before the first chunk and in versions 1 and 2. */
    const uint8_t *dt_p, *dt_end;
    bool dt_column;         /* VT_FORMAT_HAS_DT_COLUMN(version) */
    bool has_sites;         /* VT_FORMAT_HAS_SITES(version) */
    bool free_duration;     /* VT_FORMAT_HAS_FREE_DURATION(version) */
    bool shifted;           /* VT_FORMAT_HAS_SHIFTED_FIELDS(version) */
    bool node_deltas;       /* VT_FORMAT_HAS_NODE_DELTAS(version) */
    bool mem_in_one_load;   /* this chunk's MEM fields by three_uv (shifted,
                             * and the chunk compressed less than 4:1) */
    bool dt_runs;           /* VT_FORMAT_HAS_DT_RUNS(version): the column is
                               run-length coded, and ... */
    uint64_t dt_zeros;      /* ... this many dts of 0 are due before its next value */
    struct read_site *sites; /* id 1.. at [id]; [0] unused */
    uint64_t nsites, sites_cap;
    struct vt_delta_state delta;
    bool fast_pext;         /* vt_reader_next_batch may use pext64 */
    bool events_past_sites; /* vt_reader_events_past_sites */

    int state;              /* 0 reading, 1 end, -1 error */
    bool truncated, trailer_seen;
    char trunc_note[160];
    struct vt_read_error err;

    uint64_t table_bytes;
    struct arena_block *arena;

    struct vt_process_info *process;
    const char **strings;   /* id 1.. at [id-1] */
    uint64_t nstrings, strings_cap;
    struct vt_stack_nodes nodes;
    /* Until the first node: the share whose table it then follows, if any
     * (stack_share.h); the modules it had counted when its shifts were
     * found. */
    struct vt_stack_share *follow_share;
    size_t follow_nmodules;
    /* While every node so far was taken by its bytes: the followed table's
     * records (vt_stack_share_records), compared byte for byte; NULL from
     * the first node taken otherwise (its bytes may differ from them). */
    const uint8_t *follow_records;
    const uint32_t *follow_at;
    struct id_table threads, apis;
    struct vt_py_code_info *py_codes; /* id 1.. at [id-1] */
    uint64_t npy_codes, py_codes_cap;
    struct vt_module_info **modules;
    size_t nmodules, modules_cap;
    /* module id -> index of its latest record: an unload finds its module
     * at once (a scan per unload is quadratic: a hostile file of a million
     * loads and unloads would hang the reader for an hour). */
    struct vt_pair_map module_index;
    /* by ordinal (< VT_DEVICE_ORDINAL_MAX), grown to the largest seen: a
     * fixed table of them is 32 KiB, 32 MiB in a thousand readers */
    struct vt_device_info **devices;
    uint64_t devices_cap;
};

/* PEXT (BMI2) gathers the 7-bit groups of a varint in one instruction.
 * Written as assembly so that the file needs no -mbmi2: it only runs when
 * fast_pext() said the processor has it, and has it fast. */
static inline uint64_t pext64(uint64_t w, uint64_t mask)
{
#if defined(__x86_64__) && defined(__GNUC__)
    uint64_t out;
    __asm__("pextq %2, %1, %0" : "=r"(out) : "r"(w), "r"(mask));
    return out;
#else
    (void)mask;
    __builtin_trap(); /* never called: fast_pext() is false here */
    return w;
#endif
}

#if defined(__x86_64__) && defined(__GNUC__)
/* AMD's family (CPUID leaf 1: the base family, plus the extended one where
 * the base is 0xf), which __builtin_cpu_is names only up to what this
 * compiler knew. */
static unsigned amd_family(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned family = a >> 8 & 0xf;
    return family == 0xf ? family + (a >> 20 & 0xff) : family;
}
#endif

/* Whether pext64 may be used: BMI2 on Intel or AMD from family 19h (Zen 3
 * and later): earlier AMD processors microcode PEXT (hundreds of cycles).
 * Asked once per process: CPUID traps to the hypervisor in a VM, and a job
 * opens thousands of readers. */
static bool fast_pext(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int known = -1; /* -1: not asked yet; a race asks twice, alike */
    int fast = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (fast >= 0)
        return fast;
    __builtin_cpu_init();
    fast = __builtin_cpu_supports("bmi2") &&
           (__builtin_cpu_is("intel") || (__builtin_cpu_is("amd") && amd_family() >= 0x19));
    __atomic_store_n(&known, fast, __ATOMIC_RELAXED);
    return fast;
#else
    return false;
#endif
}

/* ---- errors ---- */

static int fail(struct vt_reader *r, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(struct vt_reader *r, uint64_t offset, const char *fmt, ...)
{
    char reason[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    r->err.offset = offset;
    snprintf(r->err.message, sizeof r->err.message, "%s: byte %" PRIu64 ": %s", r->path, offset,
             reason);
    r->state = -1;
    r->raw_len = r->raw_pos = 0; /* vt_reader_next's fast path stops here too */
    return -1;
}

/* An error inside a decompressed chunk: the file offset is the chunk's. */
static int fail_record(struct vt_reader *r, const char *what)
{
    return fail(r, r->chunk_offset, "corrupt chunk %" PRIu64 ": record at offset %zu of %zu: %s",
                r->chunks, r->raw_pos, r->raw_len, what);
}

/* ---- memory accounting and the arena ---- */

static bool charge(struct vt_reader *r, uint64_t bytes)
{
    if (r->table_bytes + bytes > VT_TABLE_BYTES_MAX)
        return false;
    r->table_bytes += bytes;
    return true;
}

static const char *arena_copy(struct vt_reader *r, const void *src, size_t len)
{
    if (len == 0)
        return "";
    if (!charge(r, len + 1))
        return NULL;
    struct arena_block *b = r->arena;
    if (!b || b->size - b->used < len + 1) {
        /* Blocks from 1 KiB doubling to 64 KiB: a job keeps every rank's
         * reader, and a rank of few names holds 1 KiB, not 4 or 64. */
        size_t size = b ? (b->size < 32768 ? 2 * b->size : 65536) : 1024;
        if (size < len + 1)
            size = len + 1;
        b = malloc(sizeof *b + size);
        if (!b)
            return NULL;
        b->next = r->arena;
        b->used = 0;
        b->size = size;
        r->arena = b;
    }
    char *dst = b->data + b->used;
    memcpy(dst, src, len);
    dst[len] = '\0';
    b->used += len + 1;
    return dst;
}

/* Grows *arr (element size elem) so that index idx fits, the new elements
 * left as they come, charging the growth to the reader's table budget: for
 * a table whose every element below its count is written when defined. */
static bool grow_uncleared(struct vt_reader *r, void **arr, uint64_t *cap, uint64_t idx,
                           size_t elem)
{
    if (idx < *cap)
        return true;
    if (idx >= SIZE_MAX)
        return false;
    size_t old = (size_t)*cap, ncap = vt_grow_capacity(old, (size_t)idx + 1, elem);
    if (!ncap || !charge(r, (uint64_t)(ncap - old) * elem))
        return false;
    size_t have = old;
    if (!vt_grow_array(arr, &have, ncap, elem))
        return false;
    *cap = have;
    return true;
}

/* As grow_uncleared, the new elements zeroed. */
static bool grow(struct vt_reader *r, void **arr, uint64_t *cap, uint64_t idx, size_t elem)
{
    size_t old = (size_t)*cap;
    if (!grow_uncleared(r, arr, cap, idx, elem))
        return false;
    if (*cap > old)
        memset((char *)*arr + old * elem, 0, (size_t)(*cap - old) * elem);
    return true;
}

static bool id_allowed(const struct id_table *t, uint64_t id)
{
    return id < VT_ID_FREE_RANGE || id <= t->max_id + 1;
}

static void *id_get(const struct id_table *t, uint64_t id)
{
    return id < t->cap ? t->items[id] : NULL;
}

/* ---- input ---- */

/* Reads up to n bytes at off; returns how many were available. */
static size_t read_at(struct vt_reader *r, uint64_t off, void *buf, size_t n)
{
    return vt_chunk_input_read(&r->source.in, off, buf, n);
}

static void mark_truncated(struct vt_reader *r, uint64_t at, const char *why)
{
    r->truncated = true;
    r->state = 1;
    snprintf(r->trunc_note, sizeof r->trunc_note, "trace ends at byte %" PRIu64 " (truncated: %s)",
             at, why);
}

/* ---- opening ---- */

static struct vt_reader *new_reader(const char *name)
{
    struct vt_reader *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->path = strdup(name ? name : "(memory)");
    r->fd = -1;
    r->time_unit_ns = 1; /* version 1, and a cut preamble */
    r->fast_pext = fast_pext();
    vt_pair_map_init(&r->module_index);
    if (!r->path) {
        vt_reader_close(r);
        return NULL;
    }
    return r;
}

static int check_preamble(struct vt_reader *r)
{
    uint8_t pre[VT_PREAMBLE_SIZE];
    size_t n = read_at(r, 0, pre, sizeof pre);
    if (n == 0)
        return fail(r, 0, "empty file: not a vramtrace trace");
    size_t cmp = n < VT_FILE_MAGIC_LEN ? n : VT_FILE_MAGIC_LEN;
    if (memcmp(pre, VT_FILE_MAGIC, cmp) != 0)
        return fail(r, 0, "not a vramtrace trace (bad magic)");
    if (n < VT_PREAMBLE_SIZE) {
        /* A writer killed before its preamble reached the disk. */
        mark_truncated(r, n, "preamble incomplete");
        r->pos = n;
        return 0;
    }
    r->version = (uint16_t)(pre[8] | pre[9] << 8);
    if (r->version > VT_FORMAT_VERSION)
        return fail(r, 8, "written by a newer vramtrace: format version %u, this vramtrace "
                          "reads versions %u to %u (read it with the vramtrace that wrote it, "
                          "or a newer one)",
                    r->version, VT_FORMAT_VERSION_OLDEST, VT_FORMAT_VERSION);
    if (r->version < VT_FORMAT_VERSION_OLDEST)
        return fail(r, 8, "unsupported format version %u (this reader knows versions %u to %u)",
                    r->version, VT_FORMAT_VERSION_OLDEST, VT_FORMAT_VERSION);
    if (r->version >= 2) {
        r->time_unit_ns = (uint32_t)pre[12] | (uint32_t)pre[13] << 8 |
                          (uint32_t)pre[14] << 16 | (uint32_t)pre[15] << 24;
        if (r->time_unit_ns == 0)
            return fail(r, 12, "time unit is 0 ns");
    }
    r->dt_column = VT_FORMAT_HAS_DT_COLUMN(r->version);
    r->has_sites = VT_FORMAT_HAS_SITES(r->version);
    r->dt_runs = VT_FORMAT_HAS_DT_RUNS(r->version);
    r->free_duration = VT_FORMAT_HAS_FREE_DURATION(r->version);
    r->shifted = VT_FORMAT_HAS_SHIFTED_FIELDS(r->version);
    r->node_deltas = VT_FORMAT_HAS_NODE_DELTAS(r->version);
    r->pos = VT_PREAMBLE_SIZE;
    return 0;
}

static int finish_open(struct vt_reader *r, struct vt_reader **out, struct vt_read_error *err)
{
    if (check_preamble(r) != 0) {
        if (err)
            *err = r->err;
        vt_reader_close(r);
        *out = NULL;
        return -1;
    }
    *out = r;
    return 0;
}

int vt_reader_open(const char *path, struct vt_reader **out, struct vt_read_error *err)
{
    *out = NULL;
    struct vt_reader *r = new_reader(path);
    if (!r) {
        if (err) {
            err->offset = 0;
            snprintf(err->message, sizeof err->message, "%s: out of memory", path);
        }
        return -1;
    }
    /* O_NONBLOCK: opening a FIFO without a writer (or a device) must not
     * block before its type is known; only a regular file is read, and
     * O_NONBLOCK means nothing to one. */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (r->fd < 0 || fstat(r->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (err) {
            err->offset = 0;
            snprintf(err->message, sizeof err->message, "%s: %s", path,
                     r->fd < 0 ? strerror(errno) : "not a regular file");
        }
        vt_reader_close(r);
        return -1;
    }
    r->file_size = (uint64_t)st.st_size;
    r->dev = st.st_dev;
    r->ino = st.st_ino;
    if (!vt_chunk_source_init(&r->source, r->fd, NULL, r->file_size)) {
        if (err) {
            err->offset = 0;
            snprintf(err->message, sizeof err->message, "%s: out of memory", path);
        }
        vt_reader_close(r);
        return -1;
    }
    return finish_open(r, out, err);
}

int vt_reader_open_head(const char *path, size_t head, struct vt_reader **out,
                        struct vt_read_error *err)
{
    if (vt_reader_open(path, out, err) != 0)
        return -1;
    (*out)->source.head = head;
    /* a look at each of many traces: the thread's decompression context,
     * not one made and freed a trace */
    (*out)->source.lean = true;
    return 0;
}

bool vt_reader_suspend(struct vt_reader *r)
{
    if (r->fd < 0)
        return !r->mem; /* suspended already, or closed at its end; a buffer has no file */
    if (r->source.ahead)
        return false; /* its thread reads the file */
    close(r->fd);
    r->fd = -1;
    r->source.in.fd = -1;
    r->suspended = true;
    return true;
}

int vt_reader_resume(struct vt_reader *r)
{
    if (!r->suspended)
        return r->state < 0 ? -1 : 0;
    r->suspended = false;
    int fd = open(r->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return fail(r, r->pos, "cannot open it again to read on: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || st.st_dev != r->dev || st.st_ino != r->ino) {
        close(fd);
        return fail(r, r->pos, "another file took its place since it was first opened");
    }
    /* It may have grown (a process still writing): what is read ends where
     * it ended when first opened, as with a file kept open. */
    r->fd = fd;
    r->source.in.fd = fd;
    return 0;
}

int vt_reader_follow(struct vt_reader *r)
{
    if (r->state < 0)
        return -1;
    if (r->state == 0)
        return 1; /* not at its end yet */
    if (r->trailer_seen || r->mem || r->source.ahead)
        return 0;
    if (r->suspended && vt_reader_resume(r) != 0)
        return -1;
    struct stat st;
    if (r->fd < 0)
        return 0; /* released: it reads no more */
    if (fstat(r->fd, &st) != 0)
        return fail(r, r->pos, "cannot look at it again: %s", strerror(errno));
    if ((uint64_t)st.st_size <= r->file_size)
        return 0;
    r->file_size = (uint64_t)st.st_size;
    r->source.in.size = r->file_size;
    r->truncated = false;
    r->trunc_note[0] = '\0';
    r->state = 0;
    /* A preamble cut short is checked again, now that there is more. */
    if (r->version == 0 && check_preamble(r) != 0)
        return -1;
    return r->state == 0 ? 1 : 0;
}

void vt_reader_lean(struct vt_reader *r)
{
    r->source.lean = true;
}

void vt_reader_release(struct vt_reader *r)
{
    if (r->state == 0)
        return; /* not at its end: it still reads */
    vt_chunk_source_release(&r->source);
    /* Sites only decode memory records, and a released reader reads no
     * more (vt_reader_follow): kept, they were 77 MB of a 1024-rank job. */
    free(r->sites);
    r->sites = NULL;
    r->nsites = r->sites_cap = 0; /* an id read after: "refers to no site" */
    vt_stack_nodes_trim(&r->nodes); /* they stop growing: their spare room goes */
    r->raw = NULL;
    r->raw_len = r->raw_pos = 0;
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
        r->source.in.fd = -1; /* nothing reads it any more */
    }
}

void vt_reader_share_stack_nodes(struct vt_reader *r, struct vt_stack_share *s)
{
    if (r->state == 0)
        return; /* not at its end: more nodes may come */
    vt_stack_share_offer(s, &r->nodes, (const struct vt_module_info *const *)r->modules,
                         r->nmodules);
}

void vt_reader_follow_stack_share(struct vt_reader *r, struct vt_stack_share *s)
{
    r->follow_share = s;
}

uint64_t vt_reader_stack_nodes_own(const struct vt_reader *r)
{
    return vt_stack_nodes_own(&r->nodes);
}

int vt_reader_open_memory(const void *data, size_t len, const char *name, struct vt_reader **out,
                          struct vt_read_error *err)
{
    *out = NULL;
    struct vt_reader *r = new_reader(name);
    if (!r) {
        if (err)
            snprintf(err->message, sizeof err->message, "%s: out of memory", name);
        return -1;
    }
    r->mem = data;
    r->file_size = len;
    if (!vt_chunk_source_init(&r->source, -1, data, len)) {
        if (err)
            snprintf(err->message, sizeof err->message, "%s: out of memory", name);
        vt_reader_close(r);
        return -1;
    }
    return finish_open(r, out, err);
}

void vt_reader_close(struct vt_reader *r)
{
    if (!r)
        return;
    vt_chunk_source_free(&r->source); /* first: its thread reads the fd */
    if (r->fd >= 0)
        close(r->fd);
    while (r->arena) {
        struct arena_block *n = r->arena->next;
        free(r->arena);
        r->arena = n;
    }
    if (r->process) {
        free((void *)r->process->argv);
        free((void *)r->process->env);
        free(r->process);
    }
    free(r->strings);
    vt_stack_nodes_free(&r->nodes);
    free(r->py_codes); /* names live in the arena */
    free(r->sites);
    for (uint64_t i = 0; i < r->threads.cap; i++)
        free(r->threads.items[i]);
    free(r->threads.items);
    free(r->apis.items); /* names live in the arena */
    for (size_t i = 0; i < r->nmodules; i++)
        free(r->modules[i]);
    free(r->modules);
    vt_pair_map_free(&r->module_index);
    for (uint64_t i = 0; i < r->devices_cap; i++)
        free(r->devices[i]);
    free(r->devices);
    free(r->path);
    free(r);
}

/* ---- chunks ---- */

/* Loads the next chunk into r->raw. Returns 1 loaded, 0 end, -1 error. */
static int load_chunk(struct vt_reader *r)
{
    uint64_t off = r->pos;
    if (off >= r->file_size) {
        if (!r->trailer_seen)
            mark_truncated(r, off, "no trailer");
        else
            r->state = 1;
        return 0;
    }
    if (r->trailer_seen)
        return fail(r, off, "data after the trailer");
    if (r->suspended && vt_reader_resume(r) != 0)
        return -1;
    struct vt_chunk c;
    vt_chunk_source_next(&r->source, off, &c);
    if (c.kind == VT_CHUNK_CUT) {
        mark_truncated(r, off, c.cut_reason);
        return 0;
    }
    if (c.kind == VT_CHUNK_ERROR)
        return fail(r, c.error_offset, "%s", c.why);
    r->raw = c.raw;
    r->chunk_offset = off;
    r->pos = c.next_offset;
    r->raw_len = c.raw_len;
    r->raw_pos = 0;
    r->chunks++;
    memset(&r->delta, 0, sizeof r->delta);
    /* A chunk that compressed well repeats its records, and the lengths of
     * their fields with them: a test of each length predicts, and costs
     * fewer instructions than three_uv (a training loop: 28 an event);
     * one that did not (random sizes and addresses) has random lengths. */
    r->mem_in_one_load =
        r->shifted && c.raw_len < 4 * (c.next_offset - off - VT_CHUNK_HEADER_SIZE);
    if (r->dt_column && c.head_only) {
        /* A head read: the records start the chunk, but its dt column and
         * footer are at the end, not decompressed. The definitions at the
         * head (the process record) read as they are; a timed record finds
         * no column and is an error. The head's last bytes are records,
         * not the footer: read as one, they would make every head read
         * fail, and the chunk be decompressed whole after all. */
        r->dt_p = r->dt_end = NULL;
        r->dt_zeros = 0;
    } else if (r->dt_column) {
        /* records, dt column, footer: the records' length */
        if (c.raw_len < VT_CHUNK_FOOTER_SIZE)
            return fail(r, off, "corrupt chunk %" PRIu64 ": %zu bytes, too short for its footer",
                        r->chunks, c.raw_len);
        size_t column_end = c.raw_len - VT_CHUNK_FOOTER_SIZE;
        uint32_t records = vt_get_le32(c.raw + column_end);
        if (records > column_end)
            return fail(r, off,
                        "corrupt chunk %" PRIu64 ": records of %" PRIu32
                        " bytes in a chunk of %zu bytes",
                        r->chunks, records, c.raw_len);
        r->raw_len = records;
        r->dt_p = c.raw + records;
        r->dt_end = c.raw + column_end;
        /* version 4: the column starts with the count of zeros before its
         * first value (there is always one: the last closes the column) */
        if (r->dt_runs && vt_get_uvarint(&r->dt_p, r->dt_end, &r->dt_zeros) != 0)
            return fail(r, off, "corrupt chunk %" PRIu64 ": its dt column lacks its first count",
                        r->chunks);
    }
    return 1;
}

/* Version 4: the next dt of the run-length coded column: a 0 while zeros
 * are due, else the value there and the count of zeros after it. False,
 * with nothing changed, where the column ends first. */
static inline bool column_dt_run(const uint8_t **dq, const uint8_t *end, uint64_t *zeros,
                                 uint64_t *dt)
{
    if (*zeros != 0) {
        (*zeros)--;
        *dt = 0;
        return true;
    }
    const uint8_t *q = *dq;
    /* A value and a count of one byte each, nearly every pair (times of a
     * few units between events, short runs of zeros): one test for both,
     * not a byte loop each. */
    if (__builtin_expect(end - q >= 2 && ((q[0] | q[1]) & 0x80) == 0, 1)) {
        *dt = q[0];
        *zeros = q[1];
        *dq = q + 2;
        return true;
    }
    uint64_t after;
    if (vt_get_uvarint(&q, end, dt) != 0 || vt_get_uvarint(&q, end, &after) != 0)
        return false;
    *dq = q;
    *zeros = after;
    return true;
}

bool vt_reader_read_ahead(struct vt_reader *r)
{
    if (r->suspended && vt_reader_resume(r) != 0)
        return false; /* next() says why */
    return r->state == 0 && vt_chunk_source_read_ahead(&r->source, r->pos);
}

bool vt_reader_read_ahead_shared(struct vt_reader *r)
{
    if (r->suspended && vt_reader_resume(r) != 0)
        return false; /* next() says why */
    return r->state == 0 && vt_chunk_source_read_ahead_shared(&r->source, r->pos);
}

bool vt_reader_help_read_ahead(struct vt_reader *r)
{
    return vt_chunk_source_help(&r->source);
}

/* ---- record decoding ---- */

struct cursor {
    const uint8_t *p, *end;
    bool bad;
    const char *why;
};

static uint64_t get_uv(struct cursor *c)
{
    uint64_t v = 0;
    if (c->bad)
        return 0;
    if (vt_get_uvarint(&c->p, c->end, &v) != 0) {
        c->bad = true;
        c->why = "varint runs past the end of the chunk";
        return 0;
    }
    return v;
}

static uint8_t get_byte(struct cursor *c)
{
    if (c->bad)
        return 0;
    if (c->p >= c->end) {
        c->bad = true;
        c->why = "record runs past the end of the chunk";
        return 0;
    }
    return *c->p++;
}

/* n raw bytes; returns a pointer into the chunk, NULL (and bad) if the
 * record ends first. One bounds check for the whole field (a byte-by-byte
 * loop of get_byte() also made GCC 12 -O3 warn falsely about the copy). */
static const uint8_t *get_raw(struct cursor *c, size_t n)
{
    if (c->bad)
        return NULL;
    if (n > (size_t)(c->end - c->p)) {
        c->bad = true;
        c->why = "record runs past the end of the chunk";
        return NULL;
    }
    const uint8_t *s = c->p;
    c->p += n;
    return s;
}

/* A length-prefixed string; returns a pointer into the chunk. */
static const uint8_t *get_str(struct cursor *c, size_t *len, size_t max)
{
    uint64_t n = get_uv(c);
    if (c->bad)
        return NULL;
    if (n > max) {
        c->bad = true;
        c->why = "string longer than the format allows";
        return NULL;
    }
    if (n > (uint64_t)(c->end - c->p)) {
        c->bad = true;
        c->why = "string runs past the end of the chunk";
        return NULL;
    }
    const uint8_t *s = c->p;
    c->p += n;
    *len = (size_t)n;
    return s;
}

static const char *get_owned_str(struct vt_reader *r, struct cursor *c)
{
    size_t len = 0;
    const uint8_t *s = get_str(c, &len, VT_STRING_MAX);
    if (c->bad)
        return NULL;
    const char *copy = arena_copy(r, s, len);
    if (!copy) {
        c->bad = true;
        c->why = "tables exceed the reader's memory limit";
    }
    return copy;
}

/* The time in units after adding dt, in nanoseconds; false if that does
 * not fit 64 bits (only a hostile file says so). */
static bool advance_time(struct vt_reader *r, uint64_t dt, uint64_t *time_ns)
{
    uint64_t t;
    if (__builtin_add_overflow(r->delta.last_time, dt, &t) ||
        __builtin_mul_overflow(t, (uint64_t)r->time_unit_ns, time_ns))
        return false;
    r->delta.last_time = t;
    return true;
}

static uint64_t get_time(struct vt_reader *r, struct cursor *c)
{
    uint64_t dt = 0, time_ns = 0;
    if (!r->dt_column) {
        dt = get_uv(c);
    } else if (!c->bad && (r->dt_runs ? !column_dt_run(&r->dt_p, r->dt_end, &r->dt_zeros, &dt)
                                      : vt_get_uvarint(&r->dt_p, r->dt_end, &dt) != 0)) {
        c->bad = true;
        c->why = "the chunk's dt column ends before its timed records";
        return 0;
    }
    if (!c->bad && !advance_time(r, dt, &time_ns)) {
        c->bad = true;
        c->why = "time beyond 2^64 ns";
    }
    return time_ns;
}

#define CHECK(cond, msg)                  \
    do {                                  \
        if (!c->bad && !(cond)) {         \
            c->bad = true;                \
            c->why = (msg);               \
        }                                 \
    } while (0)

/* A MEM record's size (delta: its address's difference) as the file's
 * version writes it: a us (ds) field from version 7, before it a uv (da). */
static uint64_t get_mem_field(const struct vt_reader *r, struct cursor *c, bool delta)
{
    uint64_t code = get_uv(c);
    if (!r->shifted)
        return delta ? (uint64_t)vt_unzigzag(code) : code;
    if (!vt_shifted_is_escape(code))
        return vt_shifted_value(code, delta);
    CHECK(code == VT_SHIFTED_ESCAPE, "shifted varint that holds no value");
    return vt_shifted_escaped(get_uv(c), delta);
}

static void check_thread(struct vt_reader *r, struct cursor *c, uint64_t id)
{
    CHECK(id_get(&r->threads, id) != NULL, "thread id refers to no thread record");
}

static void check_string(struct vt_reader *r, struct cursor *c, uint64_t id)
{
    CHECK(id <= r->nstrings, "string id out of range");
}

static void decode_process(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    CHECK(r->process == NULL, "a second process record");
    if (c->bad)
        return;
    struct vt_process_info *p = calloc(1, sizeof *p);
    if (!p) {
        CHECK(false, "out of memory");
        return;
    }
    p->pid = get_uv(c);
    p->ppid = get_uv(c);
    p->start_realtime_ns = get_uv(c);
    p->start_mono_ns = get_uv(c);
    p->hostname = get_owned_str(r, c);
    p->exe = get_owned_str(r, c);
    p->argc = get_uv(c);
    /* Every argument takes at least one byte: a count beyond the bytes left
     * is a lie, refused before allocating. */
    CHECK(p->argc <= (uint64_t)(c->end - c->p), "argument count exceeds the chunk");
    if (c->bad)
        goto refused;
    const char **argv = calloc(p->argc + 1, sizeof *argv);
    p->argv = argv;
    CHECK(argv != NULL, "out of memory");
    for (uint64_t i = 0; i < p->argc && !c->bad; i++)
        argv[i] = get_owned_str(r, c);
    p->nenv = get_uv(c);
    CHECK(p->nenv <= (uint64_t)(c->end - c->p) / 2, "environment count exceeds the chunk");
    if (c->bad)
        goto refused;
    struct vt_env_var *env = calloc(p->nenv + 1, sizeof *env);
    p->env = env;
    CHECK(env != NULL, "out of memory");
    for (uint64_t i = 0; i < p->nenv && !c->bad; i++) {
        env[i].name = get_owned_str(r, c);
        env[i].value = get_owned_str(r, c);
    }
    p->tool_version = get_owned_str(r, c);
    p->stack_depth = get_uv(c);
    p->flush_interval_ms = get_uv(c);
    if (!c->bad && !charge(r, (p->argc + p->nenv * 2) * sizeof(void *)))
        CHECK(false, "tables exceed the reader's memory limit");
    if (c->bad)
        goto refused;
    /* Published only once whole: a record cut short must not leave a
     * process whose argc promises arguments argv does not hold. */
    r->process = p;
    rec->u.process = p;
    return;
refused:
    free((void *)p->argv);
    free((void *)p->env);
    free(p);
}

static void decode_module(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    struct vt_module_info m = {0};
    m.id = get_uv(c);
    m.load_bias = get_uv(c);
    m.start = get_uv(c);
    m.end = get_uv(c);
    m.path = get_owned_str(r, c);
    size_t bl = 0;
    const uint8_t *b = get_str(c, &bl, VT_BUILD_ID_MAX);
    if (c->bad)
        return;
    m.build_id = (const uint8_t *)arena_copy(r, b, bl);
    m.build_id_len = bl;
    CHECK(m.build_id != NULL, "tables exceed the reader's memory limit");
    CHECK(r->nmodules < (1u << 20), "too many modules");
    if (c->bad)
        return;
    uint64_t cap = r->modules_cap;
    if (!grow(r, (void **)&r->modules, &cap, r->nmodules, sizeof *r->modules)) {
        CHECK(false, "tables exceed the reader's memory limit");
        return;
    }
    r->modules_cap = (size_t)cap;
    struct vt_module_info *copy = malloc(sizeof *copy);
    if (!copy || !vt_pair_map_put(&r->module_index, m.id, 0, r->nmodules)) {
        free(copy);
        CHECK(false, "out of memory");
        return;
    }
    *copy = m;
    r->modules[r->nmodules++] = copy;
    rec->u.module = copy;
}

static void decode_thread(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t id = get_uv(c);
    uint64_t tid = get_uv(c);
    const char *name = get_owned_str(r, c);
    CHECK(id_allowed(&r->threads, id), "thread id out of range");
    if (c->bad)
        return;
    struct vt_thread_info *t = id_get(&r->threads, id);
    if (!t) {
        if (!grow(r, (void **)&r->threads.items, &r->threads.cap, id, sizeof(void *)) ||
            !(t = calloc(1, sizeof *t))) {
            CHECK(false, "tables exceed the reader's memory limit");
            return;
        }
        r->threads.items[id] = t;
        if (id > r->threads.max_id)
            r->threads.max_id = id;
    }
    t->id = id;
    t->os_tid = tid;
    t->name = name;
    rec->u.thread = t;
}

static void decode_device(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t ord = get_uv(c);
    const uint8_t *uuid = get_raw(c, VT_UUID_SIZE);
    const char *name = get_owned_str(r, c);
    uint64_t total = get_uv(c);
    CHECK(ord < VT_DEVICE_ORDINAL_MAX, "device ordinal out of range");
    if (c->bad)
        return;
    CHECK(grow(r, (void **)&r->devices, &r->devices_cap, ord, sizeof *r->devices),
          "out of memory");
    if (c->bad)
        return;
    struct vt_device_info *d = r->devices[ord];
    if (!d && !(d = r->devices[ord] = calloc(1, sizeof *d))) {
        CHECK(false, "out of memory");
        return;
    }
    d->ordinal = ord;
    memcpy(d->uuid, uuid, VT_UUID_SIZE);
    d->name = name;
    d->total_bytes = total;
    rec->u.device = d;
}

/* Room for one more stack node. The budget is charged 16 bytes a node of
 * room, what a node took before the table was compact. */
static bool nodes_room(struct vt_reader *r)
{
    uint64_t old = r->nodes.cap;
    if (r->nodes.n < old)
        return true;
    if (r->nodes.n >= VT_NODES_MAX)
        return false;
    size_t ncap = vt_grow_capacity((size_t)old, (size_t)r->nodes.n + 1, 2 * sizeof(uint64_t));
    return ncap && charge(r, (uint64_t)(ncap - old) * 2 * sizeof(uint64_t)) &&
           vt_stack_nodes_reserve(&r->nodes, ncap);
}

/* At the trace's first node: it follows a table of the share, if it was
 * given one and the share has a table. */
static void start_following(struct vt_reader *r)
{
    if (!r->nodes.n && !r->nodes.base &&
        vt_stack_share_follow(r->follow_share, &r->nodes,
                              (const struct vt_module_info *const *)r->modules, r->nmodules)) {
        r->follow_nmodules = r->nmodules;
        if (!vt_stack_share_records(r->follow_share, r->nodes.base, r->node_deltas,
                                    &r->follow_records, &r->follow_at))
            r->follow_records = NULL;
    }
    r->follow_share = NULL; /* asked once */
}

/* The table follows a shared one: the node is taken as that table's next
 * (1), or it was not, and the table has room of its own for it now (0), or
 * out of memory (-1). The modules recorded since the shifts were found are
 * looked at first: a library loaded late. Its own room is charged as
 * nodes_room charges it. */
static int follow_node(struct vt_reader *r, uint64_t parent, uint64_t ip)
{
    r->follow_records = NULL; /* a node taken by its values */
    if (vt_stack_nodes_follow_next(&r->nodes, parent, ip))
        return 1;
    if (r->nmodules != r->follow_nmodules) {
        r->follow_nmodules = r->nmodules;
        if (vt_stack_share_refollow(&r->nodes, (const struct vt_module_info *const *)r->modules,
                                    r->nmodules) &&
            vt_stack_nodes_follow_next(&r->nodes, parent, ip))
            return 1;
    }
    if (r->nodes.n >= VT_NODES_MAX)
        return -1;
    size_t cap = vt_grow_capacity(0, (size_t)r->nodes.n + 1, 2 * sizeof(uint64_t));
    return cap && charge(r, (uint64_t)cap * 2 * sizeof(uint64_t)) &&
                   vt_stack_nodes_unfollow(&r->nodes, cap)
               ? 0
               : -1;
}

/* The node after the last, into the table; false: out of memory. */
static bool take_node(struct vt_reader *r, uint64_t parent, uint64_t ip)
{
    if (__builtin_expect(r->follow_share != NULL, 0))
        start_following(r);
    if (r->nodes.following) {
        int taken = follow_node(r, parent, ip);
        if (taken)
            return taken > 0;
    }
    return nodes_room(r) && vt_stack_nodes_add(&r->nodes, parent, ip);
}

/* The node after the last, as rec too; false: out of memory. */
static bool add_stack_node(struct vt_reader *r, uint64_t parent, uint64_t ip, struct vt_record *rec)
{
    if (!take_node(r, parent, ip))
        return false;
    rec->u.stack_node.id = r->nodes.n;
    rec->u.stack_node.parent = parent;
    rec->u.stack_node.ip = ip;
    return true;
}

/* A STACK_NODE record's two numbers a, b as its parent and ip, n nodes
 * before it, last_ip the chunk's previous node's: version 7 writes the
 * distance from the node's own id (n + 1) to its parent's and the
 * difference to last_ip. False if the parent is not one of the n nodes
 * (or 0). */
static inline __attribute__((always_inline)) bool node_values(const struct vt_reader *r,
                                                             uint64_t n, uint64_t last_ip,
                                                             uint64_t a, uint64_t b,
                                                             uint64_t *parent, uint64_t *ip)
{
    if (!r->node_deltas) {
        *parent = a;
        *ip = b;
        return a <= n;
    }
    *parent = n + 1 - a;
    *ip = last_ip + (uint64_t)vt_unzigzag(b);
    return a - 1 <= n; /* 0 wraps */
}

static void decode_stack_node(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t a = get_uv(c);
    uint64_t b = get_uv(c);
    uint64_t parent, ip;
    CHECK(node_values(r, r->nodes.n, r->delta.last_ip, a, b, &parent, &ip),
          "stack node parent id out of range");
    if (c->bad)
        return;
    if (!add_stack_node(r, parent, ip, rec))
        CHECK(false, "tables exceed the reader's memory limit");
    else
        r->delta.last_ip = ip;
}

/* A stack node with both numbers in the chunk and room in the tables: most
 * of a trace's definitions (a site's frames, each defined once), decoded
 * without clearing the whole record first. False: the checked path decodes
 * it, and says what is wrong if anything is. */
static inline bool stack_node_fast(struct vt_reader *r, struct vt_record *rec)
{
    const uint8_t *p = r->raw + r->raw_pos + 1, *end = r->raw + r->raw_len;
    uint64_t a, b, parent, ip;
    if (vt_get_uvarint(&p, end, &a) != 0 || vt_get_uvarint(&p, end, &b) != 0 ||
        !node_values(r, r->nodes.n, r->delta.last_ip, a, b, &parent, &ip) ||
        !add_stack_node(r, parent, ip, rec))
        return false;
    r->delta.last_ip = ip;
    rec->type = VT_REC_STACK_NODE;
    rec->chunk_offset = r->chunk_offset;
    rec->record_offset = r->raw_pos;
    rec->time_ns = 0;
    r->raw_pos = (size_t)(p - r->raw);
    r->records++;
    return true;
}

static void decode_string(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    size_t len = 0;
    const uint8_t *s = get_str(c, &len, VT_STRING_MAX);
    if (c->bad)
        return;
    const char *copy = arena_copy(r, s, len);
    if (!copy || !grow(r, (void **)&r->strings, &r->strings_cap, r->nstrings, sizeof(char *))) {
        CHECK(false, "tables exceed the reader's memory limit");
        return;
    }
    r->strings[r->nstrings++] = copy;
    rec->u.string.id = r->nstrings;
    rec->u.string.text = copy;
    rec->u.string.len = len;
}

/* Python code ids follow the order of their records, like stack nodes. */
static void decode_py_code(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    struct vt_py_code_info info;
    info.id = get_uv(c);
    info.qualname = get_owned_str(r, c);
    info.filename = get_owned_str(r, c);
    info.first_line = get_uv(c);
    CHECK(c->bad || info.id == r->npy_codes + 1, "python code id out of order");
    if (c->bad)
        return;
    if (!grow(r, (void **)&r->py_codes, &r->py_codes_cap, r->npy_codes, sizeof info)) {
        CHECK(false, "tables exceed the reader's memory limit");
        return;
    }
    r->py_codes[r->npy_codes++] = info;
    rec->u.py_code = &r->py_codes[r->npy_codes - 1];
}

static void decode_api(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t id = get_uv(c);
    const char *name = get_owned_str(r, c);
    CHECK(id != 0 && id_allowed(&r->apis, id), "api id out of range");
    if (c->bad)
        return;
    if (!grow(r, (void **)&r->apis.items, &r->apis.cap, id, sizeof(void *))) {
        CHECK(false, "tables exceed the reader's memory limit");
        return;
    }
    r->apis.items[id] = (void *)name;
    if (id > r->apis.max_id)
        r->apis.max_id = id;
    rec->u.api.id = id;
    rec->u.api.name = name;
}

/* The checks of a memory record's (versions 1-3) or site's (version 4)
 * fields. */
static void check_mem_fields(struct vt_reader *r, struct cursor *c, uint8_t op, uint8_t kind,
                             uint64_t api, uint64_t label, uint64_t thread, uint64_t dev,
                             uint64_t stack)
{
    CHECK(op == VT_OP_ALLOC || op == VT_OP_FREE, "unknown memory operation");
    CHECK(kind != 0, "memory kind 0");
    CHECK(api != 0 && id_get(&r->apis, api) != NULL, "api id refers to no api record");
    CHECK(label == 0 || id_get(&r->apis, label) != NULL, "label api id refers to no api record");
    check_thread(r, c, thread);
    CHECK(dev <= VT_DEVICE_ORDINAL_MAX, "device ordinal out of range");
    CHECK(stack <= r->nodes.n, "stack node id out of range");
}

/* A site whose fields were checked into the reader's table: its id, or 0
 * where the table cannot grow (it is then as it was). */
static uint64_t add_site(struct vt_reader *r, uint8_t op, uint8_t kind, uint64_t api,
                         uint64_t label, uint64_t thread, uint64_t dev, uint64_t stack,
                         uint64_t result, uint64_t aux)
{
    uint64_t id = r->nsites + 1;
    /* ids are checked against nsites: the room past it is never read */
    if (!grow_uncleared(r, (void **)&r->sites, &r->sites_cap, id, sizeof *r->sites))
        return 0;
    r->nsites = id;
    bool figures = result != 0 ? op == VT_OP_ALLOC
                               : VT_FORMAT_HAS_CONTEXT_FIGURES(r->version) &&
                                     vt_mem_has_device_figures(op, kind, result);
    r->sites[id] = (struct read_site){
        .op = op, .kind = kind, .figures = figures, .slow = figures || result != 0,
        .device = (int32_t)dev - 1, .api = api, .label = label,
        .thread = thread, .stack = stack, .result = result, .aux = aux,
    };
    return id;
}

/* A site record's fields (past its type) into the reader's table: its id,
 * or 0 with the cursor bad and the table as it was. */
static uint64_t define_site(struct vt_reader *r, struct cursor *c)
{
    uint8_t op = get_byte(c);
    uint8_t kind = get_byte(c);
    uint64_t api = get_uv(c);
    uint64_t label = get_uv(c);
    uint64_t thread = get_uv(c);
    uint64_t dev = get_uv(c);
    uint64_t stack = get_uv(c);
    uint64_t result = get_uv(c);
    uint64_t aux = get_uv(c);
    CHECK(r->has_sites, "site record in a trace of format version 3 or older");
    check_mem_fields(r, c, op, kind, api, label, thread, dev, stack);
    if (c->bad)
        return 0;
    uint64_t id = add_site(r, op, kind, api, label, thread, dev, stack, result, aux);
    CHECK(id != 0, "tables exceed the reader's memory limit");
    return id;
}

static void decode_site(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t id = define_site(r, c);
    if (!id)
        return;
    const struct read_site *s = &r->sites[id];
    rec->u.site.id = id;
    rec->u.site.op = s->op;
    rec->u.site.kind = s->kind;
    rec->u.site.api = s->api;
    rec->u.site.label = s->label;
    rec->u.site.thread = s->thread;
    rec->u.site.device = s->device; /* the ordinal was checked: <= 4096 */
    rec->u.site.stack = s->stack;
    rec->u.site.result = s->result;
    rec->u.site.aux = s->aux;
}

/* A version 4 MEM record's fields: its site's, and its own. */
static inline void mem_from_site(struct vt_record *rec, const struct read_site *s, uint64_t id,
                                 uint64_t addr, uint64_t size, uint64_t free_b, uint64_t total_b)
{
    rec->u.mem.op = s->op;
    rec->u.mem.kind = s->kind;
    rec->u.mem.api = s->api;
    rec->u.mem.label = s->label;
    rec->u.mem.thread = s->thread;
    rec->u.mem.device = s->device;
    rec->u.mem.addr = addr;
    rec->u.mem.size = size;
    rec->u.mem.stack = s->stack;
    rec->u.mem.result = s->result;
    rec->u.mem.aux = s->aux;
    rec->u.mem.free_bytes = free_b;
    rec->u.mem.total_bytes = total_b;
    rec->u.mem.site = id;
    rec->u.mem.duration_ns = 0;
}

static void decode_mem_site(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t id = get_uv(c);
    rec->time_ns = get_time(r, c);
    uint64_t size = get_mem_field(r, c, false);
    uint64_t delta = get_mem_field(r, c, true);
    CHECK(id != 0 && id <= r->nsites, "site id refers to no site record");
    if (c->bad)
        return;
    const struct read_site *s = &r->sites[id];
    uint64_t free_b = 0, total_b = 0, duration = 0, duration_ns = 0;
    if (s->figures) {
        free_b = get_uv(c);
        total_b = get_uv(c);
        if (c->bad)
            return;
    }
    if (s->op == VT_OP_FREE && r->free_duration) { /* the column's next value */
        CHECK(column_dt_run(&r->dt_p, r->dt_end, &r->dt_zeros, &duration),
              "the chunk's dt column ends before its timed records");
        CHECK(!__builtin_mul_overflow(duration, (uint64_t)r->time_unit_ns, &duration_ns) &&
                  rec->time_ns + duration_ns >= rec->time_ns,
              "free's duration out of range");
        if (c->bad)
            return;
    }
    r->delta.last_addr += delta;
    mem_from_site(rec, s, id, r->delta.last_addr, size, free_b, total_b);
    rec->u.mem.duration_ns = duration_ns;
}

static void decode_mem(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    if (r->has_sites) {
        decode_mem_site(r, c, rec);
        return;
    }
    uint8_t op = get_byte(c);
    uint8_t kind = get_byte(c);
    uint64_t api = get_uv(c);
    uint64_t label = get_uv(c);
    uint64_t thread = get_uv(c);
    rec->time_ns = get_time(r, c);
    uint64_t dev = get_uv(c);
    uint64_t zz = get_uv(c);
    r->delta.last_addr += (uint64_t)vt_unzigzag(zz);
    uint64_t size = get_uv(c);
    uint64_t stack = get_uv(c);
    uint64_t result = get_uv(c);
    uint64_t aux = get_uv(c);
    uint64_t free_b = 0, total_b = 0;
    if (op == VT_OP_ALLOC && result != 0) {
        free_b = get_uv(c);
        total_b = get_uv(c);
    }
    check_mem_fields(r, c, op, kind, api, label, thread, dev, stack);
    if (c->bad)
        return;
    const struct read_site site = {
        .op = op, .kind = kind, .device = (int32_t)dev - 1, .api = api, .label = label,
        .thread = thread, .stack = stack, .result = result, .aux = aux,
    };
    mem_from_site(rec, &site, 0, r->delta.last_addr, size, free_b, total_b);
}

/*
 * The fast path for VT_REC_MEM, nearly every record of a trace: when at
 * least the largest possible MEM record remains in the chunk, no field can
 * run past the end, so fields are decoded without the per-field bounds and
 * error bookkeeping of the cursor. Anything unusual (an over-long varint, a
 * value a check refuses) makes it return false having changed nothing, and
 * the checked decoder runs instead: errors and their messages are the
 * checked decoder's alone.
 */
/* type, op, kind, then up to 12 varints (with the failure's free/total) */
#define VT_MEM_RECORD_MAX (3 + 12 * VT_UVARINT_MAX)

static inline uint64_t load_le64(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    w = __builtin_bswap64(w);
#endif
    return w;
}

/* A decoded varint and what follows it (p NULL: over 64 bits). */
struct uv_result {
    const uint8_t *p;
    uint64_t value;
};

/* A varint of 9 or 10 bytes (a value of 57 bits or more): the checked
 * decoder's rules, bytes known present. Out of line: rare. Returned by
 * value, so that the caller's cursor and fields can stay in registers
 * (their addresses never escape). */
static __attribute__((noinline)) struct uv_result uv_long(const uint8_t *p)
{
    struct uv_result r = {p, 0};
    if (vt_get_uvarint(&r.p, p + VT_UVARINT_MAX, &r.value) != 0)
        r.p = NULL;
    return r;
}

/* A varint's bytes w (its continuation bits still in) as its value. */
static inline __attribute__((always_inline)) uint64_t squeeze_uv(uint64_t w, bool pext)
{
    if (pext)
        return pext64(w, 0x7f7f7f7f7f7f7f7full);
    /* Squeeze out the continuation bits: 7-bit groups -> 14 -> 28 -> 56. */
    w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
    w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
    return (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
}

/* A varint at p of any length from one byte to ten, decoded from one
 * 64-bit load without a branch per byte (the caller guarantees
 * VT_UVARINT_MAX readable bytes). False on a varint longer than 64 bits. */
static inline __attribute__((always_inline)) bool any_uv(const uint8_t **pp, uint64_t *out,
                                                      bool pext)
{
    const uint8_t *p = *pp;
    uint64_t w = load_le64(p);
    uint64_t stops = ~w & 0x8080808080808080ull; /* bytes without a continuation bit */
    if (__builtin_expect(stops == 0, 0)) {
        struct uv_result r = uv_long(p);
        *pp = r.p;
        *out = r.value;
        return r.p != NULL;
    }
    unsigned bits = (unsigned)__builtin_ctzll(stops) + 1; /* 8 x the varint's length */
    *pp = p + bits / 8;
    *out = squeeze_uv(w & (~0ull >> (64 - bits)), pext);
    return true;
}

/* A MEM record's three varints (version 7: its site id, size and address
 * codes) decoded from one 64-bit load where all three end in its 8 bytes,
 * as they mostly do (a site id of 1 or 2 bytes, the codes of 1 to 3 each:
 * on random sizes and addresses their lengths are random, a test of each
 * mispredicts, and any_uv in turn waits for each length before the next
 * load). Else any_uv three times. */
static inline __attribute__((always_inline)) bool three_uv(const uint8_t **pp, uint64_t *a,
                                                        uint64_t *b, uint64_t *c, bool pext)
{
    const uint8_t *p = *pp;
    uint64_t w = load_le64(p);
    uint64_t stops = ~w & 0x8080808080808080ull;
    uint64_t second = stops & (stops - 1);
    uint64_t third = second & (second - 1);
    if (__builtin_expect(third == 0, 0))
        return any_uv(pp, a, pext) && any_uv(pp, b, pext) && any_uv(pp, c, pext);
    unsigned end_a = (unsigned)__builtin_ctzll(stops) + 1;  /* 8 x a's length */
    unsigned end_b = (unsigned)__builtin_ctzll(second) + 1; /* ... a's and b's */
    unsigned end_c = (unsigned)__builtin_ctzll(third) + 1;  /* ... all three, <= 64 */
    /* the three squeezed at once: 7 bits a byte, a's lowest */
    uint64_t x = squeeze_uv(w & (~0ull >> (64 - end_c)), pext);
    unsigned bits_a = end_a - end_a / 8, bits_b = end_b - end_b / 8; /* <= 49 */
    *a = x & ~(~0ull << bits_a);
    *b = (x & ~(~0ull << bits_b)) >> bits_a;
    *c = x >> bits_b;
    *pp = p + end_c / 8;
    return true;
}

/* vt_get_uvarint without the end test: the caller guarantees
 * VT_UVARINT_MAX readable bytes. False on a varint longer than 64 bits.
 * One and two bytes (ids, counts, times between events, stack ids) take a
 * test each; 3 to 8 bytes (addresses, sizes) are decoded from one 64-bit
 * load without a branch per byte: their lengths vary from record to
 * record, so a loop mispredicts. */
static inline __attribute__((always_inline)) bool fast_uv(const uint8_t **pp, uint64_t *out,
                                                       bool pext)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(p[0] < 0x80, 1)) {
        *pp = p + 1;
        *out = p[0];
        return true;
    }
    if (p[1] < 0x80) {
        *pp = p + 2;
        *out = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
        return true;
    }
    return any_uv(pp, out, pext);
}

/* fast_uv for a size: without the test of two bytes. Sizes are often of
 * two, three and four bytes at random (tensors of KiB and of MiB, as
 * bench/synth_trace draws them), where that test mispredicts: 1.06x
 * faster there, and the same on a training loop. Not for the other
 * fields: on a training loop, where every field has one length, fast_uv's
 * tests predict well, and the branchless path for the address's delta
 * too (or for every length of the site id) was 1.09x (1.14x) slower
 * there: a predicted length lets the next field's loads start early. */
static inline __attribute__((always_inline)) bool size_uv(const uint8_t **pp, uint64_t *out,
                                                       bool pext)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(p[0] < 0x80, 1)) {
        *pp = p + 1;
        *out = p[0];
        return true;
    }
    return any_uv(pp, out, pext);
}

/* The end of both fast paths, every field decoded and checked: the time,
 * the delta state, then rec, or (rec NULL) ev. p: past the record; dq,
 * zeros: the dt column after its dt. False (nothing changed) if the time
 * overflows: the checked decoder says why. */
static inline __attribute__((always_inline)) bool
fast_mem_finish(struct vt_reader *r, struct vt_record *rec, struct vt_replay_mem *ev,
                const struct read_site *s, uint64_t site_id, size_t start, const uint8_t *p,
                const uint8_t *dq, uint64_t zeros, uint64_t dt, uint64_t delta, uint64_t size,
                uint64_t free_b, uint64_t total_b, uint64_t duration)
{
    uint64_t units, time_ns, duration_ns, end_ns;
    if (__builtin_add_overflow(r->delta.last_time, dt, &units) ||
        __builtin_mul_overflow(units, (uint64_t)r->time_unit_ns, &time_ns) ||
        __builtin_mul_overflow(duration, (uint64_t)r->time_unit_ns, &duration_ns) ||
        __builtin_add_overflow(time_ns, duration_ns, &end_ns))
        return false;
    /* The delta state is read and written one field at a time: GCC would
     * otherwise load both fields as one vector right after storing one of
     * them, and such a load waits for the store to reach the cache (a
     * stall that was a quarter of this function's time). */
    uint64_t addr = r->delta.last_addr + delta;
    r->delta.last_time = units;
    r->delta.last_addr = addr;
    r->dt_p = dq;
    r->dt_zeros = zeros;
    r->raw_pos = (size_t)(p - r->raw);
    r->records++;
    if (!rec) {
        ev->time_ns = time_ns;
        ev->thread = s->thread;
        ev->addr = addr;
        ev->size = size;
        ev->stack = s->stack;
        ev->aux = s->aux;
        ev->device = s->device;
        ev->op = s->op;
        ev->kind = s->kind;
        ev->duration_ns = duration_ns;
        return true;
    }
    rec->time_ns = time_ns;
    rec->type = VT_REC_MEM;
    rec->chunk_offset = r->chunk_offset;
    rec->record_offset = start;
    mem_from_site(rec, s, site_id, addr, size, free_b, total_b);
    rec->u.mem.duration_ns = duration_ns;
    return true;
}

/* Versions 1-3: every field in the record. Fills rec, or (rec NULL) ev,
 * which takes only records that succeeded. */
static inline __attribute__((always_inline)) bool decode_mem_fast_fields(struct vt_reader *r,
                                                                      struct vt_record *rec,
                                                                      struct vt_replay_mem *ev,
                                                                      bool pext)
{
    size_t start = r->raw_pos;
    const uint8_t *p = r->raw + r->raw_pos + 1; /* past the type byte */
    uint8_t op = p[0], kind = p[1];
    p += 2;
    uint64_t api, label, thread, dt, dev, zz, size, stack, result, aux;
    uint64_t free_b = 0, total_b = 0;
    const uint8_t *dq = r->dt_p; /* version 3: the dt column */
    /* api, label, thread, dt and device are nearly always one byte each:
     * one test for the five (version 3: four, and the column's dt). */
    uint64_t head = load_le64(p);
    if (r->dt_column) {
        if (__builtin_expect((head & 0x80808080ull) == 0, 1)) {
            api = head & 0xff;
            label = head >> 8 & 0xff;
            thread = head >> 16 & 0xff;
            dev = head >> 24 & 0xff;
            p += 4;
        } else if (!fast_uv(&p, &api, pext) || !fast_uv(&p, &label, pext) ||
                   !fast_uv(&p, &thread, pext) || !fast_uv(&p, &dev, pext)) {
            return false;
        }
        /* the column may end within VT_UVARINT_MAX bytes: checked */
        if (__builtin_expect(dq < r->dt_end && *dq < 0x80, 1))
            dt = *dq++;
        else if (vt_get_uvarint(&dq, r->dt_end, &dt) != 0)
            return false;
    } else if (__builtin_expect((head & 0x8080808080ull) == 0, 1)) {
        api = head & 0xff;
        label = head >> 8 & 0xff;
        thread = head >> 16 & 0xff;
        dt = head >> 24 & 0xff;
        dev = head >> 32 & 0xff;
        p += 5;
    } else if (!fast_uv(&p, &api, pext) || !fast_uv(&p, &label, pext) || !fast_uv(&p, &thread, pext) ||
               !fast_uv(&p, &dt, pext) || !fast_uv(&p, &dev, pext)) {
        return false;
    }
    if (!fast_uv(&p, &zz, pext) || !fast_uv(&p, &size, pext) || !fast_uv(&p, &stack, pext))
        return false;
    /* result and aux: zero but for failures and a few kinds */
    if (__builtin_expect(((p[0] | p[1]) & 0x80) == 0, 1)) {
        result = p[0];
        aux = p[1];
        p += 2;
    } else if (!fast_uv(&p, &result, pext) || !fast_uv(&p, &aux, pext)) {
        return false;
    }
    if (!rec && result != 0)
        return false; /* a failure: the caller reads it as a vt_record */
    if (__builtin_expect(result != 0, 0) && op == VT_OP_ALLOC &&
        (!fast_uv(&p, &free_b, pext) || !fast_uv(&p, &total_b, pext)))
        return false;
    /* The checks of decode_mem, in one test. */
    if ((op != VT_OP_ALLOC && op != VT_OP_FREE) || kind == 0 ||
        id_get(&r->apis, api) == NULL /* api 0 is never defined */ ||
        (label != 0 && id_get(&r->apis, label) == NULL) ||
        id_get(&r->threads, thread) == NULL || dev > VT_DEVICE_ORDINAL_MAX || stack > r->nodes.n)
        return false;
    const struct read_site site = {
        .op = op, .kind = kind, .device = (int32_t)dev - 1, .api = api, .label = label,
        .thread = thread, .stack = stack, .result = result, .aux = aux,
    };
    return fast_mem_finish(r, rec, ev, &site, 0, start, p, dq, r->dt_zeros, dt,
                           (uint64_t)vt_unzigzag(zz), size, free_b, total_b, 0);
}

/* Version 4: a site id, the dt (column), the size, the address's delta;
 * the rest is the site's, checked when it was defined. As
 * decode_mem_fast_fields, for the same callers. */
static inline __attribute__((always_inline)) bool decode_mem_fast_site(struct vt_reader *r,
                                                                    struct vt_record *rec,
                                                                    struct vt_replay_mem *ev,
                                                                    bool pext)
{
    size_t start = r->raw_pos;
    const uint8_t *p = r->raw + r->raw_pos + 1; /* past the type byte */
    uint64_t id, size, delta, dt, free_b = 0, total_b = 0, duration = 0;
    if (r->mem_in_one_load ? !three_uv(&p, &id, &size, &delta, pext)
                           : !fast_uv(&p, &id, pext) || !size_uv(&p, &size, pext) ||
                                 !fast_uv(&p, &delta, pext))
        return false;
    if (id - 1 >= r->nsites) /* id 0 wraps */
        return false;
    const struct read_site *s = &r->sites[id];
    if (r->shifted) {
        /* an escape (or a corrupt code): the checked decoder reads it */
        if (__builtin_expect((int)vt_shifted_is_escape(size) | (int)vt_shifted_is_escape(delta),
                             0))
            return false;
        size = vt_shifted_value(size, false);
        delta = vt_shifted_value(delta, true);
    } else {
        delta = (uint64_t)vt_unzigzag(delta);
    }
    if (__builtin_expect(s->slow, 0)) {
        if (!rec)
            return false; /* the caller reads it as a vt_record */
        if (s->figures &&
            (!fast_uv(&p, &free_b, pext) || !fast_uv(&p, &total_b, pext)))
            return false;
    }
    const uint8_t *dq = r->dt_p; /* the run-length coded column (checked reads) */
    uint64_t zeros = r->dt_zeros;
    if (!column_dt_run(&dq, r->dt_end, &zeros, &dt))
        return false;
    /* version 5: a free's duration, the column's next value (the checked
     * decoder says why a bad one is) */
    if (s->op == VT_OP_FREE && r->free_duration && !column_dt_run(&dq, r->dt_end, &zeros, &duration))
        return false;
    return fast_mem_finish(r, rec, ev, s, id, start, p, dq, zeros, dt, delta, size, free_b,
                           total_b, duration);
}

static inline __attribute__((always_inline)) bool decode_mem_fast(struct vt_reader *r,
                                                               struct vt_record *rec,
                                                               struct vt_replay_mem *ev, bool pext)
{
    if (r->has_sites)
        return decode_mem_fast_site(r, rec, ev, pext);
    return decode_mem_fast_fields(r, rec, ev, pext);
}

static void decode_range(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t thread = get_uv(c);
    rec->time_ns = get_time(r, c);
    uint64_t range_id = 0, domain = 0, name = 0;
    switch (rec->type) {
    case VT_REC_RANGE_PUSH:
    case VT_REC_MARK:
        domain = get_uv(c);
        name = get_uv(c);
        break;
    case VT_REC_RANGE_POP:
        domain = get_uv(c);
        break;
    case VT_REC_RANGE_START:
        range_id = get_uv(c);
        domain = get_uv(c);
        name = get_uv(c);
        break;
    case VT_REC_RANGE_END:
        range_id = get_uv(c);
        break;
    default:
        break;
    }
    check_thread(r, c, thread);
    check_string(r, c, domain);
    check_string(r, c, name);
    rec->u.range.thread = thread;
    rec->u.range.domain = domain;
    rec->u.range.name = name;
    rec->u.range.range_id = range_id;
}

static void decode_part(struct vt_reader *r, struct cursor *c, struct vt_record *rec)
{
    uint64_t thread = get_uv(c);
    rec->time_ns = get_time(r, c);
    rec->u.part.thread = thread;
    rec->u.part.census = get_uv(c);
    rec->u.part.part = get_byte(c);
    uint64_t device = get_uv(c);
    rec->u.part.device = device ? (int64_t)(device - 1) : -1;
    rec->u.part.addr = get_uv(c);
    rec->u.part.bytes = get_uv(c);
    rec->u.part.elements = get_uv(c);
    rec->u.part.dtype = get_uv(c);
    rec->u.part.name = get_uv(c);
    CHECK(r->version >= 5, "a part record in a trace of format version 4 or older");
    CHECK(rec->u.part.part < VT_PART_COUNT_ ||
              (rec->u.part.part == VT_PART_ALLOCATOR_SAMPLE &&
               VT_FORMAT_HAS_ALLOCATOR_SAMPLES(r->version)),
          "unknown part");
    CHECK(device <= INT32_MAX, "device ordinal out of range");
    check_thread(r, c, thread);
    check_string(r, c, rec->u.part.dtype);
    check_string(r, c, rec->u.part.name);
}

/* A record left to decode: the chunk's next, or the first of the next chunk
 * (read now) when this one is done. 1, or 0 / -1 at the end or an error,
 * which the state keeps. */
static int record_ahead(struct vt_reader *r)
{
    if (r->state != 0)
        return r->state < 0 ? -1 : 0;
    while (r->raw_pos >= r->raw_len) {
        if (r->dt_p != r->dt_end) /* versions 3, 4: every time was read */
            return fail(r, r->chunk_offset,
                        "corrupt chunk %" PRIu64 ": %zu bytes of its dt column after the "
                        "last timed record",
                        r->chunks, (size_t)(r->dt_end - r->dt_p));
        if (r->dt_zeros != 0) /* version 4: its last count too */
            return fail(r, r->chunk_offset,
                        "corrupt chunk %" PRIu64 ": its dt column counts %" PRIu64
                        " more times than it has timed records",
                        r->chunks, r->dt_zeros);
        int rc = load_chunk(r);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

int vt_reader_peek_type(struct vt_reader *r)
{
    return record_ahead(r) > 0 ? r->raw[r->raw_pos] : -1;
}

/* Everything but the fast path of vt_reader_next: the end of a chunk, other
 * record types, and records the fast path refuses (they may be errors). */
static __attribute__((noinline)) int next_checked(struct vt_reader *r, struct vt_record *rec)
{
    int ahead = record_ahead(r);
    if (ahead <= 0)
        return ahead;
    if (r->raw[r->raw_pos] == VT_REC_MEM && r->raw_len - r->raw_pos >= VT_MEM_RECORD_MAX &&
        decode_mem_fast(r, rec, NULL, false))
        return 1;
    if (r->raw[r->raw_pos] == VT_REC_STACK_NODE && stack_node_fast(r, rec))
        return 1;
    memset(rec, 0, sizeof *rec);
    struct cursor cur = {r->raw + r->raw_pos, r->raw + r->raw_len, false, NULL};
    struct cursor *c = &cur;
    uint8_t type = get_byte(c);
    rec->type = (enum vt_record_type)type;
    rec->chunk_offset = r->chunk_offset;
    rec->record_offset = r->raw_pos;
    if (!vt_record_type_valid(type))
        return fail_record(r, "unknown record type");
    switch ((enum vt_record_type)type) {
    case VT_REC_PROCESS:
        decode_process(r, c, rec);
        break;
    case VT_REC_MODULE:
        decode_module(r, c, rec);
        break;
    case VT_REC_MODULE_UNLOAD: {
        uint64_t id = get_uv(c);
        const uint64_t *index = c->bad ? NULL : vt_pair_map_get(&r->module_index, id, 0);
        bool found = index && !r->modules[*index]->unloaded;
        if (found)
            r->modules[*index]->unloaded = true;
        CHECK(found, "unload of an unknown module id");
        rec->u.module_unload.id = id;
        break;
    }
    case VT_REC_THREAD:
        decode_thread(r, c, rec);
        break;
    case VT_REC_DEVICE:
        decode_device(r, c, rec);
        break;
    case VT_REC_STACK_NODE:
        decode_stack_node(r, c, rec);
        break;
    case VT_REC_STRING:
        decode_string(r, c, rec);
        break;
    case VT_REC_API:
        decode_api(r, c, rec);
        break;
    case VT_REC_PY_CODE:
        decode_py_code(r, c, rec);
        break;
    case VT_REC_MEM:
        decode_mem(r, c, rec);
        break;
    case VT_REC_SITE:
        decode_site(r, c, rec);
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK:
        decode_range(r, c, rec);
        break;
    case VT_REC_PART:
        decode_part(r, c, rec);
        break;
    case VT_REC_LOST:
        rec->u.lost.count = get_uv(c);
        break;
    case VT_REC_TRAILER:
        rec->time_ns = get_time(r, c);
        rec->u.trailer.events = get_uv(c);
        rec->u.trailer.chunks = get_uv(c);
        rec->u.trailer.lost = get_uv(c);
        CHECK(c->p == c->end, "data after the trailer record");
        break;
    }
    if (c->bad)
        return fail_record(r, c->why);
    if (type == VT_REC_TRAILER)
        r->trailer_seen = true;
    r->raw_pos = (size_t)(c->p - r->raw);
    r->records++;
    return 1;
}

/* The next record is a MEM record with room for its largest encoding:
 * nearly every record, decoded by decode_mem_fast. After an error or the
 * end nothing is left in the chunk (fail() and load_chunk see to it), so
 * this never runs past them. */
static inline __attribute__((always_inline)) bool mem_record_next(const struct vt_reader *r)
{
    return __builtin_expect(r->raw_len - r->raw_pos >= VT_MEM_RECORD_MAX, 1) &&
           r->raw[r->raw_pos] == VT_REC_MEM;
}

int vt_reader_next(struct vt_reader *r, struct vt_record *rec)
{
    if (mem_record_next(r) && decode_mem_fast(r, rec, NULL, false))
        return 1;
    return next_checked(r, rec);
}

/* A stack node record at its longest: the type and two varints. */
#define VT_STACK_NODE_RECORD_MAX (1 + 2 * VT_UVARINT_MAX)

/* The stack nodes from raw_pos on, while each has room for its longest
 * encoding, into the table; stops (having taken it or not) at the first
 * that stack_node_fast or the checked decoder must look at. One pass with
 * the cursor in a register: a rank defines thousands of nodes before its
 * first event. The ip goes straight to the branchless decoder (an address
 * takes 3 to 8 bytes, whose length a test per byte would mispredict), the
 * parent through fast_uv's tests (it is mostly the node just before, whose
 * id grows a byte at 128 and at 16,384). */
static inline __attribute__((always_inline)) size_t take_nodes_in_room(struct vt_reader *r,
                                                                      bool pext)
{
    if (r->raw_len - r->raw_pos < VT_STACK_NODE_RECORD_MAX)
        return 0;
    const uint8_t *p = r->raw + r->raw_pos;
    const uint8_t *last = r->raw + r->raw_len - VT_STACK_NODE_RECORD_MAX; /* last with room */
    size_t n = 0;
    uint64_t last_ip = r->delta.last_ip;
    while (p <= last && *p == VT_REC_STACK_NODE) {
        const uint8_t *q = p + 1;
        uint64_t a, b, parent, ip;
        if (!fast_uv(&q, &a, pext) || !any_uv(&q, &b, pext) ||
            !node_values(r, r->nodes.n, last_ip, a, b, &parent, &ip) || !nodes_room(r) ||
            !vt_stack_nodes_add(&r->nodes, parent, ip))
            break;
        last_ip = ip;
        p = q;
        n++;
    }
    r->delta.last_ip = last_ip;
    r->raw_pos = (size_t)(p - r->raw);
    r->records += n;
    return n;
}

static __attribute__((noinline)) size_t take_nodes_pext(struct vt_reader *r)
{
    return take_nodes_in_room(r, true);
}

/* The nodes of a table that follows a shared one (stack_nodes.h), compared
 * with that table's, not stored: it stops at the first that is not its. */
static inline __attribute__((always_inline)) size_t follow_nodes_in_room(struct vt_reader *r,
                                                                        bool pext)
{
    if (r->raw_len - r->raw_pos < VT_STACK_NODE_RECORD_MAX)
        return 0;
    const uint8_t *p = r->raw + r->raw_pos;
    const uint8_t *last = r->raw + r->raw_len - VT_STACK_NODE_RECORD_MAX; /* last with room */
    struct vt_stack_follow f;
    vt_stack_follow_begin(&r->nodes, &f);
    uint64_t first = f.k, last_ip = r->delta.last_ip;
    while (p <= last && *p == VT_REC_STACK_NODE) {
        const uint8_t *q = p + 1;
        uint64_t a, b, parent, ip;
        if (!fast_uv(&q, &a, pext) || !any_uv(&q, &b, pext) ||
            !node_values(r, f.k, last_ip, a, b, &parent, &ip) ||
            !vt_stack_follow_next(&f, parent, ip))
            break;
        last_ip = ip;
        p = q;
    }
    r->delta.last_ip = last_ip;
    vt_stack_follow_end(&r->nodes, &f);
    r->raw_pos = (size_t)(p - r->raw);
    r->records += f.k - first;
    return (size_t)(f.k - first);
}

/* How many first bytes of a and b (n each) are the same. */
static size_t same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t x = load_le64(a + i) ^ load_le64(b + i); /* byte i the lowest */
        if (x)
            return i + (size_t)__builtin_ctzll(x) / 8;
    }
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

/* The nodes from raw_pos on whose records are the followed table's own
 * bytes, taken without decoding them: the same bytes are the same parent
 * and ip, which is that table's node where no module of the rank is
 * shifted from where its rank had it. Not with Python frames (the table
 * would have to say which of its nodes are). Stops at the first byte that
 * differs: the caller's loop decodes from there. */
static size_t follow_records(struct vt_reader *r)
{
    struct vt_stack_nodes *t = &r->nodes;
    if (!r->follow_records || t->shift || vt_stack_nodes_has_python(t->base))
        return 0;
    const uint32_t *at = r->follow_at;
    uint64_t k = t->n, n = t->base->n, parent, ip = 0;
    /* version 7: the records' ips are differences, to base's node k's ip
     * in them and to the chunk's last in the trace */
    if (r->node_deltas &&
        (k ? !vt_stack_nodes_get(t->base, k, &parent, &ip) || ip != r->delta.last_ip
           : r->delta.last_ip != 0))
        return 0;
    size_t from = at[k], len = at[n] - from;
    if (len > r->raw_len - r->raw_pos)
        len = r->raw_len - r->raw_pos;
    size_t upto = from + same_bytes(r->raw + r->raw_pos, r->follow_records + from, len);
    uint64_t lo = k, hi = n; /* the last node whose record ends by upto */
    while (lo < hi) {
        uint64_t mid = hi - (hi - lo) / 2;
        if (at[mid] <= upto)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == k)
        return 0;
    vt_stack_nodes_follow_to(t, lo);
    if (r->node_deltas && vt_stack_nodes_get(t->base, lo, &parent, &ip))
        r->delta.last_ip = ip;
    r->raw_pos += at[lo] - from;
    r->records += lo - k;
    return (size_t)(lo - k);
}

static __attribute__((noinline)) size_t follow_nodes(struct vt_reader *r)
{
    size_t same = follow_records(r);
    size_t taken = r->fast_pext ? follow_nodes_in_room(r, true) : follow_nodes_in_room(r, false);
    if (taken)
        r->follow_records = NULL; /* nodes taken by their values */
    return same + taken;
}

size_t vt_reader_take_stack_nodes(struct vt_reader *r)
{
    struct vt_record rec;
    size_t n = 0;
    while (record_ahead(r) > 0 && r->raw[r->raw_pos] == VT_REC_STACK_NODE) {
        if (__builtin_expect(r->follow_share != NULL, 0))
            start_following(r);
        size_t taken = r->nodes.following ? follow_nodes(r)
                       : r->fast_pext     ? take_nodes_pext(r)
                                          : take_nodes_in_room(r, false);
        n += taken;
        /* the chunk's last nodes, or one the loop would not take */
        if (!taken && !stack_node_fast(r, &rec))
            break;
        n += !taken;
    }
    return n;
}

static inline __attribute__((always_inline)) int next_batch(struct vt_reader *r,
                                                          struct vt_record *recs, int max,
                                                          bool pext)
{
    int n = 0;
    while (n < max) {
        if (mem_record_next(r) && decode_mem_fast(r, &recs[n], NULL, pext)) {
            n++;
            continue;
        }
        int rc = next_checked(r, &recs[n]);
        if (rc <= 0)
            return n > 0 ? n : rc; /* the end or the error: at the next call */
        n++;
    }
    return n;
}

static __attribute__((noinline)) int next_batch_pext(struct vt_reader *r, struct vt_record *recs,
                                                     int max)
{
    return next_batch(r, recs, max, true);
}

int vt_reader_next_batch(struct vt_reader *r, struct vt_record *recs, int max)
{
    if (r->fast_pext)
        return next_batch_pext(r, recs, max);
    return next_batch(r, recs, max, false);
}

static inline __attribute__((always_inline)) int next_mem_events(struct vt_reader *r,
                                                               struct vt_replay_mem *evs, int max,
                                                               bool pext)
{
    int n = 0;
    while (n < max && mem_record_next(r) && decode_mem_fast(r, NULL, &evs[n], pext))
        n++;
    return n;
}

static __attribute__((noinline)) int next_mem_events_pext(struct vt_reader *r,
                                                          struct vt_replay_mem *evs, int max)
{
    return next_mem_events(r, evs, max, true);
}

/* A site record at its longest: the type, op and kind, seven varints. */
#define VT_SITE_RECORD_MAX (3 + 7 * VT_UVARINT_MAX)

/* The site record at p (past its type byte), with room for its longest
 * encoding, into the table without the cursor's bookkeeping: where
 * define_site would take it, the end of the record; else NULL, nothing
 * changed. */
static const uint8_t *site_fast(struct vt_reader *r, const uint8_t *p)
{
    uint8_t op = p[0], kind = p[1];
    p += 2;
    uint64_t api, label, thread, dev, stack, result, aux;
    if (!fast_uv(&p, &api, false) || !fast_uv(&p, &label, false) ||
        !fast_uv(&p, &thread, false) || !fast_uv(&p, &dev, false) ||
        !fast_uv(&p, &stack, false) || !fast_uv(&p, &result, false) || !fast_uv(&p, &aux, false))
        return NULL;
    /* the checks of define_site, in one test */
    if (!r->has_sites || (op != VT_OP_ALLOC && op != VT_OP_FREE) || kind == 0 ||
        id_get(&r->apis, api) == NULL /* api 0 is never defined */ ||
        (label != 0 && id_get(&r->apis, label) == NULL) ||
        id_get(&r->threads, thread) == NULL || dev > VT_DEVICE_ORDINAL_MAX || stack > r->nodes.n)
        return NULL;
    return add_site(r, op, kind, api, label, thread, dev, stack, result, aux) ? p : NULL;
}

/* The site record at raw_pos into the table, as next() would read it but
 * handed to no one; false, nothing read, where it is not one or is one
 * that next() must judge (it then says what is wrong). */
static bool take_site(struct vt_reader *r)
{
    if (r->raw_pos >= r->raw_len || r->raw[r->raw_pos] != VT_REC_SITE)
        return false;
    const uint8_t *end = NULL;
    if (r->raw_len - r->raw_pos >= VT_SITE_RECORD_MAX) {
        end = site_fast(r, r->raw + r->raw_pos + 1);
    } else {
        struct cursor cur = {r->raw + r->raw_pos + 1, r->raw + r->raw_len, false, NULL};
        if (define_site(r, &cur))
            end = cur.p;
    }
    if (!end)
        return false;
    r->raw_pos = (size_t)(end - r->raw);
    r->records++;
    return true;
}

void vt_reader_events_past_sites(struct vt_reader *r)
{
    r->events_past_sites = true;
}

static __attribute__((noinline)) int next_mem_events_past_sites(struct vt_reader *r,
                                                                struct vt_replay_mem *evs, int max)
{
    int n = 0;
    do
        n += r->fast_pext ? next_mem_events_pext(r, evs + n, max - n)
                          : next_mem_events(r, evs + n, max - n, false);
    while (n < max && take_site(r));
    return n;
}

int vt_reader_next_mem_events(struct vt_reader *r, struct vt_replay_mem *evs, int max)
{
    if (r->events_past_sites)
        return next_mem_events_past_sites(r, evs, max);
    if (r->fast_pext)
        return next_mem_events_pext(r, evs, max);
    return next_mem_events(r, evs, max, false);
}

/* ---- accessors ---- */

const struct vt_read_error *vt_reader_error(const struct vt_reader *r) { return &r->err; }
const char *vt_reader_path(const struct vt_reader *r) { return r->path; }
uint16_t vt_reader_version(const struct vt_reader *r) { return r->version; }
uint32_t vt_reader_time_unit_ns(const struct vt_reader *r) { return r->time_unit_ns; }
bool vt_reader_truncated(const struct vt_reader *r) { return r->truncated; }
uint64_t vt_reader_file_size(const struct vt_reader *r) { return r->file_size; }
uint64_t vt_reader_chunks(const struct vt_reader *r) { return r->chunks; }
uint64_t vt_reader_records(const struct vt_reader *r) { return r->records; }
bool vt_reader_has_trailer(const struct vt_reader *r) { return r->trailer_seen; }

uint64_t vt_reader_end_offset(const struct vt_reader *r)
{
    return r->chunks ? r->pos : (r->pos < VT_PREAMBLE_SIZE ? r->pos : VT_PREAMBLE_SIZE);
}

const char *vt_reader_truncation_note(const struct vt_reader *r)
{
    return r->truncated ? r->trunc_note : NULL;
}

const struct vt_process_info *vt_reader_process(const struct vt_reader *r) { return r->process; }

const char *vt_reader_string(const struct vt_reader *r, uint64_t id)
{
    return id >= 1 && id <= r->nstrings ? r->strings[id - 1] : NULL;
}

uint64_t vt_reader_stack_node_count(const struct vt_reader *r) { return r->nodes.n; }

bool vt_reader_stack_node(const struct vt_reader *r, uint64_t id, uint64_t *parent, uint64_t *ip)
{
    return vt_stack_nodes_get(&r->nodes, id, parent, ip);
}

bool vt_reader_has_python_frames(const struct vt_reader *r)
{
    return vt_stack_nodes_has_python(&r->nodes);
}

const struct vt_py_code_info *vt_reader_py_code(const struct vt_reader *r, uint64_t id)
{
    return id >= 1 && id <= r->npy_codes ? &r->py_codes[id - 1] : NULL;
}

const struct vt_thread_info *vt_reader_thread(const struct vt_reader *r, uint64_t id)
{
    return id_get(&r->threads, id);
}

const char *vt_reader_api(const struct vt_reader *r, uint64_t id)
{
    return id_get(&r->apis, id);
}

size_t vt_reader_module_count(const struct vt_reader *r) { return r->nmodules; }

const struct vt_module_info *vt_reader_module_at(const struct vt_reader *r, size_t index)
{
    return index < r->nmodules ? r->modules[index] : NULL;
}

const struct vt_device_info *vt_reader_device(const struct vt_reader *r, uint64_t ordinal)
{
    return ordinal < r->devices_cap ? r->devices[ordinal] : NULL;
}

/* ---- names ---- */

#define VT_KINDS(X)                                                                              \
    X(VT_KIND_DEVICE, "device") X(VT_KIND_MANAGED, "managed") X(VT_KIND_HOST_PINNED, "host_pinned") \
    X(VT_KIND_HOST_REGISTERED, "host_registered") X(VT_KIND_VMM_PHYSICAL, "vmm_physical")        \
    X(VT_KIND_VA_RESERVE, "va_reserve") X(VT_KIND_VA_MAP, "va_map") X(VT_KIND_ARRAY, "array")   \
    X(VT_KIND_GRAPH, "graph") X(VT_KIND_IPC, "ipc") X(VT_KIND_CONTEXT, "context")               \
    X(VT_KIND_EXTERNAL, "external")

#define AS_CASE(value, text) \
    case value:              \
        return text;

const char *vt_kind_name(unsigned kind)
{
    switch (kind) { VT_KINDS(AS_CASE) default: return "unknown"; }
}

const char *vt_op_name(unsigned op)
{
    return op == VT_OP_ALLOC ? "alloc" : op == VT_OP_FREE ? "free" : "?";
}
