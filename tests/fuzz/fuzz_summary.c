/*
 * libFuzzer harness: the input is a summary (`vramtrace report --summary`,
 * analyzer/report/job/job_summary.h), reported as `vramtrace report [--json]
 * SUMMARY` would, alone and with a valid summary of another node beside it
 * (the merge). Seeds: corpus/summary/ (summaries of the launcher test job).
 *
 * Checks beyond "no crash": one bad file among two is left out and the
 * other reported (status 3), never a half-merged job; a refused file is
 * named in the message; a report's JSON is valid JSON; the text report
 * agrees with the JSON one on the status.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "report_document.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond, ...)                                                  \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "fuzz_summary: check failed: " __VA_ARGS__);   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* A valid summary of another node, for the merge. */
static const char other[] =
    "{\"vramtrace_summary\":1,\"resolution_ns\":10000000000,\"jobs\":[{\"session\":\"s1\","
    "\"session_start_unix_ns\":1,\"session_host\":\"h\",\"session_command\":\"c\",\"processes\":"
    "[{\"pid\":7,\"rank\":1,\"local_rank\":0,\"world_size\":2,\"host\":\"n2\",\"command\":\"x\","
    "\"devices\":[{\"device\":0,\"gpu_uuid\":null,\"gpu_name\":null,\"capacity_bytes\":0,"
    "\"peak_bytes\":5,\"failed_requests\":0}],\"phases\":[{\"name\":\"train\",\"peak_bytes\":5}],"
    "\"timeline\":{\"first_column\":3,\"max_bytes\":[5]}}],\"failures\":[]}]}";

static int memfile(const void *data, size_t size, char *path, size_t n)
{
    int fd = memfd_create("vt-fuzz-summary", MFD_CLOEXEC);
    REQUIRE(fd >= 0 && write(fd, data, size) == (ssize_t)size, "memfd failed");
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return fd;
}

static int report(char **paths, size_t n, bool json, size_t size, char **msg)
{
    struct vt_report_options opt = {.layout.top = 10, .layout.text_frames = 6};
    if (size % 3 == 0) {
        opt.select.has_rank = true;
        opt.select.rank = size % 4;
    }
    char *out = NULL, *m = NULL;
    size_t out_len = 0, m_len = 0;
    FILE *o = open_memstream(&out, &out_len), *e = open_memstream(&m, &m_len);
    REQUIRE(o && e, "open_memstream failed");
    int status = vt_report_summaries(paths, n, &opt, json, NULL, o, e);
    fclose(o);
    fclose(e);
    if (json && status != 2) {
        size_t bad = 0;
        REQUIRE(vt_json_check(out, out_len, &bad), "JSON invalid at byte %zu of %zu", bad, out_len);
    }
    free(out);
    *msg = m;
    return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], other_path[64];
    int fd = memfile(data, size, path, sizeof path);
    int ofd = memfile(other, sizeof other - 1, other_path, sizeof other_path);
    char *alone[] = {path}, *both[] = {other_path, path};
    char *m1, *m2, *m3;
    int json = report(alone, 1, true, size, &m1);
    int text = report(alone, 1, false, size, &m2);
    REQUIRE(json == text, "JSON status %d, text status %d", json, text);
    REQUIRE(json == 0 || json == 2, "status %d for one summary", json);
    int merged = report(both, 2, true, size, &m3);
    if (strstr(m1, path) == NULL) {
        /* read: the merge reports both (or the filter left nothing), or
         * refuses it for another timeline resolution, by name */
        REQUIRE(merged == 0 || merged == 2 ||
                    (merged == 3 && strstr(m3, path) && strstr(m3, "resolution")),
                "merge status %d: %s", merged, m3);
    } else {
        /* refused: named, and the other node still reported */
        REQUIRE(merged == 3 || merged == 2, "a refused file made the merge exit %d", merged);
        REQUIRE(strstr(m3, path) != NULL, "the refused file is not named: %s", m3);
    }
    free(m1);
    free(m2);
    free(m3);
    close(fd);
    close(ofd);
    return 0;
}
