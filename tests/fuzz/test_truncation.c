/*
 * A real trace (written by the tracer on the simulated GPU, committed in
 * corpus/trace_file/) cut at every byte offset, as a killed process or a
 * full disk leaves it, through the reader and the whole `report` path.
 *
 *     test_truncation VRAMTRACE_BINARY TRACE...
 *
 * Truth comes from the file's own chunk headers, walked here without the
 * analyzer: a prefix of K bytes must yield exactly the records of the chunks
 * that end at or before K, be called truncated unless K is the whole file,
 * and report with exit status 0 (an empty file: status 2 and a message
 * naming the file and byte 0). The JSON report of every prefix must be
 * valid JSON, and the replay must have seen exactly the memory events of
 * the complete chunks. The CLI itself runs on a sample of the prefixes.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis.h"
#include "json_check.h"
#include "report.h"
#include "trace_reader.h"

#define MAX_CHUNKS 64

static int failures;

#define EXPECT(cond, ...)                                      \
    do {                                                       \
        if (!(cond)) {                                         \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                      \
            fputc('\n', stderr);                               \
            if (++failures > 20)                               \
                exit(1);                                       \
        }                                                      \
    } while (0)

struct truth {
    size_t nchunks;
    uint64_t chunk_end[MAX_CHUNKS];    /* one past each chunk */
    uint64_t chunk_records[MAX_CHUNKS];
    uint64_t chunk_mem[MAX_CHUNKS];    /* VT_REC_MEM records */
};

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    uint8_t *d = malloc((size_t)n + 1);
    if (!d || fread(d, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    fclose(f);
    *len = (size_t)n;
    return d;
}

/* Chunk boundaries from the headers; records per chunk from one full read
 * (grouped by the chunk offset each record carries). */
static void learn(const uint8_t *d, size_t len, struct truth *t)
{
    memset(t, 0, sizeof *t);
    uint64_t pos = VT_PREAMBLE_SIZE;
    while (pos + VT_CHUNK_HEADER_SIZE <= len && t->nchunks < MAX_CHUNKS) {
        pos += VT_CHUNK_HEADER_SIZE + vt_get_le32(d + pos + 4);
        t->chunk_end[t->nchunks++] = pos;
    }
    if (pos != len || t->nchunks < 2) {
        fprintf(stderr, "test_truncation: the seed must be a complete trace of several chunks\n");
        exit(1);
    }
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(d, len, "full", &r, &err) != 0)
        exit(1);
    struct vt_record rec;
    uint64_t start = VT_PREAMBLE_SIZE;
    size_t chunk = 0;
    while (vt_reader_next(r, &rec) > 0) {
        while (chunk < t->nchunks && rec.chunk_offset >= t->chunk_end[chunk])
            start = t->chunk_end[chunk++];
        EXPECT(rec.chunk_offset == start, "record in chunk at %" PRIu64 ", headers say %" PRIu64,
               rec.chunk_offset, start);
        t->chunk_records[chunk]++;
        t->chunk_mem[chunk] += rec.type == VT_REC_MEM;
    }
    EXPECT(vt_reader_has_trailer(r) && !vt_reader_truncated(r), "the seed is not a clean trace");
    vt_reader_close(r);
}

static void expected_at(const struct truth *t, uint64_t k, uint64_t *records, uint64_t *mem,
                        uint64_t *end)
{
    *records = *mem = 0;
    *end = k < VT_PREAMBLE_SIZE ? k : VT_PREAMBLE_SIZE;
    for (size_t i = 0; i < t->nchunks && t->chunk_end[i] <= k; i++) {
        *records += t->chunk_records[i];
        *mem += t->chunk_mem[i];
        *end = t->chunk_end[i];
    }
}

static void check_reader(const uint8_t *d, size_t len, size_t k, const struct truth *t)
{
    struct vt_reader *r;
    struct vt_read_error err;
    int rc = vt_reader_open_memory(d, k, "cut", &r, &err);
    if (k == 0) {
        EXPECT(rc != 0 && strstr(err.message, "cut: byte 0: "), "empty prefix: %s",
               rc ? err.message : "opened");
        if (rc == 0)
            vt_reader_close(r);
        return;
    }
    EXPECT(rc == 0, "prefix %zu: open failed: %s", k, err.message);
    if (rc != 0)
        return;
    struct vt_record rec;
    int n;
    while ((n = vt_reader_next(r, &rec)) > 0)
        ;
    uint64_t want_records, want_mem, want_end;
    expected_at(t, k, &want_records, &want_mem, &want_end);
    EXPECT(n == 0, "prefix %zu: error: %s", k, vt_reader_error(r)->message);
    EXPECT(vt_reader_records(r) == want_records, "prefix %zu: %" PRIu64 " records, want %" PRIu64,
           k, vt_reader_records(r), want_records);
    EXPECT(vt_reader_truncated(r) == (k < len), "prefix %zu of %zu: truncated=%d", k, len,
           vt_reader_truncated(r));
    EXPECT(vt_reader_end_offset(r) == want_end, "prefix %zu: readable to %" PRIu64 ", want %" PRIu64,
           k, vt_reader_end_offset(r), want_end);
    vt_reader_close(r);
}

