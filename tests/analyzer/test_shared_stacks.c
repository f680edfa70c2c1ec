/*
 * A job's ranks share their stack tables (analyzer/trace/stack_share.h):
 * every rank's frames, read from the analysis of all of them, must be what
 * that rank's trace says read alone - with the ranks' libraries at bases of
 * their own, recorded in another order, one loaded late, Python frames
 * whose code ids name other functions in each rank, and ranks that diverge
 * midway (by an ip, by a parent) or early. And the nodes the ranks have in
 * common must be kept once, or the sharing is not there to test. Twice:
 * the ranks replayed side by side (one host: one group, each rank's table
 * offered after the group), and each on a host of its own (a group each,
 * in turn: a rank's nodes compared with the share's table as they are
 * read, before its modules are all recorded); and, without Python frames,
 * two ranks then five side by side (where a rank whose modules lie where
 * the table's rank had them takes its nodes by their records' bytes).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis.h"
#include "input_tables.h"
#include "symbolize.h"
#include "trace_builder.h"

#define RANKS 7
#define CHAIN 300 /* nodes of a long call chain, over several 64-node words */
#define NODES (11 + CHAIN)

enum { MOD_MAIN = 1, MOD_TORCH = 2, MOD_LATE = 3 };

/* How a rank differs from rank 0 besides its module bases. */
struct rank_shape {
    uint64_t main_base, torch_base, late_base;
    bool torch_first;     /* its module records in another order */
    uint64_t other_ip_at; /* from this node on its ips are others (0: never) */
    uint64_t other_parent_at; /* this node's parent is another (0: never) */
};

static const struct rank_shape shapes[RANKS] = {
    {0x7f1000000000, 0x7f2000000000, 0x7f3000000000, false, 0, 0},
    {0x7f1000400000, 0x7f2000800000, 0x7f3000010000, true, 0, 0},
    {0x7f5000000000, 0x7f6000000000, 0x7f7000000000, false, 250, 0}, /* late, by an ip */
    {0x7f1000000000, 0x7f2000000000, 0x7f3000000000, false, 9, 0},   /* early */
    {0x7f1100000000, 0x7f2000000000, 0x7f3300000000, true, 0, 0},
    {0x7f1000000000, 0x7f2400000000, 0x7f3000000000, false, 0, 240}, /* late, by a parent */
    {0x7f1000000000, 0x7f2000000000, 0x7f3000000000, false, 0, 250}, /* the same bases: by bytes */
};

/* Whether nodes 6 and 7 are Python frames; without them, ips in no module,
 * and a rank that follows a table with its modules where that table's rank
 * had them reads its nodes by their bytes (trace_reader.c,
 * follow_records). */
static bool python_frames;

static const uint8_t build_main[] = {0xaa, 1, 2, 3}, build_torch[] = {0xbb, 4, 5, 6},
                     build_late[] = {0xcc, 7};

static void module(struct tb *b, uint64_t id, uint64_t base, const char *path, const uint8_t *bid,
                   size_t n)
{
    vt_encode_module(&b->enc, id, base, base, base + 0x100000, path, bid, n);
}

/* Node k's ip in rank r: an offset in a module, a Python frame or an
 * address in no module; from other_ip_at on, another offset. */
static uint64_t ip_of(const struct rank_shape *s, uint64_t k, uint64_t main_off)
{
    uint64_t other = s->other_ip_at && k >= s->other_ip_at ? 8 : 0;
    return s->main_base + main_off + other;
}

/* Where the ranks run, so how the analysis groups them. */
enum hosts {
    ONE_HOST,   /* one group: each rank's table offered after it */
    OWN_HOSTS,  /* a group each, in turn: each read alone, following */
    TWO_HOSTS,  /* ranks 0 to 3, then the others side by side, following */
};

