/*
 * Hostile sizes and counts do not become allocations (nor hours of work). Each crafted trace
 * claims something huge (2^60 arguments, a 4 GiB chunk, a thread id of
 * 2^60...); the reader must refuse it with a clear error naming the file
 * and a byte offset (or, for claims that cost nothing, read on), and the
 * whole report path must stay within a few MiB while doing so.
 *
 * Memory is measured, not assumed: this program is linked with
 * -Wl,--wrap=malloc,calloc,realloc,free, so every allocation the analyzer
 * makes passes through the counters below (largest single request, peak
 * of bytes outstanding). zstd's own small contexts are not counted.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include "analysis.h"
#include "report.h"
#include "trace_reader.h"

/* ---- allocation counters ---- */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);

/* Signed: blocks that libc allocates for us (strdup, open_memstream) are
 * freed through the wrapper without having been counted in. */
static long long outstanding, peak;
static size_t largest;

static void count_request(size_t n)
{
    if (n > largest)
        largest = n;
}

static void *counted(void *p)
{
    if (p) {
        outstanding += (long long)malloc_usable_size(p);
        if (outstanding > peak)
            peak = outstanding;
    }
    return p;
}

void *__wrap_malloc(size_t n)
{
    count_request(n);
    return counted(__real_malloc(n));
}

void *__wrap_calloc(size_t n, size_t m)
{
    count_request(m && n > SIZE_MAX / m ? SIZE_MAX : n * m);
    return counted(__real_calloc(n, m));
}

void *__wrap_realloc(void *p, size_t n)
{
    count_request(n);
    if (p)
        outstanding -= (long long)malloc_usable_size(p);
    void *q = __real_realloc(p, n);
    if (!q && p && n)
        outstanding += (long long)malloc_usable_size(p); /* the old block stays */
    return counted(q);
}

void __wrap_free(void *p)
{
    if (p)
        outstanding -= (long long)malloc_usable_size(p);
    __real_free(p);
}

/* ---- crafting traces ---- */

struct bytes {
    uint8_t b[4096];
    size_t n;
};

static void put_byte(struct bytes *x, uint8_t v) { x->b[x->n++] = v; }
static void put_uv(struct bytes *x, uint64_t v) { x->n += vt_put_uvarint(x->b + x->n, v); }

static void put_str(struct bytes *x, const char *s)
{
    put_uv(x, strlen(s));
    memcpy(x->b + x->n, s, strlen(s));
    x->n += strlen(s);
}

/* The process record up to its argument count. */
static void process_head(struct bytes *x)
{
    put_byte(x, VT_REC_PROCESS);
    put_uv(x, 42);
    put_uv(x, 1);
    put_uv(x, 1000);
    put_uv(x, 2000);
    put_str(x, "host");
    put_str(x, "/bin/app");
}

static void process_record(struct bytes *x)
{
    process_head(x);
    put_uv(x, 1);
    put_str(x, "app");
    put_uv(x, 0);
    put_str(x, "0.1.0");
    put_uv(x, 64);
    put_uv(x, 100);
}

/* Format version 2: each record whole, its dt in place, so that a crafted
 * chunk is its records alone. What is bounded here (tables, strings, ids,
 * chunk sizes) is read the same in version 3, whose dt column lies inside
 * the decompressed chunk and allocates nothing. */
#define CRAFTED_VERSION 2

static void preamble_v2(uint8_t *b)
{
    vt_preamble_fill(b, 1);
    b[8] = CRAFTED_VERSION;
    b[9] = 0;
}

static void preamble(struct bytes *f)
{
    preamble_v2(f->b);
    f->n = VT_PREAMBLE_SIZE;
}

static void chunk_header(struct bytes *f, uint32_t csize, uint32_t rsize)
{
    vt_put_le32(f->b + f->n, VT_CHUNK_MAGIC);
    vt_put_le32(f->b + f->n + 4, csize);
    vt_put_le32(f->b + f->n + 8, rsize);
    f->n += VT_CHUNK_HEADER_SIZE;
}