/* The library half of `vramtrace report`: analysis, then both renderings. */
static void check_report(const uint8_t *d, size_t k, const struct truth *t, FILE *null)
{
    int fd = memfd_create("cut", MFD_CLOEXEC);
    if (fd < 0 || write(fd, d, k) != (ssize_t)k)
        exit(1);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    char *paths[] = {path};
    char *errs = NULL;
    size_t errs_len = 0;
    FILE *err = open_memstream(&errs, &errs_len);
    struct vt_analysis a;
    int status = vt_analysis_run(&a, paths, 1, err);
    fclose(err);
    if (k == 0) {
        EXPECT(status == 2 && strstr(errs, path) && strstr(errs, "byte 0"),
               "empty file: status %d, message '%s'", status, errs);
    } else {
        uint64_t want_records, want_mem, want_end;
        expected_at(t, k, &want_records, &want_mem, &want_end);
        EXPECT(status == 0, "prefix %zu: report status %d: %s", k, status, errs);
        EXPECT(a.ninputs == 1 && a.inputs[0].replay.mem_events == want_mem,
               "prefix %zu: replay saw %" PRIu64 " memory events, want %" PRIu64, k,
               a.ninputs ? a.inputs[0].replay.mem_events : 0, want_mem);
        struct vt_report_options opt = {.layout.top = 10, .layout.text_frames = 6, .layout.width = 100,
                                        .sym.disabled = true};
        struct vt_report rep;
        vt_report_init(&rep, &a, &opt);
        EXPECT(vt_report_text(&rep, null) == 0, "prefix %zu: text report failed", k);
        char *json = NULL;
        size_t json_len = 0;
        FILE *mem = open_memstream(&json, &json_len);
        EXPECT(vt_report_json(&rep, mem) == 0, "prefix %zu: JSON report failed", k);
        fclose(mem);
        size_t bad = 0;
        EXPECT(vt_json_check(json, json_len, &bad), "prefix %zu: invalid JSON at %zu", k, bad);
        free(json);
        vt_report_free(&rep);
    }
    free(errs);
    vt_analysis_free(&a);
    close(fd);
}

/* The real binary on one prefix: its exit status and what it says. */
static void check_cli(const char *vramtrace, const char *dir, const uint8_t *d, size_t len,
                      size_t k)
{
    char path[4096], out[4096];
    snprintf(path, sizeof path, "%s/cut-%zu.vtrace", dir, k);
    snprintf(out, sizeof out, "%s/stderr-%zu", dir, k);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, k, f) != k || fclose(f) != 0)
        exit(1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen(out, "w", stderr))
            _exit(127);
        execl(vramtrace, vramtrace, "report", "--no-symbols", "--json", path, (char *)NULL);
        _exit(127);
    }
    int ws;
    waitpid(pid, &ws, 0);
    size_t elen;
    char *msg = (char *)slurp(out, &elen);
    msg[elen] = '\0';
    int want = k == 0 ? 2 : 0;
    EXPECT(WIFEXITED(ws) && WEXITSTATUS(ws) == want,
           "vramtrace report on a %zu-byte prefix: %s %d (want exit %d); stderr: %s", k,
           WIFEXITED(ws) ? "exit" : "signal", WIFEXITED(ws) ? WEXITSTATUS(ws) : WTERMSIG(ws),
           want, msg);
    if (k == 0)
        EXPECT(strstr(msg, path) && strstr(msg, "byte 0"), "empty file: stderr '%s'", msg);
    else if (k < len)
        EXPECT(strstr(msg, path) && strstr(msg, "truncated"),
               "prefix %zu: no truncation note on stderr: '%s'", k, msg);
    free(msg);
    unlink(path);
    unlink(out);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: test_truncation VRAMTRACE TRACE...\n", stderr);
        return 2;
    }
    FILE *null = fopen("/dev/null", "w");
    char dir[] = "/tmp/vt-truncation-XXXXXX";
    if (!null || !mkdtemp(dir))
        return 1;
    for (int i = 2; i < argc; i++) {
        size_t len;
        uint8_t *d = slurp(argv[i], &len);
        if (!d) {
            fprintf(stderr, "test_truncation: %s: cannot read\n", argv[i]);
            return 1;
        }
        struct truth t;
        learn(d, len, &t);
        for (size_t k = 0; k <= len; k++) {
            check_reader(d, len, k, &t);
            check_report(d, k, &t, null);
        }
        /* The binary: around every chunk boundary and a stride between. */
        for (size_t k = 0; k <= len; k++) {
            bool boundary = k <= VT_PREAMBLE_SIZE + 1;
            for (size_t c = 0; c < t.nchunks; c++)
                boundary |= k + 1 >= t.chunk_end[c] && k <= t.chunk_end[c] + 1;
            if (boundary || k % 211 == 0)
                check_cli(argv[1], dir, d, len, k);
        }
        printf("%s: %zu prefixes through reader and report, %zu chunks\n", argv[i], len + 1,
               t.nchunks);
        free(d);
    }
    rmdir(dir);
    fclose(null);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
