/*
 * The real recorder end to end: threads record through preload/record_api/recorder.h,
 * the writer thread writes a file, the analyzer's reader decodes it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "recorder.h"
#include "recorder_control.h"
#include "test_links.h"
#include "thread_buffer.h"
#include "trace_check.h"

#define NTHREADS 16
#define NEVENTS 20000

static char dir[256];
static char many_path[512]; /* the 16-thread trace, reused by the cut test */

/* Each test writes its own file (the recorder never overwrites one). */
static void use_output(const char *name)
{
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/%s.%%p.%%r.vtrace", dir, name);
    setenv("VRAMTRACE_OUTPUT", tmpl, 1);
}

static int setup(void **state)
{
    (void)state;
    tc_make_tmpdir(dir, sizeof dir);
    unsetenv("RANK");
    return dir[0] ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (!getenv("KEEP")) tc_remove_tmpdir(dir);
    return 0;
}

/* Not static: dladdr must name it in the recorded stacks. */
__attribute__((noinline, visibility("default"))) void *record_worker(void *arg)
{
    uint64_t t = (uint64_t)(uintptr_t)arg;
    for (uint64_t i = 0; i < NEVENTS; i++) {
        struct vt_mem_event ev = {
            .op = (i & 1) ? VT_OP_FREE : VT_OP_ALLOC, .kind = VT_KIND_DEVICE,
            .api = (i & 1) ? 2 : 1, .label = (i & 1) ? 0 : 3, .device = (int32_t)(t % 2),
            .addr = (t + 1) << 32 | i, .size = i * 256,
        };
        vt_record_mem(&ev);
    }
    return NULL;
}

static void test_many_threads_every_event_once(void **state)
{
    (void)state;
    use_output("many");
    setenv("VRAMTRACE_FLUSH_MS", "10", 1); /* many rounds and chunks */
    setenv("VRAMTRACE_BUFFER_KB", "16", 1); /* many full-block hand-offs */
    setenv("VRAMTRACE_STACK_DEPTH", "8", 1); /* keeps the test fast under sanitizers */
    assert_true(vt_recorder_start(&tc_links));
    assert_true(vt_recorder_active());
    snprintf(many_path, sizeof many_path, "%s", vt_recorder_path());
    char expect[512];
    snprintf(expect, sizeof expect, "%s/many.%ld.norank.vtrace", dir, (long)getpid());
    assert_string_equal(many_path, expect);

    pthread_t th[NTHREADS];
    for (uintptr_t t = 0; t < NTHREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, record_worker, (void *)t), 0);
    for (int t = 0; t < NTHREADS; t++)
        pthread_join(th[t], NULL);
    vt_recorder_stop(true);
    assert_false(vt_recorder_active());
    unsetenv("VRAMTRACE_FLUSH_MS");
    unsetenv("VRAMTRACE_BUFFER_KB");
    unsetenv("VRAMTRACE_STACK_DEPTH");

    struct tc_trace *tr = tc_load_file(many_path);
    assert_int_equal(tr->open_rc, 0);
    if (tr->rc < 0)
        fail_msg("%s", vt_reader_error(tr->reader)->message);
    assert_false(vt_reader_truncated(tr->reader));
    assert_true(vt_reader_chunks(tr->reader) > 2);
    assert_int_equal(tr->recs[0].type, VT_REC_PROCESS);
    assert_int_equal(tr->recs[0].u.process->pid, getpid());

    static uint8_t seen[NTHREADS][NEVENTS];
    memset(seen, 0, sizeof seen);
    int64_t last_seq[NTHREADS];
    uint64_t file_thread[NTHREADS] = {0};
    for (int t = 0; t < NTHREADS; t++)
        last_seq[t] = -1;
    uint64_t last_time = 0, mems = 0;
    bool checked_stack = false;
    for (size_t i = 0; i < tr->n; i++) {
        const struct vt_record *r = &tr->recs[i];
        if (r->type == VT_REC_MEM || r->type == VT_REC_TRAILER) {
            assert_true(r->time_ns >= last_time); /* one global timeline */
            last_time = r->time_ns;
        }
        if (r->type != VT_REC_MEM)
            continue;
        mems++;
        uint64_t t = (r->u.mem.addr >> 32) - 1, seq = r->u.mem.addr & 0xffffffffu;
        assert_true(t < NTHREADS && seq < NEVENTS);
        assert_int_equal(seen[t][seq], 0); /* exactly once */
        seen[t][seq] = 1;
        assert_true((int64_t)seq > last_seq[t]); /* per-thread order kept */
        last_seq[t] = (int64_t)seq;
        assert_int_equal(r->u.mem.size, seq * 256);
        assert_int_equal(r->u.mem.op, (seq & 1) ? VT_OP_FREE : VT_OP_ALLOC);
        assert_string_equal(vt_reader_api(tr->reader, r->u.mem.api),
                            (seq & 1) ? "cuMemFree_v2" : "cuMemAlloc_v2");
        assert_int_equal(r->u.mem.label, (seq & 1) ? 0 : 3);
        assert_int_equal(r->u.mem.device, (int64_t)(t % 2));
        if (!file_thread[t])
            file_thread[t] = r->u.mem.thread;
        assert_int_equal(r->u.mem.thread, file_thread[t]); /* one id per thread */
        if (!checked_stack) {
            /* the innermost frame is the caller of vt_record_mem */
            uint64_t parent, ip;
            assert_true(vt_reader_stack_node(tr->reader, r->u.mem.stack, &parent, &ip));
            Dl_info info;
            assert_true(dladdr((void *)(uintptr_t)ip, &info));
            assert_non_null(info.dli_sname);
            assert_string_equal(info.dli_sname, "record_worker");
            checked_stack = true;
        }
    }
    assert_int_equal(mems, NTHREADS * NEVENTS);
    for (int t = 0; t < NTHREADS; t++)
        assert_int_equal(last_seq[t], NEVENTS - 1);
    /* threads have distinct ids and their THREAD records came first (the
     * reader refuses an id that refers to nothing) */
    for (int a = 0; a < NTHREADS; a++)
        for (int b = a + 1; b < NTHREADS; b++)
            assert_true(file_thread[a] != file_thread[b]);
    const struct vt_record *last = &tr->recs[tr->n - 1];
    assert_int_equal(last->type, VT_REC_TRAILER);
    assert_int_equal(last->u.trailer.events, NTHREADS * NEVENTS);
    assert_int_equal(last->u.trailer.lost, 0);
    assert_int_equal(last->u.trailer.chunks, vt_reader_chunks(tr->reader));
    assert_int_equal(tc_count(tr, VT_REC_LOST), 0);
    /* stacks are deduplicated: far fewer nodes than events */
    assert_true(vt_reader_stack_node_count(tr->reader) < 2000);
    tc_free(tr);
}