static void chunk(struct bytes *f, const struct bytes *raw)
{
    uint8_t *dst = f->b + f->n + VT_CHUNK_HEADER_SIZE;
    size_t c = ZSTD_compress(dst, sizeof f->b - f->n - VT_CHUNK_HEADER_SIZE, raw->b, raw->n, 1);
    if (ZSTD_isError(c))
        abort();
    chunk_header(f, (uint32_t)c, (uint32_t)raw->n);
    f->n += c;
}

/* A file of one chunk holding a process record then `records`. */
static void file_with(struct bytes *f, const struct bytes *records)
{
    struct bytes raw = {.n = 0};
    process_record(&raw);
    memcpy(raw.b + raw.n, records->b, records->n);
    raw.n += records->n;
    preamble(f);
    chunk(f, &raw);
}

/* ---- checking ---- */

#define SMALL_PEAK (4u << 20)    /* bytes outstanding at any time */
#define SMALL_REQUEST (1u << 20) /* one allocation */

static int failures;

struct outcome {
    int rc;               /* reader: 0 end, -1 error, -2 not opened */
    char message[512];
};

static struct outcome read_all(const struct bytes *f)
{
    struct outcome o = {0, ""};
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(f->b, f->n, "crafted", &r, &err) != 0) {
        o.rc = -2;
        snprintf(o.message, sizeof o.message, "%s", err.message);
        return o;
    }
    struct vt_record rec;
    while ((o.rc = vt_reader_next(r, &rec)) > 0)
        ;
    if (o.rc < 0)
        snprintf(o.message, sizeof o.message, "%s", vt_reader_error(r)->message);
    vt_reader_close(r);
    return o;
}

static int report_all(const struct bytes *f)
{
    int fd = memfd_create("crafted", MFD_CLOEXEC);
    if (fd < 0 || write(fd, f->b, f->n) != (ssize_t)f->n)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *paths[] = {path};
    FILE *null = fopen("/dev/null", "w");
    struct vt_analysis a;
    int status = vt_analysis_run(&a, paths, 1, null);
    struct vt_report_options opt = {.layout.top = 10, .layout.text_frames = 6, .layout.width = 100,
                                    .sym.disabled = true};
    struct vt_report rep;
    vt_report_init(&rep, &a, &opt);
    vt_report_text(&rep, null);
    vt_report_json(&rep, null);
    vt_report_free(&rep);
    vt_analysis_free(&a);
    fclose(null);
    close(fd);
    return status;
}

/* expect: a substring of the error, or NULL when the file must read clean. */
static void check(const char *name, const struct bytes *f, const char *expect)
{
    outstanding = peak = largest = 0;
    struct outcome o = read_all(f);
    int status = report_all(f);
    bool ok = true;
    if (expect) {
        ok = o.rc < 0 && strstr(o.message, expect) && strstr(o.message, "crafted: byte ") &&
             status == 2;
    } else {
        ok = o.rc == 0 && status == 0;
    }
    if (peak > (long long)SMALL_PEAK || largest > SMALL_REQUEST)
        ok = false;
    printf("%-4s %-34s peak %7lld B, largest %7zu B: %s\n", ok ? "ok" : "FAIL", name, peak, largest,
           o.rc < 0 || o.rc == -2 ? o.message : "read to the end");
    if (!ok) {
        failures++;
        if (expect)
            printf("     wanted an error containing '%s' and report status 2 (got %d)\n", expect,
                   status);
    }
}

/* Time is bounded too: 200,000 modules loaded then unloaded in the same
 * order. Finding each unload's module by a scan took 2*10^10 steps (over a
 * minute; a million took an hour); by the index it is linear. */
#define MANY_MODULES 200000

