/* The trace file's descriptor, out of the program's reach. See file_keeper.h. */
#define _GNU_SOURCE
#include "file_keeper.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tracer_services.h"
#include "trace_file.h"
#include "wake_word.h"

#ifndef SYS_close_range
#define SYS_close_range 436 /* the same number on every architecture but alpha */
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif

/* The keeper runs the safe path walk and a few system calls: a small stack
 * (the writer's default one is 8 MiB of address space). */
#define VT_KEEPER_STACK (256u * 1024u)

enum keeper_op { OP_NONE, OP_CREATE, OP_WRITE, OP_CLOSE, OP_ADOPT, OP_QUIT };
/* how the keeper gets a table of its own: what the probes showed safe */
enum table_way { WAY_NONE, WAY_CLOSE_RANGE, WAY_UNSHARE, WAY_EITHER };
enum keeper_mode { MODE_NONE, MODE_KEEPER, MODE_SHARED };

static struct {
    enum keeper_mode mode;
    char why_shared[96]; /* MODE_SHARED: why */
    int fd; /* in the keeper's table (MODE_KEEPER) or the program's */
    struct vt_fd_identity id;
    pthread_t thread;
    atomic_int tid; /* the keeper's thread id while it runs, else 0 */
    atomic_int kernel_tid; /* the keeper's thread id, kept after it ends */
    enum table_way way;
    bool close_range_answers; /* close_range returns (an error, perhaps): safe to call */
    /* one request at a time: the writer fills it, bumps asked and waits
     * until answered catches up */
    struct vt_wake ask, answer;
    atomic_uint asked, answered;
    atomic_int private_table; /* the keeper's first answer: 1 it has one */
    enum keeper_op op;
    const char *path;
    char *actual;
    size_t actual_len;
    unsigned *alternatives;
    struct vt_safe_path_refusal *refusal;
    const uint8_t *data;
    size_t len;
    int rc, err;
    /* the file is held in the program's table, fd its number there,
     * while no keeper runs (vt_keeper_hand_out); OP_ADOPT opens it through
     * /proc by the writer's thread id, which shares that table */
    bool handed_out;
    int adopt_from_tid;
} keeper = {.fd = -1};

/* ---- the keeper's own table ---- */

/* Closes every descriptor of the calling thread's (unshared) table, by the
 * list in /proc: the copies unshare(CLONE_FILES) made of the program's. */
static bool close_listed(void)
{
    DIR *d = opendir("/proc/thread-self/fd");
    if (!d)
        return false;
    int own = dirfd(d);
    int fds[256];
    size_t n;
    do {
        n = 0;
        rewinddir(d);
        struct dirent *e;
        while (n < sizeof fds / sizeof fds[0] && (e = readdir(d)) != NULL) {
            char *end;
            long fd = strtol(e->d_name, &end, 10);
            if (*end == '\0' && end != e->d_name && fd != own)
                fds[n++] = (int)fd;
        }
        for (size_t i = 0; i < n; i++)
            close(fds[i]);
    } while (n > 0);
    closedir(d);
    return true;
}

/* A table of the thread's own holding none of the program's files, by the
 * way the probes showed safe. */
static bool own_table(void)
{
    /* Linux 5.9: a new table, none copied */
    if (keeper.way == WAY_CLOSE_RANGE || keeper.way == WAY_EITHER) {
        if (syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0)
            return true;
        if (keeper.way == WAY_CLOSE_RANGE)
            return false;
    }
    /* the raw call, as the probe made it: unshare() would bind to the
     * library's own hook of the program's unshare (namespace_hooks.c) */
    if (keeper.way == WAY_NONE || syscall(SYS_unshare, CLONE_FILES) != 0)
        return false;
    /* A copy of the program's table: let go of every one of its files
     * (nothing of the program's changes: its POSIX locks belong to its own
     * table, and its files stay open there). */
    if ((keeper.close_range_answers && syscall(SYS_close_range, 0u, ~0u, 0u) == 0) ||
        close_listed())
        return true;
    return false; /* copies left: the thread's exit lets them go */
}

