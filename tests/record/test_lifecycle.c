/*
 * Process lifecycle under the recorder: fork (the child writes its own
 * complete trace, even if another thread held a tracer lock at fork time),
 * fatal signals (what was recorded is flushed, then the signal does what it
 * would have done), and the module map following dlopen/dlclose.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"
#include "recorder_control.h"
#include "test_links.h"
#include "trace_check.h"

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

static void use_output(const char *name)
{
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/%s.%%p.vtrace", dir, name);
    setenv("VRAMTRACE_OUTPUT", tmpl, 1);
}

/* Events tagged by the top byte of the address: who recorded them. */
static void record_tagged(uint64_t tag, int n)
{
    for (int i = 0; i < n; i++) {
        struct vt_mem_event ev = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1,
                                  .device = 0, .addr = tag << 56 | (uint64_t)i, .size = 64};
        vt_record_mem(&ev);
    }
}

static size_t count_tag(const struct tc_trace *t, uint64_t tag)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].type == VT_REC_MEM && t->recs[i].u.mem.addr >> 56 == tag;
    return n;
}

static void trace_path_of(pid_t pid, const char *name, char *out, size_t len)
{
    snprintf(out, len, "%s/%s.%ld.vtrace", dir, name, (long)pid);
}

static void test_fork_child_writes_own_trace(void **state)
{
    (void)state;
    use_output("fork");
    assert_true(vt_recorder_start(&tc_links));
    record_tagged(0xA, 100);
    pid_t parent = getpid();
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        alarm(20); /* a deadlock fails the test instead of hanging it */
        int ok = vt_recorder_active();
        record_tagged(0xB, 300);
        vt_recorder_stop(true);
        _exit(ok ? 0 : 1);
    }
    record_tagged(0xC, 200);
    int status;
    waitpid(child, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    vt_recorder_stop(true);

    char ppath[512], cpath[512];
    trace_path_of(parent, "fork", ppath, sizeof ppath);
    trace_path_of(child, "fork", cpath, sizeof cpath);
    struct tc_trace *p = tc_load_file(ppath), *c = tc_load_file(cpath);
    assert_int_equal(p->rc, 0);
    assert_int_equal(c->rc, 0);
    assert_false(vt_reader_truncated(p->reader));
    assert_false(vt_reader_truncated(c->reader));
    /* the child's file is a full fresh trace: its own process, modules */
    assert_int_equal(c->recs[0].type, VT_REC_PROCESS);
    assert_int_equal(c->recs[0].u.process->pid, child);
    assert_int_equal(c->recs[0].u.process->ppid, parent);
    assert_true(tc_count(c, VT_REC_MODULE) > 2);
    assert_int_equal(count_tag(c, 0xB), 300);
    assert_int_equal(count_tag(c, 0xA) + count_tag(c, 0xC), 0);
    assert_int_equal(count_tag(p, 0xA), 100);
    assert_int_equal(count_tag(p, 0xC), 200);
    assert_int_equal(count_tag(p, 0xB), 0);
    tc_free(p);
    tc_free(c);
}

/* A child that records nothing (a data-loader worker, a fork that execs:
 * the new program traces itself under the same pid) leaves no file; nor
 * does the parent until it records its first event. */
static void test_fork_child_without_events_leaves_no_file(void **state)
{
    (void)state;
    use_output("quiet");
    assert_true(vt_recorder_start(&tc_links));
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        alarm(20);
        usleep(50 * 1000); /* a few writer rounds */
        vt_recorder_stop(true);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    char path[512];
    trace_path_of(getpid(), "quiet", path, sizeof path);
    assert_int_equal(access(path, F_OK), -1); /* no event yet, no file */
    record_tagged(0xD, 1);
    vt_recorder_stop(true);
    trace_path_of(child, "quiet", path, sizeof path);
    assert_int_equal(access(path, F_OK), -1);
    trace_path_of(getpid(), "quiet", path, sizeof path);
    assert_int_equal(access(path, F_OK), 0); /* the parent's is there */
}

static atomic_int hammering, hammer_running;

static void *hammer(void *arg)
{
    (void)arg;
    atomic_store(&hammer_running, 1);
    while (atomic_load(&hammering))
        record_tagged(0xD, 50);
    return NULL;
}

/* Forks while another thread records as fast as it can (and so holds its
 * buffer lock, the pool lock, the list lock at random moments): every child
 * must come up, trace and finish. */
static void test_fork_while_other_thread_records(void **state)
{
    (void)state;
    use_output("forkload");
    assert_true(vt_recorder_start(&tc_links));
    atomic_store(&hammering, 1);
    pthread_t th;
    atomic_store(&hammer_running, 0);
    pthread_create(&th, NULL, hammer, NULL);
    /* A thread being created is set up by the C library and, under ASan,
     * by its runtime, whose allocator is not fork-safe: a fork in that
     * window can leave the child's allocator locked. That is the
     * program's own thread, not the tracer's: wait until it runs. */
    while (!atomic_load(&hammer_running))
        usleep(100);
    for (int k = 0; k < 20; k++) {
        fflush(NULL);
        pid_t child = fork();
        if (child == 0) {
            alarm(20);
            record_tagged(0xE, 10);
            vt_recorder_stop(true);
            _exit(0);
        }
        int status;
        waitpid(child, &status, 0);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        char path[512];
        trace_path_of(child, "forkload", path, sizeof path);
        struct tc_trace *c = tc_load_file(path);
        assert_int_equal(c->rc, 0);
        assert_int_equal(count_tag(c, 0xE), 10);
        assert_int_equal(count_tag(c, 0xD), 0); /* the parent's thread is not here */
        tc_free(c);
    }
    atomic_store(&hammering, 0);
    pthread_join(th, NULL);
    vt_recorder_stop(true);
}