static void check_module_unloads(void)
{
    size_t cap = (size_t)MANY_MODULES * 48 + 64; /* 29 bytes a load, 4 an unload at most */
    uint8_t *raw = malloc(cap), *p = raw;
    struct bytes head = {.n = 0};
    process_record(&head);
    memcpy(p, head.b, head.n);
    p += head.n;
    for (uint64_t id = 1; id <= MANY_MODULES; id++) {
        *p++ = VT_REC_MODULE;
        p += vt_put_uvarint(p, id);
        p += vt_put_uvarint(p, id << 20); /* load bias, start, end */
        p += vt_put_uvarint(p, id << 20);
        p += vt_put_uvarint(p, (id << 20) + 4096);
        *p++ = 1;                         /* path "m", no build-id */
        *p++ = 'm';
        *p++ = 0;
    }
    for (uint64_t id = 1; id <= MANY_MODULES; id++) {
        *p++ = VT_REC_MODULE_UNLOAD;
        p += vt_put_uvarint(p, id);
    }
    size_t rawlen = (size_t)(p - raw), bound = ZSTD_compressBound(rawlen);
    uint8_t *file = malloc(VT_PREAMBLE_SIZE + VT_CHUNK_HEADER_SIZE + bound);
    preamble_v2(file);
    size_t c = ZSTD_compress(file + VT_PREAMBLE_SIZE + VT_CHUNK_HEADER_SIZE, bound, raw, rawlen, 1);
    if (ZSTD_isError(c))
        abort();
    vt_put_le32(file + VT_PREAMBLE_SIZE, VT_CHUNK_MAGIC);
    vt_put_le32(file + VT_PREAMBLE_SIZE + 4, (uint32_t)c);
    vt_put_le32(file + VT_PREAMBLE_SIZE + 8, (uint32_t)rawlen);

    struct vt_reader *r;
    struct vt_read_error err;
    clock_t t0 = clock();
    uint64_t unloads = 0;
    int rc = -2;
    if (vt_reader_open_memory(file, VT_PREAMBLE_SIZE + VT_CHUNK_HEADER_SIZE + c, "modules", &r,
                              &err) == 0) {
        struct vt_record rec;
        while ((rc = vt_reader_next(r, &rec)) > 0)
            unloads += rec.type == VT_REC_MODULE_UNLOAD;
        for (size_t i = 0; rc == 0 && i < vt_reader_module_count(r); i++)
            if (!vt_reader_module_at(r, i)->unloaded)
                rc = -3;
        vt_reader_close(r);
    }
    double cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
    bool ok = rc == 0 && unloads == MANY_MODULES && cpu < 5.0;
    printf("%-4s %-34s %.2f s of CPU (limit 5), %" PRIu64 " unloads, status %d\n",
           ok ? "ok" : "FAIL", "200000 module loads and unloads", cpu, unloads, rc);
    failures += !ok;
    free(file);
    free(raw);
}