/* ---- probes: a seccomp filter may answer close_range or unshare by
 * killing the process or the thread, or by a SIGSYS to the program's
 * handler; the keeper makes neither call before a child process has made
 * it and lived. The child is a copy (no shared memory: the core dump of a
 * process sharing memory with others ends them too on kernels before
 * 5.16), of the writer alone, that makes raw system calls only. ---- */

static int probe_child(enum table_way way)
{
    /* no core file of the probe's death; SIGSYS as the kernel's default,
     * unblocked: a filter's trap ends the probe, never in the program's
     * handler */
    struct {
        uint64_t cur, max;
    } core = {1, 1}; /* 1 byte: below any core, and no pipe to a handler */
    struct {
        void *handler;
        unsigned long flags;
        void *restorer;
        uint64_t mask;
    } dfl = {.handler = SIG_DFL};
    uint64_t sigsys = 1ull << (SIGSYS - 1);
    if (syscall(SYS_prlimit64, 0, RLIMIT_CORE, &core, NULL) != 0 ||
        syscall(SYS_rt_sigaction, SIGSYS, &dfl, NULL, sizeof sigsys) != 0 ||
        syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &sigsys, NULL, sizeof sigsys) != 0)
        return 3;
    if (way == WAY_CLOSE_RANGE)
        return syscall(SYS_close_range, 0u, ~0u, CLOSE_RANGE_UNSHARE) == 0 ? 0 : 1;
    return syscall(SYS_unshare, CLONE_FILES) == 0 ? 0 : 1;
}

/* 0: the call worked in the child, 1: it answered an error, -1: the child
 * did not live through it (or could not be made). The child sends no
 * SIGCHLD and is waited for by its own id: the program's handlers and
 * waits never see it. */
static int survives_in_child(enum table_way way)
{
    int err = errno;
    long pid = syscall(SYS_clone, 0L, NULL, NULL, NULL, 0L);
    if (pid == 0)
        syscall(SYS_exit_group, probe_child(way));
    int status = 0, rc = -1;
    if (pid > 0) {
        while (waitpid((pid_t)pid, &status, __WALL) < 0 && errno == EINTR)
            ;
        if (WIFEXITED(status) && WEXITSTATUS(status) <= 1)
            rc = WEXITSTATUS(status);
    }
    errno = err;
    return rc;
}

/* Whether a seccomp filter may answer the keeper's calls (the kernel's
 * word in /proc; without it, as if one does). */
static bool under_seccomp_filter(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return true;
    char line[128];
    bool filtered = true;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Seccomp:", 8) == 0) {
            filtered = atoi(line + 8) != 0;
            break;
        }
    fclose(f);
    return filtered;
}

/* The way the keeper may take; why_shared says why none where none. No
 * filter: the keeper tries either itself, no child made. */
static enum table_way choose_way(void)
{
    if (!under_seccomp_filter()) {
        keeper.close_range_answers = true;
        return WAY_EITHER;
    }
    int close_range = survives_in_child(WAY_CLOSE_RANGE);
    keeper.close_range_answers = close_range >= 0;
    if (close_range == 0)
        return WAY_CLOSE_RANGE;
    int unshared = survives_in_child(WAY_UNSHARE);
    if (unshared == 0)
        return WAY_UNSHARE;
    snprintf(keeper.why_shared, sizeof keeper.why_shared,
             close_range < 0 || unshared < 0
                 ? "a seccomp filter kills the calls for a descriptor table of its own"
                 : "the kernel refused a descriptor table of its own");
    return WAY_NONE;
}

/* ---- requests ---- */

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            return EIO;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Created but no descriptor kept: the file goes (it is empty, and ours),
 * and the error is the descriptor's, not the name's. Keeps errno. */
