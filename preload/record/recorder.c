/*
 * The recorder's entry points (preload/record_api/recorder.h) and its
 * lifecycle (recorder_control.h): start, stop, fork. The hook's path:
 * recursion guard, stack capture (outside any lock), append to the
 * thread's own buffer. Nothing here writes files or compresses: the writer
 * thread does (writer.c).
 */
#define _GNU_SOURCE
#include "recorder.h"

#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "event_clock.h"
#include "exit_line.h"
#include "fast_unwind.h"
#include "fatal_signals.h"
#include "fork_guard.h"
#include "modules.h"
#include "options.h"
#include "process_info.h"
#include "python_stack.h"
#include "recorder_control.h"
#include "thread_buffer.h"
#include "writer.h"

/* Memory the buffers may take before hooks wait for the writer, however
 * many threads record (below it: two blocks a thread and a spare 512 KiB,
 * thread_buffer.c). */
#define VT_BUFFER_MEMORY_MAX (32u << 20)
/* Frames of the recorder itself on top of every captured stack when it is
 * linked into a program (tests): capture_stack, begin_mem_with_stack and
 * the vt_record_* entry. In libvramtrace.so every leading frame inside the
 * library is dropped instead (the hook's wrapper too, whatever its depth). */
#define VT_SELF_FRAMES_STATIC 3

static struct {
    bool session;           /* started, not stopped */
    struct vt_recorder_links links; /* as handed to vt_recorder_start */
    struct vt_options opts;
    char output_template[4096];
    char path[4096];
    uint64_t stack_depth;
    int (*walk)(void **buf, int size); /* unw_backtrace or the own walker */
    uint64_t self_start, self_end; /* the library's mapped extent */
    bool skip_by_extent;
    bool walk_from_hook; /* the own walker starts at vt_hook_frame's caller */
    pid_t pid; /* the session's process (a vfork child shares this state, not the pid) */
} recorder;

static uint64_t clock_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- stacks ---- */

/* Where a walk starts: at capture_stack (recorder.walk, the whole stack), or at
 * the caller of the recording hook's frame (vt_hook_frame, the own walker
 * only). */
enum walk_start { WALK_HERE, WALK_FROM_HOOK };

/* Frames of the library on top of a captured stack (the hook's wrapper,
 * its action, the recorder; from the hook's frame normally none), the most
 * seen so far by each way of walking; -1 before the first capture. The
 * walk asks for depth + this many frames rather than a fixed margin: each
 * frame walked costs ~24 instructions of the own walker (fast_unwind.h),
 * ~75 of libunwind. A path with more frames of ours walks again. */
static atomic_int self_frames_max[2] = {-1, -1};

static size_t self_frames_at(void *const *buf, size_t n)
{
    size_t i = 0;
    if (recorder.skip_by_extent) {
        while (i < n && (uint64_t)(uintptr_t)buf[i] >= recorder.self_start &&
               (uint64_t)(uintptr_t)buf[i] < recorder.self_end)
            i++;
    } else {
        i = n < VT_SELF_FRAMES_STATIC ? n : VT_SELF_FRAMES_STATIC;
    }
    return i;
}

static int frames_wanted(bool python, enum walk_start start, int cap)
{
    int seen = atomic_load_explicit(&self_frames_max[start], memory_order_relaxed);
    int want = python ? cap : (int)recorder.stack_depth + (seen < 0 ? 16 : seen);
    return want > cap ? cap : want;
}

/* The walk from the hook's frame, -1 if there is none or the own walker
 * cannot describe that stack. to_cut: it may end in the Python
 * interpreter's loop (python_stack.h). */
static int walk_from_hook(void **buf, int size, const void *frame, bool to_cut)
{
#if VT_HAVE_FAST_UNWIND
    if (frame)
        return to_cut ? vt_fast_backtrace_from_to_cut(buf, size, frame)
                      : vt_fast_backtrace_from(buf, size, frame);
#else
    (void)buf, (void)size, (void)frame, (void)to_cut;
#endif
    return -1;
}