/* A file cut at any offset decodes, without error, exactly the records of
 * the chunks that are complete before the cut. */
static void test_cut_file_decodes_up_to_last_chunk(void **state)
{
    (void)state;
    if (!many_path[0])
        skip();
    struct tc_trace *full = tc_load_file(many_path);
    assert_int_equal(full->rc, 0);
    size_t len = full->len;
    /* end offset of each record's chunk */
    uint64_t *chunk_end = malloc(full->n * sizeof *chunk_end);
    for (size_t i = 0; i < full->n; i++) {
        uint64_t off = full->recs[i].chunk_offset;
        chunk_end[i] = off + VT_CHUNK_HEADER_SIZE + vt_get_le32(full->data + off + 4);
    }
    uint64_t x = 88172645463325252ull;
    for (int k = 0; k < 24; k++) {
        size_t cut;
        if (k < 12) {
            /* right at, just before and just after chunk boundaries */
            size_t i = (full->n - 1) * (size_t)k / 12;
            cut = (size_t)chunk_end[i] + (size_t)(k % 3) - 1;
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            cut = (size_t)(x % len);
        }
        if (cut > len)
            cut = len;
        size_t expect = 0;
        for (size_t i = 0; i < full->n; i++)
            expect += chunk_end[i] <= cut;
        struct tc_trace *t = tc_load_memory(full->data, cut);
        if (cut < VT_PREAMBLE_SIZE) {
            assert_int_equal(t->n, 0);
        } else {
            if (t->rc < 0)
                fail_msg("cut at %zu: %s", cut, vt_reader_error(t->reader)->message);
            assert_int_equal(t->n, expect);
            assert_int_equal(vt_reader_truncated(t->reader), cut < len);
        }
        tc_free(t);
    }
    free(chunk_end);
    tc_free(full);
}

static void *named_worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    struct vt_mem_event ev = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1,
                              .device = 0, .addr = 0x1000, .size = 4096};
    vt_record_mem(&ev);
    pthread_setname_np(pthread_self(), "renamed-worker");
    vt_record_range_push(NULL, "backward"); /* a phase event re-reads the name */
    vt_record_range_pop(NULL);
    return NULL;
}