static void not_kept(const char *actual, unsigned *alternatives,
                     struct vt_safe_path_refusal *refusal)
{
    int err = errno;
    unlink(actual);
    *alternatives = 0;
    refusal->text[0] = '\0';
    errno = err;
}

/* The trace file open again, high in the calling thread's table, through
 * /proc's link to descriptor fd of thread tid's table (the same file,
 * whatever the mount namespace shows under its name now); -1 with errno,
 * ESTALE if that descriptor is another file. */
static int reopen_from(int tid, int fd)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/task/%d/fd/%d", tid, fd);
    int own = open(link, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
    struct vt_fd_identity id;
    if (own < 0 || (own = vt_fd_move_high(own, &id)) < 0)
        return -1;
    if (id.dev != keeper.id.dev || id.ino != keeper.id.ino) {
        close(own);
        errno = ESTALE;
        return -1;
    }
    return own;
}

static void serve(void)
{
    switch (keeper.op) {
    case OP_CREATE: {
        int fd = vt_trace_file_create(keeper.path, keeper.actual, keeper.actual_len, keeper.alternatives, keeper.refusal);
        /* moved high as in the program's table: out of 0-2 at least, so
         * that whatever writes to fd 2 from this thread (a sanitizer's
         * report) never lands in the trace */
        if (fd >= 0 && (fd = vt_fd_move_high(fd, &keeper.id)) < 0)
            not_kept(keeper.actual, keeper.alternatives, keeper.refusal);
        keeper.err = fd < 0 ? errno : 0;
        keeper.fd = fd;
        keeper.rc = fd < 0 ? -1 : 0;
        break;
    }
    case OP_WRITE:
        keeper.err = write_all(keeper.fd, keeper.data, keeper.len);
        break;
    case OP_CLOSE:
        keeper.err = close(keeper.fd) != 0 ? errno : 0;
        keeper.fd = -1;
        break;
    case OP_ADOPT: {
        int fd = reopen_from(keeper.adopt_from_tid, keeper.fd);
        keeper.err = fd < 0 ? errno : 0;
        keeper.fd = fd;
        break;
    }
    case OP_NONE:
    case OP_QUIT:
        break;
    }
}

static void answer(unsigned n)
{
    atomic_store(&keeper.answered, n);
    vt_wake_post(&keeper.answer);
}

static void *keeper_main(void *arg)
{
    (void)arg;
    vt_in_tracer = 1; /* nothing this thread does is the program's */
    atomic_store(&keeper.tid, (int)gettid());
    atomic_store(&keeper.kernel_tid, (int)gettid());
    bool ok = own_table();
    atomic_store(&keeper.private_table, ok);
    if (!ok)
        atomic_store(&keeper.tid, 0);
    answer(1);
    if (!ok)
        return NULL;
    unsigned done = 1;
    for (;;) {
        unsigned seen = vt_wake_seen(&keeper.ask);
        if (atomic_load(&keeper.asked) == done) {
            vt_wake_wait(&keeper.ask, seen, 1000);
            continue;
        }
        enum keeper_op op = keeper.op;
        serve();
        if (op == OP_QUIT)
            atomic_store(&keeper.tid, 0);
        answer(++done);
        if (op == OP_QUIT)
            return NULL; /* its table, with anything left in it, goes with it */
    }
}

/* Whether the keeper thread is gone without answering (a seccomp filter
 * killed the thread, the kernel refused it a stack page...). */
static bool keeper_vanished(void)
{
    int tid = atomic_load(&keeper.kernel_tid);
    return tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH;
}

/* Waits until the keeper has answered n requests - without a time bound
 * (a write may block, as the writer's did), but never on a keeper that is
 * gone. false: it is gone, and the trace with its table. */