static void crash_with_default_abort(void)
{
    use_output("abort");
    setenv("VRAMTRACE_FLUSH_MS", "60000", 1); /* only the signal can flush */
    vt_recorder_start(&tc_links);
    record_tagged(0xF, 500);
    abort();
}

static void test_fatal_signal_flushes_then_dies(void **state)
{
    (void)state;
    fflush(NULL);
    pid_t child = fork();
    if (child == 0)
        crash_with_default_abort();
    int status;
    waitpid(child, &status, 0);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT); /* as without the tracer */
    char path[512];
    trace_path_of(child, "abort", path, sizeof path);
    struct tc_trace *t = tc_load_file(path);
    assert_int_equal(t->rc, 0);
    assert_true(vt_reader_truncated(t->reader)); /* no trailer: not a clean exit */
    assert_int_equal(count_tag(t, 0xF), 500);
    tc_free(t);
}

static int handler_pipe[2];

static void program_handler(int sig)
{
    char c = (char)sig;
    ssize_t ignored = write(handler_pipe[1], &c, 1);
    (void)ignored;
    _exit(42);
}

static void test_fatal_signal_chains_to_program_handler(void **state)
{
    (void)state;
    assert_int_equal(pipe(handler_pipe), 0);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        signal(SIGSEGV, program_handler); /* there before the tracer */
        use_output("segv");
        setenv("VRAMTRACE_FLUSH_MS", "60000", 1);
        vt_recorder_start(&tc_links);
        record_tagged(0x5, 77);
        raise(SIGSEGV);
        _exit(1);
    }
    close(handler_pipe[1]);
    int status;
    waitpid(child, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 42);
    char c = 0;
    assert_int_equal(read(handler_pipe[0], &c, 1), 1);
    assert_int_equal(c, SIGSEGV);
    close(handler_pipe[0]);
    char path[512];
    trace_path_of(child, "segv", path, sizeof path);
    struct tc_trace *t = tc_load_file(path);
    assert_int_equal(t->rc, 0);
    assert_int_equal(count_tag(t, 0x5), 77);
    tc_free(t);
}

static const char *const candidates[] = {"libz.so.1", "libbz2.so.1.0", "libexpat.so.1",
                                         "libffi.so.8", "libgmp.so.10", NULL};

static bool loaded_already(const char *name)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void test_modules_follow_dlopen_dlclose(void **state)
{
    (void)state;
    const char *lib = NULL;
    for (int i = 0; candidates[i] && !lib; i++) {
        if (loaded_already(candidates[i]))
            continue;
        void *h = dlopen(candidates[i], RTLD_NOW);
        if (h) {
            dlclose(h);
            lib = loaded_already(candidates[i]) ? NULL : candidates[i];
        }
    }
    if (!lib)
        skip();
    use_output("modules");
    setenv("VRAMTRACE_FLUSH_MS", "5", 1);
    assert_true(vt_recorder_start(&tc_links));
    /* the writer thread starts at the process's first event: the module
     * map follows the loader from there on */
    vt_record_mark(NULL, "a trace needs an event to exist");
    void *h = dlopen(lib, RTLD_NOW);
    assert_non_null(h);
    vt_record_modules_changed();
    usleep(100 * 1000);
    dlclose(h);
    vt_record_modules_changed();
    usleep(100 * 1000);
    char path[512];
    snprintf(path, sizeof path, "%s", vt_recorder_path());
    vt_recorder_stop(true);
    unsetenv("VRAMTRACE_FLUSH_MS");

    struct tc_trace *t = tc_load_file(path);
    assert_int_equal(t->rc, 0);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    bool saw_exe = false, saw_lib = false, saw_unload = false;
    uint64_t lib_id = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct vt_record *r = &t->recs[i];
        if (r->type == VT_REC_MODULE) {
            if (!strcmp(r->u.module->path, exe)) {
                saw_exe = true;
                assert_true(r->u.module->start < r->u.module->end);
                assert_true(r->u.module->build_id_len > 0); /* the linker's default */
            }
            if (strstr(r->u.module->path, lib)) {
                saw_lib = true;
                lib_id = r->u.module->id;
            }
        }
        if (r->type == VT_REC_MODULE_UNLOAD && saw_lib && r->u.module_unload.id == lib_id)
            saw_unload = true;
    }
    assert_true(saw_exe);
    assert_true(saw_lib);
    assert_true(saw_unload);
    tc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fork_child_writes_own_trace),
        cmocka_unit_test(test_fork_child_without_events_leaves_no_file),
        cmocka_unit_test(test_fork_while_other_thread_records),
        cmocka_unit_test(test_fatal_signal_flushes_then_dies),
        cmocka_unit_test(test_fatal_signal_chains_to_program_handler),
        cmocka_unit_test(test_modules_follow_dlopen_dlclose),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