static void test_phases_devices_thread_names(void **state)
{
    (void)state;
    use_output("phases");
    assert_true(vt_recorder_start(&tc_links));
    uint8_t uuid[VT_UUID_SIZE];
    for (int i = 0; i < VT_UUID_SIZE; i++)
        uuid[i] = (uint8_t)(0xa0 + i);
    vt_record_device(1, uuid, "Simulated H100", 80ull << 30);
    vt_record_range_push("torch", "forward");
    vt_record_range_start(7, NULL, "step");
    vt_record_mark(NULL, "checkpoint");
    struct vt_mem_event oom = {.op = VT_OP_ALLOC, .kind = VT_KIND_DEVICE, .api = 1, .device = 1,
                               .result = 2, .addr = 0, .size = 90ull << 30,
                               .free_bytes = 3ull << 30, .total_bytes = 80ull << 30};
    vt_record_mem(&oom);
    pthread_t th;
    pthread_create(&th, NULL, named_worker, NULL);
    pthread_join(th, NULL);
    vt_record_range_end(7);
    vt_record_range_pop("torch");
    char path[512];
    snprintf(path, sizeof path, "%s", vt_recorder_path());
    vt_recorder_stop(true);

    struct tc_trace *t = tc_load_file(path);
    if (t->rc < 0)
        fail_msg("%s", vt_reader_error(t->reader)->message);
    const struct vt_reader *r = t->reader;
    enum vt_record_type want[] = {VT_REC_DEVICE, VT_REC_RANGE_PUSH, VT_REC_RANGE_START,
                                  VT_REC_MARK, VT_REC_MEM, VT_REC_MEM, VT_REC_RANGE_PUSH,
                                  VT_REC_RANGE_POP, VT_REC_RANGE_END, VT_REC_RANGE_POP};
    size_t k = 0;
    int worker_thread_recs = 0;
    uint64_t worker_id = 0;
    for (size_t i = 0; i < t->n; i++) {
        const struct vt_record *x = &t->recs[i];
        if (x->type == VT_REC_THREAD && x->u.thread->os_tid != (uint64_t)gettid()) {
            /* the record's table entry holds the latest name: capture at read time */
            worker_id = x->u.thread->id;
            worker_thread_recs++;
        }
        if (k < sizeof want / sizeof want[0] && x->type == want[k]) {
            switch (k) {
            case 0:
                assert_int_equal(x->u.device->ordinal, 1);
                assert_memory_equal(x->u.device->uuid, uuid, VT_UUID_SIZE);
                assert_string_equal(x->u.device->name, "Simulated H100");
                break;
            case 1:
                assert_string_equal(vt_reader_string(r, x->u.range.domain), "torch");
                assert_string_equal(vt_reader_string(r, x->u.range.name), "forward");
                break;
            case 2:
                assert_int_equal(x->u.range.range_id, 7);
                assert_int_equal(x->u.range.domain, 0);
                assert_string_equal(vt_reader_string(r, x->u.range.name), "step");
                break;
            case 3:
                assert_string_equal(vt_reader_string(r, x->u.range.name), "checkpoint");
                break;
            case 4:
                assert_int_equal(x->u.mem.result, 2);
                assert_true(x->u.mem.free_bytes == 3ull << 30);
                assert_true(x->u.mem.total_bytes == 80ull << 30);
                assert_true(x->u.mem.size == 90ull << 30);
                break;
            case 5:
                assert_int_equal(x->u.mem.thread, worker_id);
                break;
            case 6:
                assert_string_equal(vt_reader_string(r, x->u.range.name), "backward");
                break;
            case 8:
                assert_int_equal(x->u.range.range_id, 7);
                break;
            case 9:
                assert_string_equal(vt_reader_string(r, x->u.range.domain), "torch");
                break;
            default:
                break;
            }
            k++;
        }
    }
    assert_int_equal(k, sizeof want / sizeof want[0]);
    /* the worker was announced, then announced again after its rename */
    assert_int_equal(worker_thread_recs, 2);
    assert_string_equal(vt_reader_thread(r, worker_id)->name, "renamed-worker");
    tc_free(t);
}

/* Records while fn runs on a thread of its own, stops, and opens the trace
 * in a reader over *data (both freed by the caller): tests that look at
 * records one by one, in file order. */
static struct vt_reader *trace_of_thread(const char *output, void *(*fn)(void *),
                                         uint8_t **data)
{
    use_output(output);
    assert_true(vt_recorder_start(&tc_links));
    pthread_t th;
    pthread_create(&th, NULL, fn, NULL);
    pthread_join(th, NULL);
    char path[512];
    snprintf(path, sizeof path, "%s", vt_recorder_path());
    vt_recorder_stop(true);
    size_t len;
    *data = tc_read_file(path, &len);
    assert_non_null(*data);
    struct vt_reader *rd;
    struct vt_read_error err;
    assert_int_equal(vt_reader_open_memory(*data, len, path, &rd, &err), 0);
    return rd;
}