static bool wait_answered(unsigned n)
{
    for (bool waited = false;; waited = true) {
        unsigned seen = vt_wake_seen(&keeper.answer);
        if (atomic_load(&keeper.answered) == n)
            return true;
        if (waited) { /* asked after a wait, not once per request */
            int err = errno;
            bool gone = keeper_vanished();
            errno = err;
            if (gone)
                return atomic_load(&keeper.answered) == n;
        }
        vt_wake_wait(&keeper.answer, seen, 1000);
    }
}

/* The keeper gone: the trace's descriptor went with its table. */
static void lost(void)
{
    pthread_join(keeper.thread, NULL); /* gone: the kernel let its futex go */
    keeper.fd = -1;
    keeper.mode = MODE_SHARED;
    snprintf(keeper.why_shared, sizeof keeper.why_shared, "the tracer's keeper thread was killed");
}

static bool call(enum keeper_op op)
{
    keeper.op = op;
    unsigned n = atomic_load(&keeper.asked) + 1;
    atomic_store(&keeper.asked, n);
    vt_wake_post(&keeper.ask);
    if (wait_answered(n))
        return true;
    lost();
    keeper.rc = -1;
    keeper.err = EIO;
    return false;
}

/* Starts the keeper; MODE_SHARED where it cannot have a table of its own. */
static void start(void)
{
    atomic_store(&keeper.asked, 1); /* its first answer: whether it has a table */
    atomic_store(&keeper.answered, 0);
    atomic_store(&keeper.ask.waiters, 0);
    atomic_store(&keeper.answer.waiters, 0);
    atomic_store(&keeper.private_table, 0);
    atomic_store(&keeper.kernel_tid, 0);
    keeper.way = choose_way();
    if (keeper.way == WAY_NONE) {
        keeper.mode = MODE_SHARED;
        return;
    }
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (rc == 0) {
        pthread_attr_setstacksize(&attr, VT_KEEPER_STACK);
        /* signals stay blocked: the writer's mask (writer.c) is inherited */
        rc = pthread_create(&keeper.thread, &attr, keeper_main, NULL);
        pthread_attr_destroy(&attr);
    }
    if (rc == 0) {
        bool answered = wait_answered(1);
        if (answered && atomic_load(&keeper.private_table)) {
            keeper.mode = MODE_KEEPER;
            return;
        }
        pthread_join(keeper.thread, NULL);
        snprintf(keeper.why_shared, sizeof keeper.why_shared, "%s",
                 answered ? "the kernel refused a descriptor table of its own"
                          : "the tracer's keeper thread was killed");
    } else {
        snprintf(keeper.why_shared, sizeof keeper.why_shared, "no thread for a table of its own: %s",
                 strerror(rc));
    }
    keeper.mode = MODE_SHARED;
}

/* ---- the writer's side ---- */

int vt_keeper_create(const char *path, char *actual, size_t actual_len, unsigned *alternatives,
                     struct vt_safe_path_refusal *refusal, struct vt_fd_identity *id)
{
    if (keeper.mode == MODE_NONE)
        start();
    if (keeper.mode == MODE_SHARED) {
        int fd = vt_trace_file_create(path, actual, actual_len, alternatives, refusal);
        if (fd >= 0) {
            fd = vt_fd_move_high(fd, &keeper.id);
            if (fd < 0)
                not_kept(actual, alternatives, refusal);
        }
        if (fd < 0)
            return -1;
        keeper.fd = fd;
        *id = keeper.id;
        return 0;
    }
    keeper.path = path;
    keeper.actual = actual;
    keeper.actual_len = actual_len;
    keeper.alternatives = alternatives;
    keeper.refusal = refusal;
    call(OP_CREATE);
    if (keeper.rc != 0) {
        errno = keeper.err;
        return -1;
    }
    *id = keeper.id;
    return 0;
}

bool vt_keeper_is_open(void)
{
    return keeper.fd >= 0;
}

bool vt_keeper_is_calling_thread(void)
{
    return atomic_load(&keeper.tid) == (int)gettid();
}