static char *write_rank(int r, enum hosts hosts)
{
    const struct rank_shape *s = &shapes[r];
    struct tb b;
    tb_init(&b);
    char host[32] = "testhost";
    if (hosts == OWN_HOSTS)
        snprintf(host, sizeof host, "node%d", r);
    if (hosts == TWO_HOSTS)
        snprintf(host, sizeof host, "node%d", r < 4 ? 0 : 1);
    tb_header_on_host(&b, 100 + (uint64_t)r, 1, 1ull << 34, host); /* nodes 1..3: no module */
    if (s->torch_first)
        module(&b, MOD_TORCH, s->torch_base, "/opt/torch/lib/libtorch.so", build_torch, 4);
    module(&b, MOD_MAIN, s->main_base, "/opt/app/libmain.so", build_main, 4);
    if (!s->torch_first)
        module(&b, MOD_TORCH, s->torch_base, "/opt/torch/lib/libtorch.so", build_torch, 4);
    /* the same code ids, other functions in each rank */
    char name[32];
    int len = snprintf(name, sizeof name, "forward_of_rank%d", r);
    vt_encode_py_code(&b.enc, 1, name, (size_t)len, "model.py", 8, 1);
    vt_encode_py_code(&b.enc, 2, "step", 4, "train.py", 8, 1);
    uint64_t k = 4;
#define NODE(parent, ip)                                                                       \
    do {                                                                                       \
        uint64_t p_ = s->other_parent_at == k ? 1 : (parent);                                  \
        vt_encode_stack_node(&b.enc, p_, (ip));                                                \
        k++;                                                                                   \
    } while (0)
    NODE(0, ip_of(s, k, 0x1000));                                 /* 4 */
    NODE(4, ip_of(s, k, 0x2000));                                 /* 5 */
    NODE(5, python_frames ? vt_py_frame_ip(1, 10) : 0x6666);     /* 6 */
    NODE(6, python_frames ? vt_py_frame_ip(2, 20) : 0x7777);     /* 7 */
    NODE(7, s->torch_base + 0x3000);                              /* 8 */
    module(&b, MOD_LATE, s->late_base, "/opt/app/liblate.so", build_late, 2); /* loaded late */
    NODE(8, s->late_base + 0x100 + (s->other_ip_at == 9 ? 0x40 : 0)); /* 9 */
    NODE(5, s->torch_base + 0x4000);                              /* 10: a branch */
    NODE(10, 0x5555);                                             /* 11: in no module */
    for (uint64_t i = 0; i < CHAIN; i++)
        NODE(i % 7 == 3 ? 10 : k - 1, ip_of(s, k, 0x6000 + 0x10 * i));
#undef NODE
    assert_int_equal(k - 1, NODES);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 10, 0, 0x10000, 1 << 20, NODES);
    tb_alloc(&b, VT_KIND_DEVICE, TB_MAIN, 20, 0, 0x20000, 1 << 20, 9);
    tb_trailer(&b, 30);
    char *path;
    assert_true(asprintf(&path, "%s/rank%d.vtrace", tb_tmpdir, r) > 0);
    assert_int_equal(tb_write(&b, path), 0);
    tb_free(&b);
    return path;
}

/* A node's frames as text: every field a report may print. */
struct text {
    char buf[1 << 16];
    size_t len;
};

static void add_frame(void *ctx, const struct vt_frame *f)
{
    struct text *t = ctx;
    int n = snprintf(t->buf + t->len, sizeof t->buf - t->len, "%#llx %s+%#llx %s %s:%llu | ",
                     (unsigned long long)f->ip, f->module ? f->module : "-",
                     (unsigned long long)f->module_offset, f->function ? f->function : "-",
                     f->file ? f->file : "-", (unsigned long long)f->line);
    assert_true(n > 0 && (size_t)n < sizeof t->buf - t->len);
    t->len += (size_t)n;
}

/* Each node's parent, ip and frames as the rank's trace says, read alone. */
struct truth {
    uint64_t parent[NODES + 1], ip[NODES + 1];
    char *frames[NODES + 1];
};

static struct text text; /* a node's frames, being written */

static void read_alone(const char *path, struct truth *t)
{
    struct vt_reader *r;
    struct vt_read_error e;
    assert_int_equal(vt_reader_open(path, &r, &e), 0);
    struct vt_record rec;
    int rc;
    while ((rc = vt_reader_next(r, &rec)) > 0)
        ;
    assert_int_equal(rc, 0);
    assert_int_equal(vt_reader_stack_node_count(r), NODES);
    struct vt_symbolize_options opt = {.disabled = true};
    struct vt_symbolizer *sym = vt_symbolizer_new(r, &opt);
    for (uint64_t id = 1; id <= NODES; id++) {
        assert_true(vt_reader_stack_node(r, id, &t->parent[id], &t->ip[id]));
        text.len = 0;
        vt_stack_frames(r, sym, id, 0, add_frame, &text);
        assert_non_null(t->frames[id] = strndup(text.buf, text.len));
    }
    vt_symbolizer_free(sym);
    vt_reader_close(r);
}