/*
 * The stack's frames to keep, at most recorder.stack_depth of them: *kept points
 * into buf (VT_CAPTURE_FRAMES entries, the walk's own) or, for a Python
 * thread, at ips (the merged stack). Returns how many.
 *
 * Both ways of walking give the same frames once the library's leading
 * ones are dropped: a walk is a function of where it starts, and the one
 * from here passes through the hook's frame in exactly the state the
 * other starts from (the caller's return address, stack pointer and rbp
 * as the frame saved them). Whatever the own walker cannot describe from
 * the hook's frame is walked from here, as before.
 */
#define VT_CAPTURE_FRAMES (VT_MAX_STACK_DEPTH + 16)
static __attribute__((noinline)) size_t capture_stack(void **buf, uint64_t *ips,
                                                      const uint64_t **kept, bool *merged)
{
    const int cap = VT_CAPTURE_FRAMES;
    /* A Python thread's stack is cut where it enters the interpreter,
     * which may lie deeper than the depth kept (python_stack.h). */
    bool python = vt_py_stack_active();
    const void *hook_frame = recorder.walk_from_hook ? vt_hook_frame : NULL;
    enum walk_start start = WALK_FROM_HOOK;
    int want = frames_wanted(python, start, cap);
    int n = walk_from_hook(buf, want, hook_frame, python);
    if (n < 0) {
        start = WALK_HERE;
        want = frames_wanted(python, start, cap);
        n = recorder.walk(buf, want);
    }
    size_t i = self_frames_at(buf, n < 0 ? 0 : (size_t)n);
    if ((int)i > atomic_load_explicit(&self_frames_max[start], memory_order_relaxed))
        atomic_store_explicit(&self_frames_max[start], (int)i, memory_order_relaxed);
    if (!python && n == want && want < cap && (size_t)n - i < recorder.stack_depth) {
        /* this path has more frames of ours than any before: walk again */
        n = start == WALK_FROM_HOOK ? walk_from_hook(buf, cap, hook_frame, false) : -1;
        if (n < 0)
            n = recorder.walk(buf, cap);
        i = self_frames_at(buf, n < 0 ? 0 : (size_t)n);
    }
    if (n <= 0)
        return 0;
    if (python) {
        *merged = true;
        *kept = ips;
        bool native_at_interpreter;
        size_t k = vt_py_stack_merge(buf + i, (size_t)n - i, ips, recorder.stack_depth,
                                     &native_at_interpreter);
        if (!native_at_interpreter || start != WALK_FROM_HOOK)
            return k;
        /* no Python frame after all: the native stack, whole */
        n = walk_from_hook(buf, cap, hook_frame, false);
        if (n < 0)
            n = recorder.walk(buf, cap);
        i = self_frames_at(buf, n < 0 ? 0 : (size_t)n);
        if (n <= 0)
            return 0;
        return vt_py_stack_merge(buf + i, (size_t)n - i, ips, recorder.stack_depth,
                                 &native_at_interpreter);
    }
    _Static_assert(sizeof buf[0] == sizeof ips[0], "a return address is 64 bits");
    *kept = (const uint64_t *)(buf + i);
    return (size_t)n - i < recorder.stack_depth ? (size_t)n - i : recorder.stack_depth;
}

/* ---- entry points ---- */

bool vt_recorder_active(void)
{
    if (atomic_load_explicit(&vt_tb_active, memory_order_relaxed) != 0)
        return true;
    /* A hook asks: the process uses the driver. If tracing could not start
     * (no thread under an address-space limit, a path too long), what start
     * found is said now, once (hooks skip their events while inactive, so
     * may_record would never say it). */
    vt_say_held();
    return false;
}

/* An event a hook is about to record: false if it must not. An event
 * refused because the recorder is closing (process exit: the final flush
 * has begun, other threads still run) is counted as lost rather than
 * silently dropped. The tracer's own calls (vt_in_tracer) are no events. */
static bool may_record(void)
{
    if (vt_in_tracer)
        return false;
    if (vt_recorder_active())
        return true;
    vt_tb_note_refused();
    vt_say_held(); /* the first event of a process that does not trace */
    return false;
}