const char *vt_keeper_why_shared(void)
{
    return keeper.mode == MODE_SHARED ? keeper.why_shared : NULL;
}

int vt_keeper_write(const uint8_t *p, size_t len)
{
    if (keeper.fd < 0)
        return EBADF;
    if (keeper.mode == MODE_SHARED) {
        /* the program's table: checked first, once per write (a chunk) */
        if (!vt_fd_still_ours(keeper.fd, &keeper.id)) {
            keeper.fd = -1; /* not ours: never closed, never written */
            return EBADF;
        }
        return write_all(keeper.fd, p, len);
    }
    keeper.data = p;
    keeper.len = len;
    call(OP_WRITE);
    return keeper.err;
}

int vt_keeper_close(void)
{
    int err = 0;
    if (keeper.mode == MODE_KEEPER) {
        if (keeper.fd >= 0) {
            call(OP_CLOSE);
            err = keeper.err;
        }
        if (keeper.mode == MODE_KEEPER && call(OP_QUIT))
            pthread_join(keeper.thread, NULL);
    } else if (keeper.fd >= 0 && vt_fd_still_ours(keeper.fd, &keeper.id)) {
        err = close(keeper.fd) != 0 ? errno : 0;
    }
    keeper.fd = -1;
    keeper.mode = MODE_NONE;
    return err;
}

void vt_keeper_forget(void)
{
    vt_keeper_close();
}

/* Until the kernel takes the ended keeper off the process's thread list
 * (pthread_join returns a moment before), bounded. */
static void wait_keeper_gone(void)
{
    for (unsigned i = 0; i < 20000 && !keeper_vanished(); i++) {
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
}

int vt_keeper_hand_out(void)
{
    if (keeper.mode != MODE_KEEPER)
        return 0; /* no keeper thread: nothing of ours in a table of its own */
    int fd = -1;
    if (keeper.fd >= 0 && (fd = reopen_from(atomic_load(&keeper.kernel_tid), keeper.fd)) < 0)
        return -1; /* the keeper stays; the caller ends the trace */
    if (!call(OP_QUIT)) { /* gone meanwhile: its table, and the file, with it */
        if (fd >= 0)
            close(fd);
        return -1;
    }
    pthread_join(keeper.thread, NULL);
    wait_keeper_gone();
    keeper.fd = fd;
    keeper.handed_out = fd >= 0;
    keeper.mode = fd >= 0 ? MODE_SHARED : MODE_NONE;
    snprintf(keeper.why_shared, sizeof keeper.why_shared,
             "held there while the tracer's threads stopped for a namespace change");
    return 0;
}

void vt_keeper_adopt(void)
{
    if (!keeper.handed_out)
        return;
    keeper.handed_out = false;
    int held = keeper.fd; /* in the program's table */
    if (!vt_fd_still_ours(held, &keeper.id))
        return; /* the program took the number: vt_keeper_write refuses it */
    keeper.mode = MODE_NONE;
    keeper.fd = -1;
    start();
    if (keeper.mode == MODE_KEEPER) {
        keeper.fd = held;
        keeper.adopt_from_tid = (int)gettid(); /* the writer shares the program's table */
        if (call(OP_ADOPT) && keeper.fd >= 0) {
            if (vt_fd_still_ours(held, &keeper.id))
                close(held);
            return;
        }
        if (keeper.mode == MODE_KEEPER && call(OP_QUIT)) /* it could not: it ends */
            pthread_join(keeper.thread, NULL);
    }
    /* as where the kernel refuses a table of its own: the program's */
    keeper.mode = MODE_SHARED;
    keeper.fd = held;
}

void vt_keeper_after_fork_child(void)
{
    if (keeper.mode == MODE_SHARED && keeper.fd >= 0 && vt_fd_still_ours(keeper.fd, &keeper.id))
        close(keeper.fd);
    keeper.fd = -1;
    keeper.mode = MODE_NONE;
    atomic_store(&keeper.tid, 0);
}
