/*
 * The recorder never harms the program: an output it cannot create or
 * write costs one line on stderr (when the file is created, at the first
 * event), the program runs on, nothing hangs, and no existing file or
 * symlink target is ever touched: a name taken by a file or a link sends
 * the trace to a numbered name instead (trace_file.h). Each case runs in a
 * child process with its stderr captured.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"
#include "recorder_control.h"
#include "test_links.h"
#include "trace_check.h"
#include "writer.h"

#define CANNOT "vramtrace: cannot write trace"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    tc_make_tmpdir(dir, sizeof dir);
    return dir[0] ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    tc_remove_tmpdir(dir);
    return 0;
}

static void record_some(int n)
{
    for (int i = 0; i < n; i++) {
        struct vt_mem_event ev = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1,
                                  .device = 0, .addr = (uint64_t)i * 0x9e3779b97f4aull,
                                  .size = (uint64_t)i * 7919};
        vt_record_mem(&ev);
    }
}

/* In the child: start with the given output, record (the file is created
 * at the first writer round), stop. Exits 20 if the recorder stepped aside
 * (inactive once a writer round has put the first events on disk, or
 * failed to), 10 if it kept recording. */
static void start_record_stop(void *arg)
{
    const char *output = arg;
    setenv("VRAMTRACE_OUTPUT", output, 1);
    setenv("VRAMTRACE_FLUSH_MS", "5", 1);
    bool active = vt_recorder_start(&tc_links);
    record_some(1000); /* must be harmless either way */
    if (active)
        vt_writer_flush_now(5000); /* returns after that round, or a failure */
    active = active && vt_recorder_active();
    vt_recorder_stop(true);
    _exit(active ? 10 : 20);
}

/* The output's name was taken: the trace went to expect_path instead,
 * silently, complete, new and private. */