static void every_rank_names_its_own_frames(enum hosts hosts, bool python)
{
    python_frames = python;
    setenv("VRAMTRACE_ANALYZER_THREADS", "1", 1); /* the ranks offer their tables in order */
    char *paths[RANKS];
    static struct truth truth[RANKS];
    for (int r = 0; r < RANKS; r++) {
        paths[r] = write_rank(r, hosts);
        read_alone(paths[r], &truth[r]);
    }
    /* the truth differs where the ranks do */
    assert_int_not_equal(truth[0].ip[4], truth[1].ip[4]);
    if (python)
        assert_string_not_equal(truth[0].frames[6], truth[1].frames[6]);

    struct vt_analysis a;
    FILE *devnull = fopen("/dev/null", "w");
    assert_int_equal(vt_analysis_run(&a, paths, RANKS, devnull), 0);
    fclose(devnull);
    assert_int_equal(a.ninputs, RANKS);
    /* Kept once: rank 0's table, and rank 3's (it diverged early); rank 2
     * keeps its nodes from the one that differs, ranks 5 and 6 from the
     * one with another parent; the others keep none of their own. */
    const uint64_t own[RANKS] = {0, 0, NODES - 249, 0, 0, NODES - 239, NODES - 249};
    for (int r = 0; r < RANKS; r++) {
        const struct vt_input *in = &a.inputs[r];
        assert_string_equal(in->path, paths[r]);
        if (vt_reader_stack_nodes_own(in->reader) != own[r])
            fail_msg("rank %d keeps %llu nodes of its own, want %llu", r,
                     (unsigned long long)vt_reader_stack_nodes_own(in->reader),
                     (unsigned long long)own[r]);
        struct vt_symbolize_options opt = {.disabled = true};
        struct vt_symbolizer *sym = vt_input_symbolizer_new(in, &opt);
        uint64_t parent, ip;
        for (uint64_t id = 1; id <= NODES; id++) {
            assert_true(vt_input_stack_node(in, id, &parent, &ip));
            text.len = 0;
            vt_input_stack_frames(in, sym, id, 0, add_frame, &text);
            text.buf[text.len] = '\0';
            if (parent != truth[r].parent[id] || ip != truth[r].ip[id] ||
                strcmp(text.buf, truth[r].frames[id]))
                fail_msg("rank %d node %llu: parent %llu ip %#llx frames %s; alone: parent %llu "
                         "ip %#llx frames %s",
                         r, (unsigned long long)id, (unsigned long long)parent,
                         (unsigned long long)ip, text.buf,
                         (unsigned long long)truth[r].parent[id],
                         (unsigned long long)truth[r].ip[id], truth[r].frames[id]);
        }
        assert_false(vt_input_stack_node(in, NODES + 1, &parent, &ip));
        assert_false(vt_input_stack_node(in, 0, &parent, &ip));
        assert_true(vt_input_frames_may_be_named(in, sym) == python); /* its Python frames */
        vt_symbolizer_free(sym);
    }
    vt_analysis_free(&a);
    for (int r = 0; r < RANKS; r++) {
        for (uint64_t id = 1; id <= NODES; id++)
            free(truth[r].frames[id]);
        free(paths[r]);
    }
}

static void test_every_rank_names_its_own_frames(void **state)
{
    (void)state;
    every_rank_names_its_own_frames(ONE_HOST, true);
}

static void test_every_rank_read_after_others_names_its_own_frames(void **state)
{
    (void)state;
    every_rank_names_its_own_frames(OWN_HOSTS, true);
}

static void test_ranks_side_by_side_after_others_without_python_frames(void **state)
{
    (void)state;
    every_rank_names_its_own_frames(TWO_HOSTS, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_rank_names_its_own_frames),
        cmocka_unit_test(test_every_rank_read_after_others_names_its_own_frames),
        cmocka_unit_test(test_ranks_side_by_side_after_others_without_python_frames),
    };
    return cmocka_run_group_tests(tests, tb_tmpdir_setup, tb_tmpdir_teardown);
}
