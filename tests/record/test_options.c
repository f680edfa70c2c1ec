/* Environment options (one table) and the output path template. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "options.h"
#include "trace_check.h"

struct env {
    const char *pairs[16][2];
};

static const char *lookup(const char *name, void *ctx)
{
    struct env *e = ctx;
    for (int i = 0; i < 16 && e->pairs[i][0]; i++)
        if (!strcmp(e->pairs[i][0], name))
            return e->pairs[i][1];
    return NULL;
}

/* Parses with stderr going to a pipe; returns what was said. */
static int parse(struct env *e, struct vt_options *o, char *said, size_t len)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int bad = vt_options_parse(o, lookup, e, fds[1]);
    close(fds[1]);
    ssize_t n = read(fds[0], said, len - 1);
    said[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    return bad;
}

static void test_defaults(void **state)
{
    (void)state;
    struct env e = {{{NULL, NULL}}};
    struct vt_options o;
    char said[1024];
    assert_int_equal(parse(&e, &o, said, sizeof said), 0);
    assert_string_equal(said, "");
    assert_string_equal(o.str[VT_OPTION_OUTPUT], "vramtrace.%h.%p.vtrace");
    assert_int_equal(o.num[VT_OPTION_STACK_DEPTH], 64);
    assert_int_equal(o.num[VT_OPTION_FLUSH_MS], 100);
    assert_int_equal(o.num[VT_OPTION_VERBOSE], 0);
    assert_int_equal(o.num[VT_OPTION_DISABLE], 0);
}

static void test_good_values(void **state)
{
    (void)state;
    struct env e = {{{"VRAMTRACE_STACK_DEPTH", "0"}, {"VRAMTRACE_FLUSH_MS", "250"},
                     {"VRAMTRACE_DISABLE", "1"}, {"VRAMTRACE_OUTPUT", "/x/%r.vt"},
                     {NULL, NULL}}};
    struct vt_options o;
    char said[1024];
    assert_int_equal(parse(&e, &o, said, sizeof said), 0);
    assert_int_equal(o.num[VT_OPTION_STACK_DEPTH], 0);
    assert_int_equal(o.num[VT_OPTION_FLUSH_MS], 250);
    assert_int_equal(o.num[VT_OPTION_DISABLE], 1);
    assert_string_equal(o.str[VT_OPTION_OUTPUT], "/x/%r.vt");
}

/* Each bad value: one line naming the variable, and the default is used. */
static void test_bad_values_fall_back(void **state)
{
    (void)state;
    struct env e = {{{"VRAMTRACE_STACK_DEPTH", "lots"}, {"VRAMTRACE_FLUSH_MS", "0"},
                     {"VRAMTRACE_BUFFER_KB", "99999999999999999999999"},
                     {"VRAMTRACE_VERBOSE", "maybe"}, {"VRAMTRACE_OUTPUT", ""},
                     {NULL, NULL}}};
    struct vt_options o;
    char said[4096];
    assert_int_equal(parse(&e, &o, said, sizeof said), 5);
    assert_int_equal(tc_count_lines_with(said, "\n"), 5);
    assert_int_equal(tc_count_lines_with(said, "VRAMTRACE_STACK_DEPTH"), 1);
    assert_int_equal(tc_count_lines_with(said, "VRAMTRACE_FLUSH_MS"), 1);
    assert_int_equal(tc_count_lines_with(said, "VRAMTRACE_BUFFER_KB"), 1);
    assert_int_equal(o.num[VT_OPTION_STACK_DEPTH], 64);
    assert_int_equal(o.num[VT_OPTION_FLUSH_MS], 100);
    assert_int_equal(o.num[VT_OPTION_BUFFER_KB], 128);
    assert_int_equal(o.num[VT_OPTION_VERBOSE], 0);
    assert_string_equal(o.str[VT_OPTION_OUTPUT], "vramtrace.%h.%p.vtrace");
    /* out of range is bad too */
    struct env e2 = {{{"VRAMTRACE_STACK_DEPTH", "100000"}, {"VRAMTRACE_STACK_DEPTH", "-1"},
                      {NULL, NULL}}};
    assert_int_equal(parse(&e2, &o, said, sizeof said), 1);
    assert_int_equal(o.num[VT_OPTION_STACK_DEPTH], 64);
}

