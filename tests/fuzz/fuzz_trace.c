/* Everything the analyzer does with trace files; see fuzz_trace.h. */
#define _GNU_SOURCE
#include "fuzz_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis.h"
#include "commands.h"
#include "json_check.h"
#include "python_frames.h"
#include "report.h"
#include "trace_reader.h"

#define MAX_IMAGES 8

/* A failed check is a finding: abort so that libFuzzer (or the regression
 * driver under the sanitizers) reports it with the input. */
#define REQUIRE(cond, ...)                                         \
    do {                                                           \
        if (!(cond)) {                                             \
            fprintf(stderr, "fuzz_trace: check failed: " __VA_ARGS__); \
            fputc('\n', stderr);                                   \
            abort();                                               \
        }                                                          \
    } while (0)

static volatile size_t sink; /* keeps the compiler from dropping reads */

static void touch(const char *s)
{
    if (s)
        sink += strlen(s);
}

/* Follows a stack from its node to the root: parents must lead there in
 * fewer steps than there are nodes. */
static void walk_stack(const struct vt_reader *r, uint64_t node)
{
    uint64_t parent, ip, steps = 0;
    while (node != 0) {
        REQUIRE(vt_reader_stack_node(r, node, &parent, &ip), "stack node %llu unknown",
                (unsigned long long)node);
        REQUIRE(++steps <= vt_reader_stack_node_count(r), "stack of node %llu loops",
                (unsigned long long)node);
        if (vt_ip_is_py_frame(ip)) { /* a Python frame: resolved from the trace */
            struct vt_frame f;
            memset(&f, 0, sizeof f);
            vt_python_frame(r, ip, &f);
            touch(f.function);
            touch(f.file);
        }
        sink += ip;
        node = parent;
    }
}

static void touch_record(const struct vt_reader *r, const struct vt_record *rec)
{
    touch(vt_record_type_name(rec->type));
    switch (rec->type) {
    case VT_REC_PROCESS: {
        const struct vt_process_info *p = rec->u.process;
        touch(p->hostname);
        touch(p->exe);
        touch(p->tool_version);
        for (uint64_t i = 0; i < p->argc; i++)
            touch(p->argv[i]);
        for (uint64_t i = 0; i < p->nenv; i++) {
            touch(p->env[i].name);
            touch(p->env[i].value);
        }
        break;
    }
    case VT_REC_MODULE:
        touch(rec->u.module->path);
        for (size_t i = 0; i < rec->u.module->build_id_len; i++)
            sink += rec->u.module->build_id[i];
        break;
    case VT_REC_THREAD:
        touch(rec->u.thread->name);
        break;
    case VT_REC_DEVICE:
        touch(rec->u.device->name);
        break;
    case VT_REC_STRING:
        sink += rec->u.string.len;
        REQUIRE(rec->u.string.text[rec->u.string.len] == '\0', "string not terminated");
        break;
    case VT_REC_API:
        touch(rec->u.api.name);
        break;
    case VT_REC_PY_CODE:
        touch(rec->u.py_code->qualname);
        touch(rec->u.py_code->filename);
        break;
    case VT_REC_MEM:
        touch(vt_reader_api(r, rec->u.mem.api));
        touch(vt_reader_api(r, rec->u.mem.label));
        touch(vt_kind_name(rec->u.mem.kind));
        touch(vt_op_name(rec->u.mem.op));
        if (vt_reader_thread(r, rec->u.mem.thread))
            touch(vt_reader_thread(r, rec->u.mem.thread)->name);
        if (rec->u.mem.device >= 0)
            (void)vt_reader_device(r, (uint64_t)rec->u.mem.device);
        walk_stack(r, rec->u.mem.stack);
        break;
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK:
        touch(vt_reader_string(r, rec->u.range.domain));
        touch(vt_reader_string(r, rec->u.range.name));
        break;
    default:
        break;
    }
}

/* Decodes one image as `vramtrace dump` would; returns the reader's final
 * status (0 end of data, -1 error, -2 not even opened). */
static int decode(const struct vt_fuzz_image *img)
{
    struct vt_reader *r;
    struct vt_read_error err;
    if (vt_reader_open_memory(img->data, img->len, "fuzz", &r, &err) != 0) {
        REQUIRE(strstr(err.message, "fuzz: ") == err.message, "open error without the name: %s",
                err.message);
        return -2;
    }
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        touch_record(r, &rec);
    REQUIRE(vt_reader_next(r, &rec) == rc, "next() after the end changed its answer");
    if (rc < 0)
        REQUIRE(strstr(vt_reader_error(r)->message, ": byte ") != NULL,
                "error without a byte offset: %s", vt_reader_error(r)->message);
    REQUIRE((vt_reader_truncation_note(r) != NULL) == vt_reader_truncated(r),
            "truncation note and flag disagree");
    REQUIRE(vt_reader_end_offset(r) <= img->len, "end offset past the file");
    for (size_t i = 0; i < vt_reader_module_count(r); i++)
        touch(vt_reader_module_at(r, i)->path);
    /* Whatever the table offers after an error must be whole: the report
     * prints argv[0..argc) and the environment without further checks. */
    const struct vt_process_info *p = vt_reader_process(r);
    if (p) {
        for (uint64_t i = 0; i < p->argc; i++)
            REQUIRE(p->argv && p->argv[i], "process record: argument %llu of %llu missing",
                    (unsigned long long)i, (unsigned long long)p->argc);
        for (uint64_t i = 0; i < p->nenv; i++)
            REQUIRE(p->env && p->env[i].name && p->env[i].value,
                    "process record: variable %llu of %llu missing", (unsigned long long)i,
                    (unsigned long long)p->nenv);
        REQUIRE(p->hostname && p->exe && p->tool_version, "process record: a string missing");
    }
    vt_reader_close(r);
    return rc;
}