int main(void)
{
    struct bytes f, rec;

    /* Chunk headers: sizes past the format's limits, refused at once. */
    preamble(&f);
    chunk_header(&f, UINT32_MAX, 100);
    check("chunk of 4 GiB compressed", &f, "exceeds the limit");
    preamble(&f);
    chunk_header(&f, 100, UINT32_MAX);
    check("chunk of 4 GiB raw", &f, "exceeds the limit");
    /* Within the limits but larger than the file: truncation, and the
     * 64 MiB buffer is never allocated. */
    preamble(&f);
    chunk_header(&f, VT_CHUNK_MAX_COMPRESSED, VT_CHUNK_MAX_RAW);
    memset(f.b + f.n, 0x28, 64);
    f.n += 64;
    check("chunk claiming 64 MiB, file short", &f, NULL);
    /* A real small frame under a header claiming 64 MiB of records: the
     * frame's own content size disagrees, refused before allocating. */
    rec.n = 0;
    process_record(&rec);
    preamble(&f);
    chunk(&f, &rec);
    vt_put_le32(f.b + VT_PREAMBLE_SIZE + 8, VT_CHUNK_MAX_RAW);
    check("raw size 64 MiB over a tiny frame", &f, "header says");

    /* Counts in records. */
    rec.n = 0;
    process_head(&rec);
    put_uv(&rec, 1ull << 60);
    preamble(&f);
    chunk(&f, &rec);
    check("2^60 arguments", &f, "argument count exceeds the chunk");

    rec.n = 0;
    process_head(&rec);
    put_uv(&rec, 0);
    put_uv(&rec, 1ull << 60);
    preamble(&f);
    chunk(&f, &rec);
    check("2^60 environment variables", &f, "environment count exceeds the chunk");

    rec.n = 0;
    put_byte(&rec, VT_REC_STRING);
    put_uv(&rec, 1ull << 60);
    file_with(&f, &rec);
    check("string of 2^60 bytes", &f, "string longer than the format allows");

    rec.n = 0;
    put_byte(&rec, VT_REC_THREAD);
    put_uv(&rec, 1ull << 60);
    put_uv(&rec, 7);
    put_str(&rec, "t");
    file_with(&f, &rec);
    check("thread id 2^60", &f, "thread id out of range");

    rec.n = 0;
    put_byte(&rec, VT_REC_API);
    put_uv(&rec, 1ull << 60);
    put_str(&rec, "cuMemAlloc_v2");
    file_with(&f, &rec);
    check("api id 2^60", &f, "api id out of range");

    rec.n = 0;
    put_byte(&rec, VT_REC_STACK_NODE);
    put_uv(&rec, 1ull << 60);
    put_uv(&rec, 0x1234);
    file_with(&f, &rec);
    check("stack parent 2^60", &f, "parent id out of range");

    rec.n = 0;
    put_byte(&rec, VT_REC_DEVICE);
    put_uv(&rec, 1ull << 60);
    for (int i = 0; i < VT_UUID_SIZE; i++)
        put_byte(&rec, 1);
    put_str(&rec, "GPU");
    put_uv(&rec, 1ull << 40);
    file_with(&f, &rec);
    check("device ordinal 2^60", &f, "device ordinal out of range");

    rec.n = 0;
    put_byte(&rec, VT_REC_MODULE);
    put_uv(&rec, 1);
    put_uv(&rec, 0);
    put_uv(&rec, 0);
    put_uv(&rec, UINT64_MAX);
    put_str(&rec, "/lib/x.so");
    put_uv(&rec, 1ull << 60); /* build-id length */
    file_with(&f, &rec);
    check("build-id of 2^60 bytes", &f, "string longer than the format allows");

    /* Claims that cost nothing: a trailer counting 2^60 events and a loss
     * of 2^60, a 2^62-byte allocation and its free. Read to the end. */
    rec.n = 0;
    put_byte(&rec, VT_REC_THREAD);
    put_uv(&rec, 1);
    put_uv(&rec, 7);
    put_str(&rec, "main");
    put_byte(&rec, VT_REC_API);
    put_uv(&rec, 1);
    put_str(&rec, "cuMemAlloc_v2");
    for (int op = VT_OP_ALLOC; op <= VT_OP_FREE; op++) {
        put_byte(&rec, VT_REC_MEM);
        put_byte(&rec, (uint8_t)op);
        put_byte(&rec, VT_KIND_DEVICE);
        put_uv(&rec, 1);      /* api */
        put_uv(&rec, 0);      /* label */
        put_uv(&rec, 1);      /* thread */
        put_uv(&rec, 5000);   /* time */
        put_uv(&rec, 1);      /* device 0 */
        put_uv(&rec, op == VT_OP_ALLOC ? vt_zigzag(1 << 20) : 0);
        put_uv(&rec, 1ull << 62);
        put_uv(&rec, 0);      /* stack */
        put_uv(&rec, 0);      /* result */
        put_uv(&rec, 0);      /* aux */
    }
    put_byte(&rec, VT_REC_LOST);
    put_uv(&rec, 1ull << 60);
    put_byte(&rec, VT_REC_TRAILER);
    put_uv(&rec, 10);
    put_uv(&rec, 1ull << 60);
    put_uv(&rec, 1ull << 60);
    put_uv(&rec, 1ull << 60);
    file_with(&f, &rec);
    check("2^62-byte alloc, trailer of 2^60", &f, NULL);

    check_module_unloads();

    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