/* The first name a thread is announced with is the one it had then. */
static void test_thread_first_name(void **state)
{
    (void)state;
    uint8_t *data;
    struct vt_reader *rd = trace_of_thread("names", named_worker, &data);
    /* decode record by record and look at the name as each THREAD arrives */
    struct vt_record rec;
    const char *names[4];
    int n = 0;
    char first[32] = "";
    while (vt_reader_next(rd, &rec) > 0)
        if (rec.type == VT_REC_THREAD && rec.u.thread->os_tid != (uint64_t)gettid() && n < 4) {
            names[n++] = rec.u.thread->name;
            if (n == 1)
                snprintf(first, sizeof first, "%s", rec.u.thread->name);
        }
    (void)names;
    assert_int_equal(n, 2);
    assert_string_equal(first, "pt_autograd_0");
    vt_reader_close(rd);
    free(data);
}

/* A rename without any phase event is seen by the periodic check: the
 * VT_NAME_CHECK_EVERY-th event of the thread re-reads the name and the
 * thread is announced again right before that event, not earlier (the
 * count is kept on the hook's fast path). */
static pid_t renamer_tid;

static void *silent_renamer(void *arg)
{
    (void)arg;
    renamer_tid = gettid();
    pthread_setname_np(pthread_self(), "before-rename");
    struct vt_mem_event ev = {.op = VT_OP_FREE, .kind = VT_KIND_DEVICE, .api = 2, .device = -1};
    for (int i = 0; i < VT_NAME_CHECK_EVERY + 44; i++) {
        if (i == 1)
            pthread_setname_np(pthread_self(), "after-rename");
        ev.addr = 0x1000 + (uint64_t)i;
        vt_record_mem(&ev);
    }
    return NULL;
}

static void test_rename_seen_by_periodic_check(void **state)
{
    (void)state;
    uint8_t *data;
    struct vt_reader *rd = trace_of_thread("rename", silent_renamer, &data);
    struct vt_record rec;
    uint64_t id = 0;
    int announced = 0, mems = 0, mems_before_second = -1;
    char second[32] = "";
    while (vt_reader_next(rd, &rec) > 0) {
        if (rec.type == VT_REC_THREAD && rec.u.thread->os_tid == (uint64_t)renamer_tid) {
            id = rec.u.thread->id;
            if (++announced == 2) {
                mems_before_second = mems;
                snprintf(second, sizeof second, "%s", rec.u.thread->name);
            }
        } else if (rec.type == VT_REC_MEM && id && rec.u.mem.thread == id) {
            mems++;
        }
    }
    assert_int_equal(announced, 2);
    assert_string_equal(second, "after-rename");
    assert_int_equal(mems_before_second, VT_NAME_CHECK_EVERY - 1);
    assert_int_equal(mems, VT_NAME_CHECK_EVERY + 44);
    vt_reader_close(rd);
    free(data);
}

static void test_stack_depth_option(void **state)
{
    (void)state;
    use_output("depth2");
    setenv("VRAMTRACE_STACK_DEPTH", "2", 1);
    assert_true(vt_recorder_start(&tc_links));
    record_worker((void *)(uintptr_t)0);
    char path[512];
    snprintf(path, sizeof path, "%s", vt_recorder_path());
    vt_recorder_stop(true);
    struct tc_trace *t = tc_load_file(path);
    assert_int_equal(t->rc, 0);
    assert_int_equal(t->recs[0].u.process->stack_depth, 2);
    for (size_t i = 0; i < t->n; i++) {
        if (t->recs[i].type != VT_REC_MEM)
            continue;
        int depth = 0;
        uint64_t id = t->recs[i].u.mem.stack, parent, ip;
        while (id && vt_reader_stack_node(t->reader, id, &parent, &ip)) {
            depth++;
            id = parent;
        }
        /* frees carry no stack: the analyzer charges them to their allocation */
        assert_int_equal(depth, t->recs[i].u.mem.op == VT_OP_FREE ? 0 : 2);
    }
    tc_free(t);

    use_output("depth0");
    setenv("VRAMTRACE_STACK_DEPTH", "0", 1);
    assert_true(vt_recorder_start(&tc_links));
    record_worker((void *)(uintptr_t)0);
    snprintf(path, sizeof path, "%s", vt_recorder_path());
    vt_recorder_stop(true);
    unsetenv("VRAMTRACE_STACK_DEPTH");
    t = tc_load_file(path);
    assert_int_equal(t->rc, 0);
    assert_int_equal(vt_reader_stack_node_count(t->reader), 0);
    assert_int_equal(tc_count(t, VT_REC_MEM), NEVENTS);
    tc_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads_every_event_once),
        cmocka_unit_test(test_cut_file_decodes_up_to_last_chunk),
        cmocka_unit_test(test_phases_devices_thread_names),
        cmocka_unit_test(test_thread_first_name),
        cmocka_unit_test(test_rename_seen_by_periodic_check),
        cmocka_unit_test(test_stack_depth_option),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