/* ---- the report path through real files ---- */

static FILE *null_out(void)
{
    static FILE *null;
    if (!null) {
        null = fopen("/dev/null", "w");
        REQUIRE(null != NULL, "cannot open /dev/null");
        /* `vramtrace dump` writes to stdout. */
        REQUIRE(freopen("/dev/null", "w", stdout) != NULL, "cannot redirect stdout");
    }
    return null;
}

/* A file with the image's bytes, without touching the disk. */
static int image_fd(const struct vt_fuzz_image *img, char *path, size_t n)
{
    int fd = memfd_create("vt-fuzz-trace", MFD_CLOEXEC);
    REQUIRE(fd >= 0, "memfd_create failed");
    size_t done = 0;
    while (done < img->len) {
        ssize_t k = write(fd, img->data + done, img->len - done);
        REQUIRE(k > 0, "write to memfd failed");
        done += (size_t)k;
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

static void render(const struct vt_analysis *a, const struct vt_fuzz_options *fo)
{
    /* Stack lines fitted to widths from narrow to none; every frame (no
     * fitting, no folding) with one frames setting. */
    struct vt_report_options opt = {.layout.top = fo->top ? fo->top : 10, .layout.text_frames = fo->frames,
                                    .layout.width = 20u + 16u * (fo->top % 8u),
                                    .layout.full_stacks = fo->frames == 3};
    opt.sym.disabled = true;
    if (a->ninputs > 0) {
        const struct vt_reader *r = a->inputs[0].reader;
        if (fo->phase_filter)
            opt.select.phase = vt_reader_string(r, 1) ? vt_reader_string(r, 1) : "none";
        if (fo->pid_filter && vt_reader_process(r)) {
            opt.select.has_pid = true;
            opt.select.pid = vt_reader_process(r)->pid;
        }
    }
    if (fo->device_filter) {
        opt.select.has_device = true;
        opt.select.device = 0;
    }
    struct vt_report rep;
    vt_report_init(&rep, a, &opt);
    REQUIRE(vt_report_text(&rep, null_out()) == 0, "text report failed");

    char *json = NULL;
    size_t json_len = 0;
    FILE *mem = open_memstream(&json, &json_len);
    REQUIRE(mem != NULL, "open_memstream failed");
    REQUIRE(vt_report_json(&rep, mem) == 0, "JSON report failed");
    REQUIRE(fclose(mem) == 0, "memstream failed");
    size_t bad = 0;
    REQUIRE(vt_json_check(json, json_len, &bad), "report --json is not valid JSON at byte %zu of %zu",
            bad, json_len);
    free(json);
    vt_report_free(&rep);
}

/* `dump --json` with its stdout caught: every line must be a JSON value
 * (scripts read it line by line). Returns its exit status. */
static int dump_json_lines(char **argv)
{
    int fd = memfd_create("vt-fuzz-dump", MFD_CLOEXEC);
    int saved = dup(STDOUT_FILENO);
    REQUIRE(fd >= 0 && saved >= 0, "memfd/dup failed");
    fflush(stdout);
    dup2(fd, STDOUT_FILENO);
    int status = vt_cmd_dump(3, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    off_t len = lseek(fd, 0, SEEK_END);
    char *text = len > 0 ? mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    REQUIRE(len <= 0 || text != MAP_FAILED, "mmap failed");
    for (off_t pos = 0; pos < len;) {
        const char *nl = memchr(text + pos, '\n', (size_t)(len - pos));
        REQUIRE(nl != NULL, "dump --json: last line not terminated");
        size_t line = (size_t)(nl - (text + pos)), bad = 0;
        REQUIRE(vt_json_check(text + pos, line, &bad), "dump --json: line at byte %lld is not JSON (at %zu)",
                (long long)pos, bad);
        pos += (off_t)line + 1;
    }
    if (len > 0)
        munmap(text, (size_t)len);
    close(fd);
    return status;
}

void vt_fuzz_trace_images(const struct vt_fuzz_image *images, size_t n,
                          const struct vt_fuzz_options *opt)
{
    if (n > MAX_IMAGES)
        n = MAX_IMAGES;
    bool bad[MAX_IMAGES], any_bad = false;
    for (size_t i = 0; i < n; i++) {
        bad[i] = decode(&images[i]) < 0;
        any_bad |= bad[i];
    }

    FILE *null = null_out();
    char paths[MAX_IMAGES][64];
    char *argv[MAX_IMAGES];
    int fds[MAX_IMAGES];
    for (size_t i = 0; i < n; i++) {
        fds[i] = image_fd(&images[i], paths[i], sizeof paths[i]);
        argv[i] = paths[i];
    }
    struct vt_analysis a;
    int status = vt_analysis_run(&a, argv, n, null);
    REQUIRE(status == (any_bad ? 2 : 0), "report exit status %d, but the reader %s", status,
            any_bad ? "rejected a file" : "accepted every file");
    /* The CLI renders only a clean analysis; the analysis promises to hold
     * what was read either way, so both are rendered here. */
    render(&a, opt);
    vt_analysis_free(&a);

    for (size_t i = 0; i < n; i++) {
        char *dump_text[] = {"dump", paths[i], NULL};
        char *dump_json[] = {"dump", "--json", paths[i], NULL};
        int want = bad[i] ? 2 : 0;
        int s1 = vt_cmd_dump(2, dump_text);
        int s2 = dump_json_lines(dump_json);
        REQUIRE(s1 == want && s2 == want, "dump exit status %d / %d, the reader says %d", s1, s2,
                want);
        close(fds[i]);
    }
    fflush(stdout);
}
