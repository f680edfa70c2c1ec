/*
 * libFuzzer harness: the input is a PyTorch memory snapshot (a pickle),
 * parsed by the data-only pickle reader and then reported as
 * `vramtrace report [--json] SNAPSHOT.pickle` would (text and JSON).
 * Seeds: corpus/snapshot/ (real snapshots cut down by make_snapshot_seeds.py)
 * and, read-only, tests/data/pytorch-snapshots/ (cut to -max_len).
 *
 * Checks beyond "no crash": a pickle the reader refuses must make the
 * report fail with status 2 and a "byte N" message, never a report; a
 * report's JSON must be valid JSON; a snapshot that expands to more
 * elements than the budget (snapshot.h, counted here apart from the
 * loader) must be refused, never walked (shared objects repeated
 * N^3 times).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json_check.h"
#include "pickle_reader.h"
#include "report_document.h"
#include "snapshot.h"

#define WALK_BUDGET 100000 /* nodes visited per input: the graph may be cyclic */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REQUIRE(cond, ...)                                             \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "fuzz_snapshot: check failed: " __VA_ARGS__); \
            fputc('\n', stderr);                                       \
            abort();                                                   \
        }                                                              \
    } while (0)

static volatile size_t sink;

/* Reads every node reachable within a budget (memoized values are shared
 * and may form cycles, so no generic walk may be unbounded). */
static void walk(const struct vt_pickle_value *v, int depth, size_t *budget)
{
    if (!v || depth > 64 || *budget == 0)
        return;
    (*budget)--;
    sink += v->type + v->len;
    if (v->type == VT_PICKLE_STR)
        sink += strlen(v->s);
    if (v->type == VT_PICKLE_LIST || v->type == VT_PICKLE_TUPLE || v->type == VT_PICKLE_DICT)
        for (size_t i = 0; i < v->n; i++)
            walk(v->items[i], depth + 1, budget);
}

static uint64_t frame_count(const struct vt_pickle_value *d)
{
    const struct vt_pickle_value *f = vt_pickle_dict_get(d, "frames");
    return vt_pickle_is_seq(f) ? f->n : 0;
}

/* The elements the snapshot's analysis would walk - segments, blocks,
 * trace entries and the frames of each - as the snapshot schema names them,
 * counted up to limit + 1 (the count itself must stay bounded). */
static uint64_t expanded(const struct vt_pickle_value *root, uint64_t limit)
{
    const struct vt_pickle_value *segs = root, *traces = NULL;
    if (root && root->type == VT_PICKLE_DICT) {
        segs = vt_pickle_dict_get(root, "segments");
        traces = vt_pickle_dict_get(root, "device_traces");
    }
    uint64_t n = 0;
    for (size_t k = 0; vt_pickle_is_seq(segs) && k < segs->n && n <= limit; k++) {
        const struct vt_pickle_value *s = segs->items[k];
        if (!s || s->type != VT_PICKLE_DICT)
            break;
        n += 1 + frame_count(s);
        const struct vt_pickle_value *blocks = vt_pickle_dict_get(s, "blocks");
        for (size_t b = 0; vt_pickle_is_seq(blocks) && b < blocks->n && n <= limit; b++)
            if (blocks->items[b] && blocks->items[b]->type == VT_PICKLE_DICT)
                n += 1 + frame_count(blocks->items[b]);
    }
    for (size_t d = 0; vt_pickle_is_seq(traces) && d < traces->n && n <= limit; d++) {
        const struct vt_pickle_value *t = traces->items[d];
        for (size_t k = 0; vt_pickle_is_seq(t) && k < t->n && n <= limit; k++)
            if (t->items[k] && t->items[k]->type == VT_PICKLE_DICT)
                n += 1 + frame_count(t->items[k]);
    }
    return n;
}

static FILE *null_out(void)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    REQUIRE(null != NULL, "cannot open /dev/null");
    return null;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vt_pickle_doc *doc;
    char err[512];
    bool parsed = vt_pickle_parse(data, size, "fuzz", &doc, err, sizeof err) == 0;
    uint64_t limit = (uint64_t)size * VT_SNAP_ELEMENTS_PER_BYTE + VT_SNAP_ELEMENTS_BASE;
    uint64_t elements = 0;
    if (parsed) {
        size_t budget = WALK_BUDGET;
        walk(vt_pickle_doc_root(doc), 0, &budget);
        elements = expanded(vt_pickle_doc_root(doc), limit);
        vt_pickle_doc_free(doc);
    } else {
        REQUIRE(strstr(err, "fuzz: byte ") == err, "parse error without an offset: %s", err);
    }

    int fd = memfd_create("vt-fuzz-snapshot", MFD_CLOEXEC);
    REQUIRE(fd >= 0 && write(fd, data, size) == (ssize_t)size, "memfd failed");
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct vt_report_options opt = {.layout.top = 1 + size % 12, .layout.text_frames = size % 5,
                                    .layout.width = size % 7 ? 20 + size % 100 : 0,
                                    .layout.full_stacks = size % 11 == 0};
    opt.sym.disabled = true;
    char *snapshots[] = {path};
    struct vt_report_inputs in = {.snapshots = snapshots, .nsnapshots = 1};

    char *msg = NULL, *json = NULL;
    size_t msg_len = 0, json_len = 0;
    FILE *errs = open_memstream(&msg, &msg_len);
    FILE *out = open_memstream(&json, &json_len);
    REQUIRE(errs && out, "open_memstream failed");
    int status = vt_report_document(NULL, &in, &opt, true, out, errs);
    fclose(errs);
    fclose(out);
    REQUIRE(status == 0 || status == 2, "report status %d", status);
    if (!parsed)
        REQUIRE(status == 2, "the pickle reader refused the file, the report did not");
    REQUIRE(elements <= limit || status == 2,
            "a snapshot of more than %llu elements (segments, blocks, entries, frames) from "
            "%zu bytes was reported, not refused", (unsigned long long)limit, size);
    if (status == 2) {
        REQUIRE(strstr(msg, path) && strstr(msg, "byte "), "error without file and offset: %s",
                msg);
    } else {
        size_t bad = 0;
        REQUIRE(vt_json_check(json, json_len, &bad), "snapshot JSON invalid at byte %zu of %zu",
                bad, json_len);
        REQUIRE(vt_report_document(NULL, &in, &opt, false, null_out(), null_out()) == 0,
                "text report disagrees with the JSON one");
    }
    free(msg);
    free(json);
    close(fd);
    return 0;
}