static void expect_fallback(const char *output, const char *expect_path)
{
    char err[4096];
    int status = tc_run_child(start_record_stop, (void *)output, err, sizeof err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 10);
    assert_string_equal(err, "");
    struct stat st;
    assert_int_equal(lstat(expect_path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    struct tc_trace *t = tc_load_file(expect_path);
    assert_int_equal(t->rc, 0);
    assert_false(vt_reader_truncated(t->reader));
    assert_int_equal(tc_count(t, VT_REC_MEM), 1000);
    tc_free(t);
}

static void expect_refused(const char *output)
{
    char err[4096];
    int status = tc_run_child(start_record_stop, (void *)output, err, sizeof err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 20); /* inactive, no crash */
    assert_int_equal(tc_count_lines_with(err, "\n"), 1);
    assert_int_equal(tc_count_lines_with(err, CANNOT), 1);
    assert_non_null(strstr(err, "tracing disabled, the program continues"));
}

static void test_existing_file_untouched(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/exists.vtrace", dir);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    char alt[512];
    snprintf(alt, sizeof alt, "%s/exists.1.vtrace", dir);
    expect_fallback(path, alt);
    /* taken twice: the next number */
    snprintf(alt, sizeof alt, "%s/exists.2.vtrace", dir);
    expect_fallback(path, alt);
    size_t len;
    uint8_t *data = tc_read_file(path, &len);
    assert_int_equal(len, 8);
    assert_memory_equal(data, "precious", 8);
    free(data);
}

static void test_planted_symlink_not_followed(void **state)
{
    (void)state;
    char victim[512], link[512];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/link.vtrace", dir);
    FILE *f = fopen(victim, "w");
    fputs("victim", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    char alt[512];
    snprintf(alt, sizeof alt, "%s/link.1.vtrace", dir);
    expect_fallback(link, alt);
    size_t len;
    uint8_t *data = tc_read_file(victim, &len);
    assert_int_equal(len, 6);
    assert_memory_equal(data, "victim", 6);
    free(data);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    /* a dangling symlink is not followed either (no file appears) */
    char target[512], dangling[512];
    snprintf(target, sizeof target, "%s/created-through-link", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling.vtrace", dir);
    assert_int_equal(symlink(target, dangling), 0);
    snprintf(alt, sizeof alt, "%s/dangling.1.vtrace", dir);
    expect_fallback(dangling, alt);
    assert_int_equal(access(target, F_OK), -1);
}

/* Missing directories are made, 0700, like `mkdir -p`; an existing link
 * on the way is the user's and is followed. */
static void test_missing_directories_made(void **state)
{
    (void)state;
    char path[1024], made[1024], link[1024];
    snprintf(path, sizeof path, "%s/no//such/dir/t.vtrace", dir);
    expect_fallback(path, path);
    struct stat st;
    snprintf(made, sizeof made, "%s/no", dir);
    assert_int_equal(lstat(made, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0077, 0);
    snprintf(made, sizeof made, "%s/no/such/dir", dir);
    assert_int_equal(lstat(made, &st), 0);
    assert_int_equal(st.st_mode & 0077, 0);
    snprintf(link, sizeof link, "%s/linked", dir);
    assert_int_equal(symlink(made, link), 0);
    snprintf(path, sizeof path, "%s/linked/deeper/t.vtrace", dir);
    snprintf(made, sizeof made, "%s/no/such/dir/deeper/t.vtrace", dir);
    expect_fallback(path, made);
}

static void test_unwritable_directories(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof path, "%s/victim/t.vtrace", dir); /* a file as directory */
    FILE *f = fopen(path, "r");
    assert_null(f);
    char file[512];
    snprintf(file, sizeof file, "%s/plainfile", dir);
    f = fopen(file, "w");
    fclose(f);
    snprintf(path, sizeof path, "%s/t.vtrace", file);
    expect_refused(path);
    if (geteuid() != 0) {
        char ro[512];
        snprintf(ro, sizeof ro, "%s/readonly", dir);
        mkdir(ro, 0500);
        snprintf(path, sizeof path, "%s/t.vtrace", ro);
        expect_refused(path);
        rmdir(ro);
    }
    /* root can write anywhere but in filesystems that refuse new files */
    expect_refused("/proc/vramtrace-cannot-be-here.vtrace");
}

static void test_dev_full_refused(void **state)
{
    (void)state;
    /* exists and is no file: O_EXCL refuses, nothing written to it, and no
     * numbered name is made beside it (a device is no name collision) */
    expect_refused("/dev/full");
    assert_int_equal(access("/dev/full.1", F_OK), -1);
}

/* Every numbered name taken too: one line naming the last one tried. */
static void test_all_numbered_names_taken(void **state)
{
    (void)state;
    char path[512], err[4096];
    snprintf(path, sizeof path, "%s/busy.vtrace", dir);
    for (int n = 0; n <= 99; n++) {
        char p[512];
        if (n)
            snprintf(p, sizeof p, "%s/busy.%d.vtrace", dir, n);
        else
            snprintf(p, sizeof p, "%s", path);
        FILE *f = fopen(p, "w");
        fclose(f);
    }
    int status = tc_run_child(start_record_stop, path, err, sizeof err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 20);
    assert_int_equal(tc_count_lines_with(err, "\n"), 1);
    assert_int_equal(tc_count_lines_with(err, CANNOT), 1);
    assert_non_null(strstr(err, "busy.99.vtrace"));
    assert_int_equal(access("busy.100.vtrace", F_OK), -1);
}

static void *recorder_thread(void *arg)
{
    (void)arg;
    record_some(200000);
    return NULL;
}

/* Disk full while writing (a file size limit gives EFBIG the same way
 * ENOSPC would come): one line, recording stops, the program runs on and is
 * not killed by SIGXFSZ, the written prefix is a readable trace. */
static void write_until_full(void *arg)
{
    const char *output = arg;
    struct rlimit rl = {.rlim_cur = 16384, .rlim_max = RLIM_INFINITY};
    setrlimit(RLIMIT_FSIZE, &rl);
    setenv("VRAMTRACE_OUTPUT", output, 1);
    setenv("VRAMTRACE_FLUSH_MS", "5", 1);
    if (!vt_recorder_start(&tc_links))
        _exit(30);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, recorder_thread, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    bool still = vt_recorder_active();
    vt_recorder_stop(true);
    _exit(still ? 31 : 0);
}

static void test_disk_full_while_writing(void **state)
{
    (void)state;
    char path[512], err[4096];
    snprintf(path, sizeof path, "%s/full.vtrace", dir);
    int status = tc_run_child(write_until_full, path, err, sizeof err);
    if (!WIFEXITED(status))
        fail_msg("child died with signal %d; stderr: %s", WTERMSIG(status), err);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(tc_count_lines_with(err, "\n"), 1);
    assert_int_equal(tc_count_lines_with(err, CANNOT), 1);
    assert_non_null(strstr(err, strerror(EFBIG)));
    struct tc_trace *t = tc_load_file(path);
    assert_true(t->len <= 16384);
    assert_int_equal(t->open_rc, 0);
    assert_int_equal(t->rc, 0); /* a prefix, no error */
    assert_true(vt_reader_truncated(t->reader));
    assert_int_equal(t->recs[0].type, VT_REC_PROCESS);
    tc_free(t);
}

static void disabled(void *arg)
{
    setenv("VRAMTRACE_OUTPUT", arg, 1);
    setenv("VRAMTRACE_DISABLE", "1", 1);
    bool active = vt_recorder_start(&tc_links);
    record_some(100);
    vt_recorder_stop(true);
    _exit(active ? 10 : 20);
}

static void test_disable_does_nothing(void **state)
{
    (void)state;
    char path[512], err[1024];
    snprintf(path, sizeof path, "%s/disabled.vtrace", dir);
    int status = tc_run_child(disabled, path, err, sizeof err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 20);
    assert_string_equal(err, "");
    assert_int_equal(access(path, F_OK), -1);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_existing_file_untouched),
        cmocka_unit_test(test_planted_symlink_not_followed),
        cmocka_unit_test(test_missing_directories_made),
        cmocka_unit_test(test_unwritable_directories),
        cmocka_unit_test(test_dev_full_refused),
        cmocka_unit_test(test_all_numbered_names_taken),
        cmocka_unit_test(test_disk_full_while_writing),
        cmocka_unit_test(test_disable_does_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