static void test_verbose_prints_every_option(void **state)
{
    (void)state;
    struct env e = {{{NULL, NULL}}};
    struct vt_options o;
    char said[4096];
    parse(&e, &o, said, sizeof said);
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    vt_options_print(&o, fds[1]);
    close(fds[1]);
    ssize_t n = read(fds[0], said, sizeof said - 1);
    said[n > 0 ? n : 0] = '\0';
    close(fds[0]);
    assert_int_equal(tc_count_lines_with(said, "\n"), VT_OPTION_COUNT_);
    assert_non_null(strstr(said, "VRAMTRACE_OUTPUT=vramtrace.%h.%p.vtrace"));
    assert_non_null(strstr(said, "VRAMTRACE_STACK_DEPTH=64"));
}

static void test_path_template(void **state)
{
    (void)state;
    char out[256];
    struct vt_path_facts f = {.pid = 4242, .host = "node7", .rank = "3"};
    assert_int_equal(vt_expand_path("vramtrace.%h.%p.vtrace", &f, out, sizeof out), 0);
    assert_string_equal(out, "vramtrace.node7.4242.vtrace");
    assert_int_equal(vt_expand_path("/d/rank%r-%p%%.vt", &f, out, sizeof out), 0);
    assert_string_equal(out, "/d/rank3-4242%.vt");
    assert_int_equal(vt_expand_path("%x%", &f, out, sizeof out), 0); /* unknown: kept */
    assert_string_equal(out, "%x%");
    f.rank = NULL;
    assert_int_equal(vt_expand_path("r%r", &f, out, sizeof out), 0);
    assert_string_equal(out, "rnorank");
    assert_int_equal(vt_expand_path("l%l", &f, out, sizeof out), 0);
    assert_string_equal(out, "lnolocal");
    f.local_rank = "1";
    assert_int_equal(vt_expand_path("node/local%l", &f, out, sizeof out), 0);
    assert_string_equal(out, "node/local1");
    f.host = "evil/../host"; /* a host name never makes a directory */
    assert_int_equal(vt_expand_path("%h", &f, out, sizeof out), 0);
    assert_string_equal(out, "evil_.._host");
    /* too small: refused, never cut */
    assert_int_equal(vt_expand_path("abcdef%p", &f, out, 8), -1);
    assert_int_equal(vt_expand_path("abcdef", &f, out, 7), 0);
    assert_int_equal(vt_expand_path("abcdefg", &f, out, 7), -1);
}

static void test_rank_sources(void **state)
{
    (void)state;
    struct env none = {{{NULL, NULL}}};
    assert_null(vt_rank_from_env(lookup, &none));
    struct env slurm = {{{"SLURM_PROCID", "5"}, {NULL, NULL}}};
    assert_string_equal(vt_rank_from_env(lookup, &slurm), "5");
    struct env both = {{{"SLURM_PROCID", "5"}, {"RANK", "2"}, {NULL, NULL}}};
    assert_string_equal(vt_rank_from_env(lookup, &both), "2"); /* RANK wins */
    assert_null(vt_local_rank_from_env(lookup, &both));
    struct env local = {{{"SLURM_LOCALID", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {NULL, NULL}}};
    assert_string_equal(vt_local_rank_from_env(lookup, &local), "3"); /* Open MPI's before SLURM's */
    struct env torch = {{{"SLURM_LOCALID", "1"}, {"LOCAL_RANK", "0"}, {NULL, NULL}}};
    assert_string_equal(vt_local_rank_from_env(lookup, &torch), "0"); /* LOCAL_RANK wins */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_good_values),
        cmocka_unit_test(test_bad_values_fall_back),
        cmocka_unit_test(test_verbose_prints_every_option),
        cmocka_unit_test(test_path_template),
        cmocka_unit_test(test_rank_sources),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