/* A MEM record with its stack: the frames, then room for both. Not
 * inlined: its 2 KiB of frames stay off the path of the events without
 * a stack. */
static __attribute__((noinline)) struct vt_raw_mem *begin_mem_with_stack(void)
{
    void *buf[VT_CAPTURE_FRAMES];
    uint64_t ips[VT_MAX_STACK_DEPTH]; /* a Python thread's merged stack */
    const uint64_t *kept = NULL;
    bool python = false;
    size_t n = capture_stack(buf, ips, &kept, &python);
    return (struct vt_raw_mem *)vt_tb_begin_with_stack(
        VT_REC_MEM, vt_raw_round(sizeof(struct vt_raw_mem)), kept, n, python,
        VT_NAME_CHECK_SOMETIMES);
}

void vt_record_mem(const struct vt_mem_event *ev)
{
    if (!ev || !may_record())
        return;
    vt_in_tracer++;
    vt_fork_guard_enter();
    /* A free gets no stack: the analyzer charges it to its allocation's
     * stack, never to its own (docs/user/REPORT.md, "The live set"), and the
     * walk is most of an event's cost (docs/internals/PERFORMANCE.md; why frees
     * carry none: docs/internals/performance-history.md, section 1, "After the
     * tracer work"). */
    struct vt_raw_mem *m =
        ev->op != VT_OP_FREE && recorder.stack_depth
            ? begin_mem_with_stack()
            : (struct vt_raw_mem *)vt_tb_begin(VT_REC_MEM, vt_raw_round(sizeof(struct vt_raw_mem)),
                                               0, VT_NAME_CHECK_SOMETIMES);
    if (m) {
        m->ev = *ev;
        m->end_ticks = m->h.ticks; /* a free recorded after its call: no duration */
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    vt_in_tracer--;
}

struct vt_free_slot *vt_record_free_begin(void)
{
    /* The hook's guard is up (its pre-call step): what this calls of the
     * program's libraries is not recorded, and a nested hook has none. */
    if (vt_in_tracer != 1 || !vt_recorder_active())
        return NULL;
    vt_fork_guard_enter();
    struct vt_raw_mem *m = (struct vt_raw_mem *)vt_tb_begin(
        VT_REC_MEM, vt_raw_round(sizeof(struct vt_raw_mem)), 0, VT_NAME_CHECK_SOMETIMES);
    if (m) {
        /* Before the commit publishes the event to the writer. The stamp,
         * taken inside the buffer's handshake, is before the real call:
         * before the driver can give the address to anyone else, hence
         * before any allocation of it is stamped. */
        __atomic_store_n(&m->h.flags, VT_RAW_PENDING, __ATOMIC_RELAXED);
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    return (struct vt_free_slot *)m;
}

void vt_record_free_end(struct vt_free_slot *slot, const struct vt_mem_event *ev)
{
    /* The slot is the hook's until the flag is cleared: the writer reads no
     * further than its header, and keeps its block (writer.c). Nothing
     * else of this thread was appended since: it was in the real call. */
    struct vt_raw_mem *m = (struct vt_raw_mem *)slot;
    /* A plain read: it may run a few instructions ahead of the call's
     * last ones, nanoseconds against a unit of a microsecond; the ordered
     * one (lfence) was a third of this step's cost. */
    m->end_ticks = vt_clock_ticks();
    m->ev = *ev;
    __atomic_store_n(&m->h.flags, 0, __ATOMIC_RELEASE); /* no other flag: no stack */
}

struct vt_free_slot *vt_record_mem_begin(void)
{
    if (!may_record())
        return NULL;
    vt_in_tracer++;
    vt_fork_guard_enter();
    struct vt_raw_mem *m =
        recorder.stack_depth
            ? begin_mem_with_stack()
            : (struct vt_raw_mem *)vt_tb_begin(VT_REC_MEM, vt_raw_round(sizeof(struct vt_raw_mem)),
                                               0, VT_NAME_CHECK_SOMETIMES);
    if (m) {
        /* before the commit publishes it: the writer waits for the body */
        __atomic_store_n(&m->h.flags, m->h.flags | VT_RAW_PENDING, __ATOMIC_RELAXED);
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    vt_in_tracer--;
    return (struct vt_free_slot *)m;
}

void vt_record_mem_end(struct vt_free_slot *slot, const struct vt_mem_event *ev)
{
    /* The slot is the hook's until the flag is cleared (vt_record_free_end) */
    struct vt_raw_mem *m = (struct vt_raw_mem *)slot;
    m->ev = *ev;
    m->end_ticks = m->h.ticks; /* an allocation: no duration */
    __atomic_and_fetch(&m->h.flags, (uint8_t)~VT_RAW_PENDING, __ATOMIC_RELEASE);
}

void vt_record_device(int ordinal, const uint8_t uuid[VT_UUID_SIZE], const char *name,
                      uint64_t total_bytes)
{
    if (!may_record())
        return;
    vt_in_tracer++;
    vt_fork_guard_enter();
    size_t len = name ? strnlen(name, VT_MAX_NAME_LEN) : 0;
    uint32_t size = vt_raw_round(vt_raw_round(sizeof(struct vt_raw_device)) + len);
    struct vt_raw_device *d = (struct vt_raw_device *)vt_tb_begin(VT_REC_DEVICE, size, 0,
                                                                  VT_NAME_CHECK_SOMETIMES);
    if (d) {
        d->ordinal = ordinal;
        d->name_len = (uint32_t)len;
        d->total_bytes = total_bytes;
        if (uuid)
            memcpy(d->uuid, uuid, VT_UUID_SIZE);
        else
            memset(d->uuid, 0, VT_UUID_SIZE);
        if (len)
            memcpy((char *)d + vt_raw_round(sizeof *d), name, len);
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    vt_in_tracer--;
}

/* Phase events are rare and are where programs rename threads (a worker
 * names itself, then opens its first phase), so the name is checked now. */
static void record_range(uint8_t type, uint64_t range_id, const char *domain, const char *name)
{
    if (!may_record())
        return;
    vt_in_tracer++;
    vt_fork_guard_enter();
    size_t dlen = domain ? strnlen(domain, VT_MAX_NAME_LEN) : 0;
    size_t nlen = name ? strnlen(name, VT_MAX_NAME_LEN) : 0;
    uint32_t size = vt_raw_round(vt_raw_round(sizeof(struct vt_raw_range)) + dlen + nlen);
    struct vt_raw_range *g = (struct vt_raw_range *)vt_tb_begin(type, size, 0, VT_NAME_CHECK_NOW);
    if (g) {
        g->range_id = range_id;
        g->domain_len = (uint32_t)dlen;
        g->name_len = (uint32_t)nlen;
        g->has_domain = domain != NULL;
        g->has_name = name != NULL;
        memset(g->pad, 0, sizeof g->pad);
        char *text = (char *)g + vt_raw_round(sizeof *g);
        if (dlen)
            memcpy(text, domain, dlen);
        if (nlen)
            memcpy(text + dlen, name, nlen);
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    vt_in_tracer--;
}

void vt_record_thread_renamed(void)
{
    vt_tb_note_rename();
}

void vt_record_range_push(const char *domain, const char *name)
{
    record_range(VT_REC_RANGE_PUSH, 0, domain, name);
}

void vt_record_range_pop(const char *domain)
{
    record_range(VT_REC_RANGE_POP, 0, domain, NULL);
}

void vt_record_range_start(uint64_t range_id, const char *domain, const char *name)
{
    record_range(VT_REC_RANGE_START, range_id, domain, name);
}

void vt_record_range_end(uint64_t range_id)
{
    record_range(VT_REC_RANGE_END, range_id, NULL, NULL);
}

void vt_record_mark(const char *domain, const char *name)
{
    record_range(VT_REC_MARK, 0, domain, name);
}

/* A census's records come in a burst from one Python thread, between
 * steps: rare, and never on a memory event's path. */
void vt_record_part(const struct vt_part_event *ev, const char *dtype, const char *name)
{
    if (!ev || !may_record())
        return;
    vt_in_tracer++;
    vt_fork_guard_enter();
    size_t dlen = dtype ? strnlen(dtype, VT_MAX_NAME_LEN) : 0;
    size_t nlen = name ? strnlen(name, VT_MAX_NAME_LEN) : 0;
    uint32_t size = vt_raw_round(vt_raw_round(sizeof(struct vt_raw_part)) + dlen + nlen);
    struct vt_raw_part *p = (struct vt_raw_part *)vt_tb_begin(VT_REC_PART, size, 0,
                                                              VT_NAME_CHECK_SOMETIMES);
    if (p) {
        p->ev = *ev;
        p->dtype_len = (uint32_t)dlen;
        p->name_len = (uint32_t)nlen;
        char *text = (char *)p + vt_raw_round(sizeof *p);
        if (dlen)
            memcpy(text, dtype, dlen);
        if (nlen)
            memcpy(text + dlen, name, nlen);
        vt_tb_commit();
    }
    vt_fork_guard_leave();
    vt_in_tracer--;
}

void vt_record_modules_changed(void)
{
    vt_writer_modules_changed();
}

void vt_record_modules_gone(void)
{
    vt_fast_unwind_modules_gone();
    vt_record_modules_changed();
}

/* ---- services to the hooks ---- */

bool vt_record_sigaction(int sig, const struct sigaction *act, struct sigaction *old, int *rc)
{
    return vt_fatal_signals_sigaction(sig, act, old, rc);
}

int vt_guarded_dl_iterate_phdr(vt_phdr_callback cb, void *data)
{
    vt_fork_guard_enter();
    int rc = dl_iterate_phdr(cb, data);
    vt_fork_guard_leave();
    return rc;
}

int vt_guarded_extent_of(const void *addr, uint64_t *start, uint64_t *end, bool *is_main)
{
    vt_fork_guard_enter();
    int rc = vt_modules_extent_of(addr, start, end, is_main);
    vt_fork_guard_leave();
    return rc;
}

/* ---- lifecycle ---- */

static const char *env_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* Expands the template for this process. A forked child whose template
 * has no %p would get its parent's name: it gets ".<pid>" appended. */
static int build_path(bool child, const char *parent_path)
{
    char host[256];
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    struct vt_path_facts f = {
        .pid = (long)getpid(),
        .host = host,
        .rank = vt_rank_from_env(env_lookup, NULL),
        .local_rank = vt_local_rank_from_env(env_lookup, NULL),
    };
    if (vt_expand_path(recorder.output_template, &f, recorder.path, sizeof recorder.path) != 0)
        return -1;
    if (child && !strcmp(recorder.path, parent_path)) {
        size_t len = strlen(recorder.path);
        if ((size_t)snprintf(recorder.path + len, sizeof recorder.path - len, ".%ld", f.pid) >= sizeof recorder.path - len)
            return -1;
    }
    return 0;
}

/* Why the writer cannot run, said on fd (VT_SAY_LATER: held). */
static void say_no_writer(int fd, int rc)
{
    struct rlimit as;
    if (rc == EAGAIN && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
        vt_say(fd, "vramtrace: cannot start the trace writer for %s: %s (the address space is "
                   "limited to %llu KiB: ulimit -v); tracing disabled, the program continues\n",
               recorder.path, strerror(rc), (unsigned long long)(as.rlim_cur / 1024));
    else
        vt_say(fd, "vramtrace: cannot start the trace writer for %s: %s; tracing disabled, the "
                   "program continues\n", recorder.path, strerror(rc));
}

/* A thread's first event (vt_tb_on_new_thread): the process's first one
 * starts the writer thread. Not in a vfork child (the parent's recorder,
 * the parent's thread to start). If the thread cannot start, recording
 * stops here, said now: the process uses the driver. */
static void on_new_thread(void)
{
    if (vt_writer_launched() || getpid() != recorder.pid)
        return;
    int rc = vt_writer_launch();
    if (rc != 0) {
        atomic_store(&vt_tb_active, 0);
        vt_say_held();
        say_no_writer(2, rc);
    }
}

/* Prepares the writer, whose thread starts at this process's first event
 * and creates the file then (writer.h); false (after one stderr line) if
 * it cannot. */
static bool start_writer(void)
{
    size_t block = (size_t)recorder.opts.num[VT_OPTION_BUFFER_KB] * 1024;
    size_t max_blocks = VT_BUFFER_MEMORY_MAX / block;
    if (max_blocks < 8)
        max_blocks = 8;
    vt_tb_init(block, max_blocks);

    struct vt_process_info_buf info;
    vt_process_info_collect(&info, clock_ns(CLOCK_REALTIME), clock_ns(CLOCK_MONOTONIC),
                            recorder.stack_depth, recorder.opts.num[VT_OPTION_FLUSH_MS]);
    int rc = vt_writer_start(recorder.path, recorder.opts.num[VT_OPTION_FLUSH_MS],
                             recorder.opts.num[VT_OPTION_TIME_UNIT_NS],
                             recorder.opts.num[VT_OPTION_TIME_SLACK_US] * 1000,
                             recorder.opts.num[VT_OPTION_VERBOSE] != 0, &info.facts,
                             recorder.links.api_name);
    vt_process_info_free(&info);
    if (rc != 0) {
        /* Said at the process's first driver call (vt_recorder_active),
         * whether or not it ever records. */
        say_no_writer(VT_SAY_LATER, rc);
        return false;
    }
    vt_tb_on_new_thread = on_new_thread;
    vt_tb_open();
    atomic_store(&vt_tb_active, 1);
    return true;
}

static void fork_child(void)
{
    vt_fork_guard_child();
    vt_fatal_signals_after_fork();
    recorder.pid = getpid();
    vt_exit_line_after_fork_child(); /* the parent speaks for it */
    if (!recorder.session)
        return;
    vt_in_tracer++;
    atomic_store(&vt_tb_active, 0);
    vt_tb_after_fork_child();
    vt_writer_after_fork_child();
    char parent_path[sizeof recorder.path];
    memcpy(parent_path, recorder.path, sizeof parent_path);
    if (build_path(true, parent_path) != 0) {
        vt_say(VT_SAY_LATER, "vramtrace: trace path too long; tracing disabled in child %ld\n", (long)getpid());
        recorder.session = false;
    } else if (!start_writer()) {
        recorder.session = false;
    }
    vt_in_tracer--;
}

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void fork_prepare(void)
{
    vt_writer_before_fork();
    vt_fork_guard_prepare();
}

static void register_atfork(void)
{
    pthread_atfork(fork_prepare, vt_fork_guard_parent, fork_child);
}

bool vt_recorder_start(const struct vt_recorder_links *links)
{
    if (recorder.session)
        return vt_recorder_active();
    vt_in_tracer++;
    bool ok = false;
    recorder.links = links ? *links : (struct vt_recorder_links){0};
    vt_py_stack_set_lookup(recorder.links.loader_dlsym);
    /* Said once the process traces (say.c): never by one without CUDA. */
    vt_options_parse(&recorder.opts, env_lookup, NULL, VT_SAY_LATER);
    if (recorder.opts.num[VT_OPTION_VERBOSE])
        vt_options_print(&recorder.opts, VT_SAY_LATER);
    if (recorder.opts.num[VT_OPTION_DISABLE]) {
        vt_say_forget_held(); /* do nothing at all: say nothing either */
        goto out;
    }
    vt_exit_line_init(recorder.opts.num[VT_OPTION_QUIET] != 0);
    vt_clock_setup(recorder.opts.str[VT_OPTION_CLOCK], recorder.opts.num[VT_OPTION_VERBOSE] != 0);
    /* getenv's strings may change under us later (setenv): keep a copy. */
    snprintf(recorder.output_template, sizeof recorder.output_template, "%s", recorder.opts.str[VT_OPTION_OUTPUT]);
    recorder.stack_depth = recorder.opts.num[VT_OPTION_STACK_DEPTH];
    /* Same answers either way (fast_unwind.h); libunwind is the reference. */
    recorder.walk = unw_backtrace;
#if VT_HAVE_FAST_UNWIND
    if (recorder.opts.num[VT_OPTION_FAST_UNWIND])
        recorder.walk = vt_fast_backtrace;
#endif
    bool is_main = false;
    recorder.skip_by_extent = vt_guarded_extent_of((const void *)(uintptr_t)vt_record_mem, &recorder.self_start,
                                            &recorder.self_end, &is_main) == 0 && !is_main;
    /* Only where leading frames are dropped by the library's extent: a
     * program linking the recorder itself (tests) drops a fixed count. */
    recorder.walk_from_hook = VT_HAVE_FAST_UNWIND && recorder.opts.num[VT_OPTION_FAST_UNWIND] && recorder.skip_by_extent;
    if (build_path(false, "") != 0) {
        vt_say(VT_SAY_LATER, "vramtrace: VRAMTRACE_OUTPUT expands to a path that is too long; tracing disabled, the program continues\n");
        goto out;
    }
    recorder.pid = getpid();
    if (!start_writer())
        goto out;
    recorder.session = true;
    pthread_once(&atfork_once, register_atfork);
    vt_fatal_signals_install(recorder.links.sigaction);
    ok = true;
out:
    vt_in_tracer--;
    return ok;
}

void vt_recorder_stop(bool release_memory)
{
    if (!recorder.session)
        return;
    vt_in_tracer++;
    vt_tb_close(); /* from here on, other threads' events are counted as lost */
    vt_writer_stop();
    if (release_memory)
        vt_tb_release_all();
    recorder.session = false;
    if (getpid() == recorder.pid)
        vt_exit_line_say(vt_writer_created_path()); /* the trace is whole: say where */
    vt_in_tracer--;
}

/* How long an exec waits for the trace (a writer round, normally a few ms;
 * longer only if the disk stalls). */
#define VT_EXEC_FLUSH_TIMEOUT_MS 1000

void vt_record_before_exec(void)
{
    /* In a vfork child (or a raw clone without atfork handlers) the
     * recorder, the buffers, even this thread's TLS are the PARENT's, which
     * runs on after the exec: nothing of the parent's may be touched, and
     * nothing is lost. getpid() tells: recorder.pid is the parent's there. */
    if (!recorder.session || getpid() != recorder.pid || vt_in_tracer || !vt_recorder_active())
        return;
    vt_writer_flush_now(VT_EXEC_FLUSH_TIMEOUT_MS);
}

bool vt_record_before_unthreaded(void)
{
    /* Only the session's own process: a vfork child's call is its own
     * (the parent's threads are not in it) */
    if (!recorder.session || getpid() != recorder.pid || vt_in_tracer)
        return false;
    vt_in_tracer++;
    bool paused = vt_writer_pause();
    vt_in_tracer--;
    return paused;
}

void vt_record_after_unthreaded(bool paused)
{
    if (!paused)
        return;
    vt_in_tracer++;
    int rc = vt_writer_resume();
    if (rc != 0)
        vt_say(2, "vramtrace: cannot start the trace writer again for %s: %s; tracing "
                  "disabled, the program continues\n", recorder.path, strerror(rc));
    vt_in_tracer--;
}

/* How long _exit waits for the final round (as an exec waits). */
#define VT_EXIT_FLUSH_TIMEOUT_MS 1000

void vt_record_before_exit(void)
{
    /* As before exec: a vfork child's _exit (the usual end of a failed
     * exec) must not touch the parent's recorder. */
    if (!recorder.session || getpid() != recorder.pid || vt_in_tracer || !vt_recorder_active())
        return;
    vt_tb_close(); /* other threads' later events are counted as lost */
    vt_writer_finish(VT_EXIT_FLUSH_TIMEOUT_MS);
}

const char *vt_record_trace_file(void)
{
    if (!recorder.session || getpid() != recorder.pid || vt_in_tracer || !vt_recorder_active())
        return NULL;
    const char *created = vt_writer_created_path();
    if (!created) {
        vt_writer_flush_now(VT_EXEC_FLUSH_TIMEOUT_MS);
        created = vt_writer_created_path();
    }
    return created;
}

const char *vt_recorder_path(void)
{
    if (!recorder.session)
        return "";
    const char *created = vt_writer_created_path();
    return created ? created : recorder.path;
}
