/*
 * The writer thread. See writer.h.
 *
 * Why the merge is globally ordered, even across chunks: a hook takes its
 * timestamp while it holds its own buffer's lock, and a round begins by
 * taking the cutoff T = now (the ticks of a new calibration point,
 * event_clock.h) and only then locking each buffer in turn to swap its
 * events out. An event stamped t <= T was stamped by a hook that
 * already held that buffer's lock before T; the writer locks the buffer
 * after T, so it waits for that append to finish and sees the event. Any
 * event appended after the swap was stamped after the writer released the
 * lock, so after T. Hence, once every buffer is swapped, ALL events with
 * time <= T are in hand: the round writes exactly those, merged by time,
 * and keeps the later ones (already swapped out, stamped > T) for the next
 * round, whose events are all > T. Every chunk's events are later than the
 * previous chunk's, and the file is one non-decreasing timeline.
 *
 * A free is stamped before its real call, its record reserved then and
 * filled in after (vt_record_free_begin/_end; VT_RAW_PENDING until then):
 * a round that reaches a pending free as its earliest event stops there,
 * so that nothing stamped after the free's call - an allocation of the
 * address the free gave back, say - is written before it.
 *
 * Stamps are clock ticks (the TSC, or monotonic ns): the merge compares
 * ticks, and each event is converted to monotonic ns as it is encoded, by
 * interpolation between the round's two calibration points - the previous
 * round's cutoff and this one's - between which all its events lie. A
 * round that stopped at a pending free leaves events stamped before its
 * point for the next: those are converted between the points around them,
 * kept from the rounds before (event_ns). Conversion is monotone, so the
 * timeline stays non-decreasing in ns.
 */
#define _GNU_SOURCE
#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "event_clock.h"
#include "exit_line.h"
#include "file_keeper.h"
#include "fork_guard.h"
#include "record_ids.h"
#include "thread_buffer.h"
#include "trace_file.h"
#include "tracer_services.h"
#include "wake_word.h"

/* A chunk is written when its records reach this size, or when its oldest
 * record has waited flush_ms, whichever comes first. Not at every round:
 * a busy program wakes the writer each time a thread has two buffer
 * blocks full, and a chunk per block was ~3000 events - every chunk is its own zstd frame with
 * fresh deltas, and that cost 0.1 B/event, 10x the records of a repetitive
 * workload (docs/internals/performance-history.md, "Trace size", "After the format's
 * time unit and the writer's chunk policy"). The size bound keeps one busy
 * interval from making one huge chunk (and a huge loss if cut). */
#define VT_CHUNK_TARGET_RAW (1u << 20)
/* How long an emergency flush waits for a buffer whose lock is taken (its
 * owner may be the crashed thread). */
#define VT_EMERGENCY_LOCK_MS 100
/* How long a flush that writes everything (the final, the emergency one)
 * waits for a free still in the driver (VT_RAW_PENDING): its thread may be
 * the crashed one, or stuck in the driver at exit. A normal round holds
 * the events after such a free back for at most the flush interval (see
 * run_round). */
#define VT_PENDING_FREE_WAIT_MS 100
/* The lines of the last rounds kept for events a round held back behind a
 * pending free (event_ns); a power of two. Such an event waits at most a
 * flush interval, a few rounds; one older than these is dated at the
 * oldest point kept. */
#define VT_CAL_LINES 8

static struct {
    struct vt_fd_identity fd_id; /* the file created (file_keeper.h) */
    bool header_written;     /* the file holds a readable trace (preamble,
                              * first chunk): from then on it is kept */
    char path[4096];         /* the name asked for; then the one created */
    char created_path[4096]; /* published by `created` for other threads */
    atomic_int created;
    bool verbose;
    uint64_t flush_ms;
    pthread_t thread;
    atomic_int state; /* enum writer_state */
    atomic_int tid;   /* the kernel's id of the thread last started */
    atomic_int pause; /* the thread is asked to end for a while (vt_writer_pause) */
    bool resumed;     /* the thread starts again after a pause */
    atomic_int adopted; /* ... and has taken the file back (vt_keeper_adopt) */
    bool ended_at_pause; /* a pause could not keep the file: the trace ended */
    /* No descriptors (wake_word.h): */
    struct vt_wake wake; /* anyone -> writer */
    struct vt_wake done; /* writer -> whoever waits for a round */
    atomic_int stop, emergency, modules_changed, failed;
    atomic_int failing; /* a failure is being said and acted on (fail) */
    atomic_ullong emergency_done; /* emergency rounds finished */
    atomic_ullong finished;       /* 1: the final round is written (trailer) */
    /* vt_writer_flush_now: requests made, and the last request a finished
     * round covers (a round started after reading it) */
    atomic_ullong flush_asked, flush_done;
    atomic_int started; /* the thread runs writer_main (vt_writer_start) */
    uint64_t chunk_due_ns;  /* the encoder's records must be on disk by then
                             * (CLOCK_MONOTONIC ns, UINT64_MAX: none) */

    struct vt_encoder enc;
    void *cctx;
    struct vt_bytes frame;
    struct vt_record_ids ids; /* defines what enc's records refer to */
    struct vt_thread_buf **cursors;
    size_t ncursors, cursor_cap;

    uint64_t events, chunks, lost_reported;
    /* The last rounds' time lines, each between two calibration points;
     * the newest (round_line) is the current round's: its events lie
     * between its points (the top of this file). */
    struct vt_clock_line cal_lines[VT_CAL_LINES];
    unsigned cal_newest;
    uint64_t written_ticks; /* the stamp of the last event written */
} writer;

/* The current round's line: from the previous calibration point (lo) to
 * the round's own (hi). */
static inline const struct vt_clock_line *round_line(void)
{
    return &writer.cal_lines[writer.cal_newest % VT_CAL_LINES];
}

/* The thread: none until the process's first event (vt_writer_launch). */
enum writer_state {
    W_IDLE,     /* prepared, no thread yet */
    W_STARTING, /* pthread_create under way */
    W_RUNNING,  /* the thread exists (or ended and awaits its join) */
    W_PAUSED,   /* ended for a while, joined, the state kept (vt_writer_pause) */
    W_DEAD,     /* it could not start: nothing more is written */
};

static uint64_t now_ns(void)
{
    return vt_clock_monotonic_ns();
}

bool vt_writer_failed(void)
{
    return atomic_load(&writer.failed);
}

/* ---- output ---- */

static bool wait_for_free(const struct vt_raw_header *h);

/* The block holds a free whose hook is still in the driver (and will write
 * its record into the block), after waiting for it a while. */
static bool holds_pending_free(const struct vt_block *b)
{
    for (uint32_t at = b->read; at < b->used;) {
        const struct vt_raw_header *h = (const void *)((const uint8_t *)b->data + at);
        if (vt_raw_pending(h) && !wait_for_free(h))
            return true;
        at += h->size;
    }
    return false;
}

static void discard_buffer(struct vt_thread_buf *tb, void *ctx)
{
    (void)ctx;
    vt_tb_collect(tb, VT_EMERGENCY_LOCK_MS);
    while (tb->wq_head) {
        struct vt_block *b = tb->wq_head;
        if (holds_pending_free(b))
            return; /* kept (never reused nor freed): its hook writes into it */
        tb->wq_head = b->next;
        vt_tb_block_put(b);
    }
    tb->wq_tail = NULL;
}

/* Stops recording and lets go of the buffers. Hooks keep passing calls
 * through; the program runs on. */
static void stop_recording(void)
{
    atomic_store(&vt_tb_active, 0);
    vt_keeper_close(); /* a close error does not matter any more */
    vt_tb_for_each(discard_buffer, NULL);
    vt_tb_trim_pool();
}

/* A trace that could not even start (its preamble and first chunk not
 * written: a full disk, a file size limit) is no trace: the file created
 * for it goes, if it still is ours. Nothing is left behind that the user
 * did not get a trace from. */
static void remove_unstarted(void)
{
    struct stat st;
    if (writer.header_written || !atomic_load(&writer.created))
        return;
    if (lstat(writer.created_path, &st) == 0 && st.st_dev == writer.fd_id.dev && st.st_ino == writer.fd_id.ino)
        unlink(writer.created_path);
}

/* The first failure of the trace: true once (the caller says why). */
static bool first_failure(void)
{
    return !atomic_exchange(&writer.failing, 1);
}

/* Recording stops first, and only then is the failure published: a thread
 * waiting for the writer (vt_writer_flush_now) wakes on writer.failed and must
 * find the recorder stopped, not about to stop. */
static void give_up(void)
{
    stop_recording();
    remove_unstarted();
    atomic_store(&writer.failed, 1);
    vt_wake_post(&writer.done);
}

/* The trace cannot be written: say so once, stop recording. */
static void fail(int err)
{
    if (!first_failure())
        return;
    vt_say(2, "vramtrace: cannot write trace %s: %s; tracing disabled, the program continues\n",
           writer.path, strerror(err));
    give_up();
}

/* Writes to the trace file, through a descriptor the program cannot reach
 * (file_keeper.h). */
static int write_trace(const uint8_t *p, size_t len)
{
    return vt_keeper_write(p, len);
}

/* Every process creates its file when it has its first event: a process
 * that records nothing (a shell, a launcher, a wrapper script that execs
 * the real program under the same pid, a data-loader worker) leaves no file
 * behind. Until then the process record and the module map wait in the
 * encoder; they are the first chunk of the file. A creation error is said
 * now, once (fail), and tracing steps aside. */
static int ensure_open(void)
{
    if (vt_keeper_is_open())
        return 0;
    char actual[sizeof writer.path];
    unsigned alternatives;
    struct vt_safe_path_refusal refusal;
    if (vt_keeper_create(writer.path, actual, sizeof actual, &alternatives, &refusal, &writer.fd_id) != 0) {
        int err = errno;
        if (alternatives > 0) {
            char last[sizeof writer.path];
            if (vt_trace_file_alternative(writer.path, alternatives, last, sizeof last) != 0)
                snprintf(last, sizeof last, "(name too long)");
            if (first_failure()) {
                vt_say(2, "vramtrace: cannot write trace %s, nor any numbered name up to %s: %s; "
                          "tracing disabled, the program continues\n", writer.path, last, strerror(err));
                give_up();
            }
        } else if (refusal.text[0]) {
            /* a directory on the way is not safe to write in: say which */
            if (first_failure()) {
                vt_say(2, "vramtrace: cannot write trace %s: %s; tracing disabled, the program "
                          "continues\n", writer.path, refusal.text);
                give_up();
            }
        } else {
            fail(err);
        }
        return -1;
    }
    snprintf(writer.path, sizeof writer.path, "%s", actual);
    snprintf(writer.created_path, sizeof writer.created_path, "%s", actual);
    atomic_store_explicit(&writer.created, 1, memory_order_release);
    if (writer.verbose) {
        const char *why = vt_keeper_why_shared();
        vt_say(2, "vramtrace: pid %ld writing %s%s%s%s\n", (long)getpid(), writer.path,
               why ? " (through a descriptor of the program's: " : "", why ? why : "",
               why ? ")" : "");
    }
    uint8_t preamble[VT_PREAMBLE_SIZE];
    vt_encode_preamble(preamble, writer.enc.time_unit_ns);
    int err = write_trace(preamble, sizeof preamble);
    if (err) {
        fail(err);
        return -1;
    }
    return 0;
}

static void flush_chunk(void)
{
    if (writer.enc.records == 0 || atomic_load(&writer.failed) || !vt_keeper_is_open())
        return; /* no file until the first event (create_file) */
    if (vt_chunk_frame(&writer.enc, writer.cctx, &writer.frame) != 0) {
        fail(ENOMEM);
        return;
    }
    int err = write_trace(writer.frame.data, writer.frame.len);
    if (err) {
        fail(err);
        return;
    }
    writer.header_written = true;
    writer.chunks++;
    vt_encoder_begin_chunk(&writer.enc);
    writer.chunk_due_ns = UINT64_MAX;
}

/* The first event is about to be encoded: create the file and write what
 * the encoder holds so far (the process record and the module map) as the
 * first chunk on its own, so that the header is on disk however the events
 * fare (a small file size limit, a crash). */
static int create_file(void)
{
    vt_say_held(); /* the process traces: what start found is said now */
    if (ensure_open())
        return -1;
    flush_chunk();
    return atomic_load(&writer.failed) ? -1 : 0;
}

static uint64_t thread_id(struct vt_thread_buf *tb)
{
    /* Normally the thread's first raw event names it; this covers a
     * thread whose naming event could not be stored. */
    if (!tb->file_id)
        vt_ids_name_thread(&writer.ids, &tb->file_id, tb->os_tid, "", 0);
    return tb->file_id;
}

/* ---- one raw event -> records ---- */

static void encode_raw_event(struct vt_thread_buf *tb, const struct vt_raw_header *h,
                             uint64_t time_ns)
{
    switch ((enum vt_record_type)h->type) {
    case VT_REC_THREAD: {
        const struct vt_raw_thread *t = (const void *)h;
        vt_ids_name_thread(&writer.ids, &tb->file_id, t->os_tid, t->name, t->name_len);
        break;
    }
    case VT_REC_MEM: {
        const struct vt_raw_mem *m = (const void *)h;
        const uint64_t *ips = (const uint64_t *)((const uint8_t *)h + vt_raw_round(sizeof *m));
        struct vt_mem_record r = {
            .op = m->ev.op,
            .kind = m->ev.kind,
            .thread = thread_id(tb),
            .device = m->ev.device,
            .addr = m->ev.addr,
            .size = m->ev.size,
            .result = (uint32_t)m->ev.result,
            .aux = m->ev.aux,
            .free_bytes = m->ev.free_bytes,
            .total_bytes = m->ev.total_bytes,
        };
        /* From its call, or from the bracket's start for a free written
         * late (event_ns: its time is then clamped there) */
        if (m->ev.op == VT_OP_FREE)
            r.duration_ns = vt_clock_line_span_ns(
                round_line(), h->ticks < writer.written_ticks ? round_line()->lo.ticks : h->ticks,
                m->end_ticks);
        r.api = vt_ids_api(&writer.ids, m->ev.api);
        r.label = vt_ids_api(&writer.ids, m->ev.label);
        if (h->flags & VT_RAW_SAME_STACK) {
            r.stack = tb->last_stack;
        } else {
            r.stack = vt_ids_stack(&writer.ids, ips, h->nips, h->flags & VT_RAW_PY_FRAMES);
            if (vt_tb_remembers_stack(h->flags, h->nips))
                tb->last_stack = r.stack;
        }
        vt_encode_mem(&writer.enc, time_ns, &r);
        vt_exit_line_note(&r);
        writer.events++;
        break;
    }
    case VT_REC_RANGE_PUSH:
    case VT_REC_RANGE_POP:
    case VT_REC_RANGE_START:
    case VT_REC_RANGE_END:
    case VT_REC_MARK: {
        const struct vt_raw_range *g = (const void *)h;
        const char *domain = (const char *)g + vt_raw_round(sizeof *g);
        const char *name = domain + g->domain_len;
        uint64_t thread = thread_id(tb);
        uint64_t d = h->type == VT_REC_RANGE_END ? 0 : vt_ids_string(&writer.ids, domain, g->domain_len, g->has_domain);
        uint64_t n = vt_ids_string(&writer.ids, name, g->name_len, g->has_name);
        if (h->type == VT_REC_RANGE_PUSH)
            vt_encode_range_push(&writer.enc, thread, time_ns, d, n);
        else if (h->type == VT_REC_RANGE_POP)
            vt_encode_range_pop(&writer.enc, thread, time_ns, d);
        else if (h->type == VT_REC_RANGE_START)
            vt_encode_range_start(&writer.enc, thread, time_ns, g->range_id, d, n);
        else if (h->type == VT_REC_RANGE_END)
            vt_encode_range_end(&writer.enc, thread, time_ns, g->range_id);
        else
            vt_encode_mark(&writer.enc, thread, time_ns, d, n);
        writer.events++;
        break;
    }
    case VT_REC_PART: {
        const struct vt_raw_part *p = (const void *)h;
        const char *dtype = (const char *)p + vt_raw_round(sizeof *p);
        const char *name = dtype + p->dtype_len;
        struct vt_part_record r = {
            .thread = thread_id(tb),
            .census = p->ev.census,
            .part = p->ev.part,
            .device = p->ev.device,
            .addr = p->ev.addr,
            .bytes = p->ev.bytes,
            .elements = p->ev.elements,
        };
        r.dtype = vt_ids_string(&writer.ids, dtype, p->dtype_len, p->dtype_len > 0);
        r.name = vt_ids_string(&writer.ids, name, p->name_len, p->name_len > 0);
        vt_encode_part(&writer.enc, time_ns, &r);
        writer.events++;
        break;
    }
    case VT_REC_DEVICE: {
        const struct vt_raw_device *d = (const void *)h;
        const char *name = (const char *)d + vt_raw_round(sizeof *d);
        vt_encode_device(&writer.enc, d->ordinal < 0 ? 0 : (uint64_t)d->ordinal, d->uuid, name,
                         d->name_len, d->total_bytes);
        writer.events++;
        break;
    }
    /* Hooks append only the types above; the writer makes these itself. */
    case VT_REC_PROCESS:
    case VT_REC_MODULE:
    case VT_REC_MODULE_UNLOAD:
    case VT_REC_STACK_NODE:
    case VT_REC_STRING:
    case VT_REC_API:
    case VT_REC_SITE:
    case VT_REC_PY_CODE:
    case VT_REC_LOST:
    case VT_REC_TRAILER:
        break;
    }
}

/* ---- a round ---- */

struct collect_ctx {
    int timeout_ms;
};

static void collect_one(struct vt_thread_buf *tb, void *vctx)
{
    struct collect_ctx *ctx = vctx;
    vt_tb_collect(tb, ctx->timeout_ms);
    if (!tb->wq_head)
        return;
    if (writer.ncursors == writer.cursor_cap) {
        size_t cap = writer.cursor_cap ? writer.cursor_cap * 2 : 64;
        struct vt_thread_buf **c = realloc(writer.cursors, cap * sizeof *c);
        if (!c)
            return; /* its events wait for the next round */
        writer.cursors = c;
        writer.cursor_cap = cap;
    }
    writer.cursors[writer.ncursors++] = tb;
}

/* The next unread event of a buffer's writer queue, or NULL. Consumed
 * blocks go back to the pool. */
static const struct vt_raw_header *peek(struct vt_thread_buf *tb)
{
    while (tb->wq_head) {
        struct vt_block *b = tb->wq_head;
        if (b->read < b->used)
            return (const struct vt_raw_header *)((const uint8_t *)b->data + b->read);
        tb->wq_head = b->next;
        if (!tb->wq_head)
            tb->wq_tail = NULL;
        vt_tb_block_put(b);
    }
    return NULL;
}

/* A flush that writes everything met a free still in the driver: true
 * once it returned, false if it did not within VT_PENDING_FREE_WAIT_MS. */
static bool wait_for_free(const struct vt_raw_header *h)
{
    uint64_t until = now_ns() + VT_PENDING_FREE_WAIT_MS * 1000000ull;
    while (vt_raw_pending(h)) {
        if (now_ns() >= until)
            return false;
        struct timespec ts = {0, 20 * 1000};
        nanosleep(&ts, NULL);
    }
    return true;
}

/* A normal round met a free still in the driver as its earliest event:
 * true once the free was called a flush interval before the round's
 * point. By its own age, not by how long the rounds have waited for it:
 * two such frees, met in turn, would restart each other's wait. */
static bool hold_expired(const struct vt_raw_header *h)
{
    const struct vt_clock_line *l = round_line();
    return h->ticks < l->hi.ticks &&
           vt_clock_line_span_ns(l, h->ticks, l->hi.ticks) >=
               writer.flush_ms * 1000000ull;
}

/* A new calibration point; the previous one becomes the lower end. */
static void calibrate(void)
{
    struct vt_clock_point lo = round_line()->hi;
    writer.cal_newest++;
    vt_clock_line_init(&writer.cal_lines[writer.cal_newest % VT_CAL_LINES], lo,
                       vt_clock_calibrate());
}

/* The first point: every line kept is that point (calibrate fills them). */
static void calibrate_first(struct vt_clock_point first)
{
    for (unsigned i = 0; i < VT_CAL_LINES; i++)
        vt_clock_line_init(&writer.cal_lines[i], first, first);
    writer.written_ticks = 0;
}

/* An event's time. Stamped after the last event written: between the
 * points around it - the round's own line, or an earlier round's for an
 * event held back behind a pending free (a round stopped there before its
 * point; the round's line would clamp it to that point, dating it up to a
 * round late). Stamped before it - a free the rounds let go by (run_round)
 * - at the round's lower point, which no event written so far is after. */
static uint64_t event_ns(uint64_t ticks)
{
    if (ticks < writer.written_ticks)
        return vt_clock_to_ns(round_line(), round_line()->lo.ticks);
    for (unsigned back = 0;; back++) {
        const struct vt_clock_line *l =
            &writer.cal_lines[(writer.cal_newest - back) % VT_CAL_LINES];
        if (ticks >= l->lo.ticks || back == VT_CAL_LINES - 1)
            return vt_clock_to_ns(l, ticks);
    }
}

/* One round. A normal round calibrates first and writes the events stamped
 * up to that point (the cutoff; the top of this file). A round that writes
 * everything (the final flush, the emergency flush) walks the buffers
 * first and calibrates after, when every event in hand has been stamped.
 * Either way every event written lies at or before the newest point. */
/* everything: write every event in hand (final and emergency flushes);
 * write_now: put them on disk now (a thread waits in vt_writer_flush_now),
 * else the chunk is written once it is full or due. */
static void run_round(bool everything, bool emergency, bool write_now)
{
    uint64_t cutoff = UINT64_MAX;
    if (!everything) {
        calibrate();
        cutoff = round_line()->hi.ticks;
    }
    struct collect_ctx ctx = {emergency ? VT_EMERGENCY_LOCK_MS : -1};
    writer.ncursors = 0;
    vt_tb_for_each(collect_one, &ctx);
    if (everything)
        calibrate();

    for (;;) {
        struct vt_thread_buf *best = NULL;
        const struct vt_raw_header *best_h = NULL;
        size_t best_i = 0;
        for (size_t i = 0; i < writer.ncursors; i++) {
            const struct vt_raw_header *h = peek(writer.cursors[i]);
            if (h && h->ticks <= cutoff && (!best_h || h->ticks < best_h->ticks)) {
                best = writer.cursors[i];
                best_h = h;
                best_i = i;
            }
        }
        if (!best)
            break;
        /* A free still in the driver (vt_record_free_begin): it is placed
         * by its call, and an allocation stamped after that - maybe of its
         * very address, on another thread - must not be written before it.
         * A round stops here; the next one goes on once it returned. Not
         * for longer than the flush interval, though (a cuMemFree waits
         * for the device, which may be busy for minutes): the program's
         * other events would wait, and its hooks for buffer blocks. Past
         * that the rounds go on without it, and it is written when it
         * returns, at the time the file has reached then (as every free
         * was before format version 5: the driver releases the memory of
         * such a free at its end, after its wait). A flush that writes
         * everything waits for it a while, and else leaves its buffer (and
         * its block, which the hook still writes) unread and counts the
         * free as lost. */
        if (__builtin_expect(vt_raw_pending(best_h), 0)) {
            if (!everything && !hold_expired(best_h))
                break;
            if (everything && !wait_for_free(best_h))
                atomic_fetch_add(&vt_tb_lost, 1);
            if (vt_raw_pending(best_h)) {
                writer.cursors[best_i] = writer.cursors[--writer.ncursors];
                continue;
            }
        }
        if (!vt_keeper_is_open() && create_file() != 0)
            return;
        uint64_t time_ns = event_ns(best_h->ticks);
        /* Due FLUSH_MS after the chunk's first (oldest) event happened, not
         * after it was collected: an event is on disk FLUSH_MS after it,
         * as the option promises, whatever round picked it up. */
        if (writer.chunk_due_ns == UINT64_MAX)
            writer.chunk_due_ns = time_ns + writer.flush_ms * 1000000ull;
        encode_raw_event(best, best_h, time_ns);
        if (best_h->ticks > writer.written_ticks)
            writer.written_ticks = best_h->ticks;
        best->wq_head->read += best_h->size;
        if (vt_encoder_chunk_size(&writer.enc) >= VT_CHUNK_TARGET_RAW)
            flush_chunk();
        if (atomic_load(&writer.failed))
            return;
    }
    uint64_t lost = atomic_load(&vt_tb_lost);
    if (lost > writer.lost_reported) {
        vt_encode_lost(&writer.enc, lost - writer.lost_reported);
        writer.lost_reported = lost;
    }
    if (everything || write_now || now_ns() >= writer.chunk_due_ns)
        flush_chunk();
    if (!emergency)
        vt_tb_reap_exited();
}

/* How long the writer may sleep: until the pending chunk is due, at most
 * flush_ms (events wait in the threads' buffers meanwhile). */
static int poll_timeout_ms(void)
{
    uint64_t now = now_ns();
    if (writer.chunk_due_ns == UINT64_MAX || writer.chunk_due_ns - now >= writer.flush_ms * 1000000ull)
        return (int)writer.flush_ms;
    if (writer.chunk_due_ns <= now)
        return 0;
    return (int)((writer.chunk_due_ns - now + 999999) / 1000000);
}

static void refresh_modules(bool force)
{
    bool changed = atomic_exchange(&writer.modules_changed, 0);
    vt_ids_refresh_modules(&writer.ids, force || changed);
}

/* The thread is asked to end for a while (vt_writer_pause): what is in
 * hand is written, as by any round, and the file's descriptor moves into
 * the program's table, since the keeper ends too (file_keeper.h). false:
 * it cannot move. */
static bool pause_here(void)
{
    refresh_modules(false);
    run_round(false, false, true);
    return atomic_load(&writer.failed) || vt_keeper_hand_out() == 0;
}

static void *writer_main(void *arg)
{
    (void)arg;
    vt_in_tracer = 1; /* nothing this thread does is the program's */
    atomic_store(&writer.tid, (int)gettid());
    atomic_store(&writer.started, 1);
    /* Each piece of work runs inside the fork guard (fork_guard.h): a fork
     * happens only while this thread waits for work, holding nothing. */
    vt_fork_guard_enter();
    if (writer.resumed) {
        /* after a pause: the file back out of the program's table, before
         * vt_writer_resume returns to the program */
        vt_keeper_adopt();
        atomic_store(&writer.adopted, 1);
    } else {
        /* The process record was encoded by vt_writer_start; the module
         * map follows it in the first chunk, written with the first event. */
        refresh_modules(true);
        flush_chunk();
    }
    vt_fork_guard_leave();

    /* 0: the value before this thread existed (vt_writer_start), so that a
     * wake-up posted while it was starting - a stop, by a process that
     * exits at once - ends the first wait at once. */
    unsigned seen = 0;
    while (!atomic_load(&writer.failed)) {
        vt_wake_wait(&writer.wake, seen, poll_timeout_ms());
        seen = vt_wake_seen(&writer.wake);
        if (atomic_load(&writer.stop))
            break;
        if (atomic_load(&writer.pause)) {
            vt_fork_guard_enter();
            bool paused = pause_here();
            vt_fork_guard_leave();
            if (paused)
                return NULL; /* vt_writer_resume starts another */
            /* the file cannot be kept without this thread's keeper: the
             * trace ends here, whole, and recording stops (below) */
            writer.ended_at_pause = true;
            vt_tb_close(); /* what the hooks record from now on is lost */
            break;
        }
        vt_fork_guard_enter();
        if (atomic_exchange(&writer.emergency, 0)) {
            run_round(true, true, true);
            atomic_fetch_add(&writer.emergency_done, 1);
            vt_wake_post(&writer.done);
        } else {
            /* Read before the round's cutoff is taken: every event of a
             * thread that asked (stamped before it asked) is <= cutoff. */
            unsigned long long asked = atomic_load(&writer.flush_asked);
            refresh_modules(false);
            run_round(false, false, asked != atomic_load(&writer.flush_done));
            if (asked != atomic_load(&writer.flush_done)) {
                atomic_store(&writer.flush_done, asked);
                vt_wake_post(&writer.done);
            }
        }
        vt_fork_guard_leave();
    }
    vt_fork_guard_enter();
    if (!atomic_load(&writer.failed)) {
        /* Final round: the hooks are stopped, everything pending is written. */
        refresh_modules(false);
        run_round(true, false, true);
        /* Events other threads tried to record since the hooks were
         * stopped (vt_tb_note_refused) are counted as lost: the trailer is
         * the last thing the file can say. */
        uint64_t lost = atomic_load(&vt_tb_lost);
        if (lost > writer.lost_reported && vt_keeper_is_open()) {
            vt_encode_lost(&writer.enc, lost - writer.lost_reported);
            writer.lost_reported = lost;
        }
        if (vt_keeper_is_open()) {
            vt_encode_trailer(&writer.enc, now_ns(), writer.events, writer.chunks + 1, writer.lost_reported);
            flush_chunk();
        }
    }
    if (!atomic_load(&writer.failed)) {
        int err = vt_keeper_close(); /* and the keeper ends, inside the guard */
        if (err)
            fail(err);
    }
    if (writer.ended_at_pause && !atomic_load(&writer.failed)) {
        vt_say(2, "vramtrace: cannot keep the trace file %s open while the tracer's threads "
                  "stop for a namespace change; the trace ends here, the program continues\n",
               writer.path);
        stop_recording();
    }
    atomic_store(&writer.finished, 1);
    vt_wake_post(&writer.done);
    vt_fork_guard_leave();
    return NULL;
}

/* ---- control ---- */

static void free_state(void)
{
    vt_encoder_free(&writer.enc);
    vt_bytes_free(&writer.frame);
    vt_chunk_cctx_free(writer.cctx);
    writer.cctx = NULL;
    vt_ids_free(&writer.ids);
    free(writer.cursors);
    writer.cursors = NULL;
    writer.ncursors = writer.cursor_cap = 0;
}

static void wake_from_hook(void)
{
    vt_writer_wake();
}

/* The writer thread, with every signal blocked: it must never take a
 * signal meant for the program (nor SIGXFSZ: with it blocked, a too-large
 * file is an EFBIG from write). */
static int create_thread(void)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    atomic_store(&writer.started, 0);
    int rc = pthread_create(&writer.thread, NULL, writer_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc; /* EAGAIN: no room for its stack (an address-space limit) */
}

/* How long anyone waits for a thread being created by another to exist,
 * or, before a fork, to run writer_main. Before that, the C library and a
 * sanitizer runtime set the thread up - ASan allocates there, outside the
 * fork guard, and its allocator is not fork-safe: a fork then could copy
 * a held allocator lock into its child, whose next thread start hung (the
 * 20 s hang of record_lifecycle under ASan, docs/internals/RELIABILITY.md).
 * From writer_main on, everything the thread does that a fork could catch
 * is inside the guard. */
#define VT_WRITER_START_WAIT_MS 2000

/* Waits, bounded, while cond holds (cond reads atomics only). */
static void wait_while(bool (*cond)(void))
{
    uint64_t deadline = now_ns() + VT_WRITER_START_WAIT_MS * 1000000ull;
    for (unsigned i = 0; cond(); i++) {
        if (i < 100) {
            sched_yield();
        } else {
            if (now_ns() >= deadline)
                return;
            struct timespec ts = {0, 100 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

static bool starting(void)
{
    return atomic_load(&writer.state) == W_STARTING;
}

static bool not_adopted(void)
{
    return !atomic_load(&writer.adopted);
}

static bool not_yet_in_main(void)
{
    int st = atomic_load(&writer.state);
    return st == W_STARTING || (st == W_RUNNING && !atomic_load(&writer.started));
}

int vt_writer_start(const char *path, uint64_t flush_ms, uint64_t time_unit_ns,
                    uint64_t time_slack_ns, bool verbose,
                    const struct vt_process_info *facts, const char *(*api_name)(unsigned api))
{
    writer.header_written = false;
    writer.verbose = verbose;
    atomic_store(&writer.created, 0);
    snprintf(writer.path, sizeof writer.path, "%s", path);
    writer.flush_ms = flush_ms;
    atomic_store(&writer.stop, 0);
    atomic_store(&writer.pause, 0);
    writer.resumed = false;
    writer.ended_at_pause = false;
    atomic_store(&writer.wake.word, 0); /* writer_main's first wait compares with 0 */
    atomic_store(&writer.wake.waiters, 0); /* a fork child: its parent's waiter is not here */
    atomic_store(&writer.done.waiters, 0);
    atomic_store(&writer.emergency, 0);
    atomic_store(&writer.modules_changed, 0);
    atomic_store(&writer.failed, 0);
    atomic_store(&writer.failing, 0);
    atomic_store(&writer.finished, 0);
    atomic_store(&writer.flush_asked, 0);
    atomic_store(&writer.flush_done, 0);
    writer.events = writer.chunks = writer.lost_reported = 0;
    writer.chunk_due_ns = UINT64_MAX;
    /* The first point, before hooks record (in a forked child too: the
     * parent's points are the parent's writer's). */
    calibrate_first(vt_clock_calibrate());
    vt_encoder_init(&writer.enc);
    vt_encoder_set_time_unit(&writer.enc, time_unit_ns);
    vt_encoder_set_time_slack(&writer.enc, time_slack_ns);
    memset(&writer.frame, 0, sizeof writer.frame);
    vt_ids_init(&writer.ids, &writer.enc, api_name);
    writer.cctx = vt_chunk_cctx_new();
    if (!writer.cctx) {
        free_state();
        atomic_store(&writer.state, W_DEAD);
        return ENOMEM;
    }
    vt_encoder_stream(&writer.enc, writer.cctx);
    vt_encode_process(&writer.enc, facts);
    atomic_store(&writer.state, W_IDLE);
    vt_tb_wake_writer = wake_from_hook;
    return 0;
}

bool vt_writer_launched(void)
{
    return atomic_load_explicit(&writer.state, memory_order_relaxed) != W_IDLE;
}

int vt_writer_launch(void)
{
    /* A calibration point before the first event is stamped: the first
     * round's events are converted between it and that round's point, as
     * close together as when the thread started at load, not between the
     * load and the first round (event_clock.h: the error grows with the
     * interval). Taken before the claim: another thread's first event,
     * which finds the claim made and goes on to stamp, must not come
     * before it - a time before the first point is clamped to it. */
    struct vt_clock_point first = vt_clock_calibrate();
    int idle = W_IDLE;
    if (!atomic_compare_exchange_strong(&writer.state, &idle, W_STARTING))
        return 0; /* another thread's first event started it */
    calibrate_first(first);
    int rc = create_thread();
    atomic_store(&writer.state, rc == 0 ? W_RUNNING : W_DEAD);
    return rc;
}

void vt_writer_before_fork(void)
{
    wait_while(not_yet_in_main);
}

void vt_writer_wake(void)
{
    vt_wake_post(&writer.wake);
}

void vt_writer_modules_changed(void)
{
    atomic_store(&writer.modules_changed, 1);
}

void vt_writer_stop(void)
{
    wait_while(starting);
    int st = atomic_load(&writer.state);
    if (st == W_RUNNING) {
        atomic_store(&writer.stop, 1);
        vt_writer_wake();
        pthread_join(writer.thread, NULL);
    } else if (st != W_IDLE && st != W_PAUSED) {
        return; /* W_DEAD, or stopped already */
    }
    /* W_IDLE: no event, no file; W_PAUSED: a thread that could not start
     * again left its file in the program's table (vt_keeper_forget) */
    atomic_store(&writer.state, W_DEAD);
    vt_tb_wake_writer = NULL;
    vt_keeper_forget();
    free_state();
}

/* Whether the kernel still counts the thread tid in the process (a
 * joined thread is, for a moment: pthread_join returns when the thread
 * has let go of its memory, before it is taken off the thread list). */
static bool thread_listed(int tid)
{
    int err = errno;
    bool listed = tid > 0 && !(syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH);
    errno = err;
    return listed;
}

static int gone_tid;

static bool still_listed(void)
{
    return thread_listed(gone_tid);
}

static void wait_gone(int tid)
{
    gone_tid = tid;
    wait_while(still_listed);
}

bool vt_writer_pause(void)
{
    wait_while(starting);
    if (atomic_load(&writer.state) != W_RUNNING || atomic_load(&writer.stop) ||
        atomic_load(&writer.finished) || pthread_equal(pthread_self(), writer.thread))
        return false;
    atomic_store(&writer.pause, 1);
    vt_writer_wake();
    pthread_join(writer.thread, NULL); /* its keeper is joined by then (file_keeper.h) */
    atomic_store(&writer.pause, 0);
    wait_gone(atomic_load(&writer.tid));
    atomic_store(&writer.state, W_PAUSED);
    return true;
}

int vt_writer_resume(void)
{
    if (atomic_load(&writer.state) != W_PAUSED)
        return 0;
    if (atomic_load(&writer.finished) || atomic_load(&writer.failed)) {
        atomic_store(&writer.state, W_DEAD); /* it ended the trace: nothing to restart */
        return 0;
    }
    writer.resumed = true;
    atomic_store(&writer.adopted, 0);
    atomic_store(&writer.state, W_STARTING);
    int rc = create_thread();
    if (rc != 0) {
        atomic_store(&writer.state, W_PAUSED); /* vt_writer_stop closes the file */
        stop_recording();
        return rc;
    }
    atomic_store(&writer.state, W_RUNNING);
    wait_while(not_adopted);
    return 0;
}

/* Waits until *counter reaches target (the writer moves it, then posts
 * writer.done), at most timeout_ms, in short slices: a wait can end early (a
 * signal), and the counters are the answer. Gives up when the writer fails
 * (or, unless waiting for the end, stops). No lock: signal-safe. */
static void wait_for_writer(atomic_ullong *counter, unsigned long long target, int timeout_ms,
                            bool until_end)
{
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        unsigned seen = vt_wake_seen(&writer.done);
        if (atomic_load(counter) >= target || atomic_load(&writer.failed) ||
            (!until_end && atomic_load(&writer.stop)))
            return;
        uint64_t now = now_ns();
        if (now >= deadline)
            return;
        uint64_t left_ms = (deadline - now + 999999) / 1000000;
        vt_wake_wait(&writer.done, seen, left_ms < 10 ? (int)left_ms : 10);
    }
}

static bool running(void)
{
    return atomic_load(&writer.state) == W_RUNNING;
}

void vt_writer_emergency_flush(int timeout_ms)
{
    if (!running() || atomic_load(&writer.failed))
        return;
    if (pthread_equal(pthread_self(), writer.thread) || vt_keeper_is_calling_thread())
        return; /* the writer itself crashed, or its keeper: nobody to flush */
    if (atomic_load(&writer.stop)) {
        /* The process is exiting and the writer writing its last round: a
         * signal now (a launcher's SIGTERM to a rank that is exiting after
         * its own failure) waits for that round instead of cutting it. */
        wait_for_writer(&writer.finished, 1, timeout_ms, true);
        return;
    }
    unsigned long long target = atomic_load(&writer.emergency_done) + 1;
    atomic_store(&writer.emergency, 1);
    vt_writer_wake();
    wait_for_writer(&writer.emergency_done, target, timeout_ms, false);
}

/* Touches no lock, only atomics and a futex word: safe from any context
 * (a signal handler's exec included). */
void vt_writer_flush_now(int timeout_ms)
{
    if (!running() || atomic_load(&writer.failed) || atomic_load(&writer.stop))
        return;
    if (pthread_equal(pthread_self(), writer.thread))
        return; /* the writer itself: nobody else to do the round */
    unsigned long long target = atomic_fetch_add(&writer.flush_asked, 1) + 1;
    vt_writer_wake();
    wait_for_writer(&writer.flush_done, target, timeout_ms, false);
}

void vt_writer_finish(int timeout_ms)
{
    if (!running() || atomic_load(&writer.failed))
        return;
    if (pthread_equal(pthread_self(), writer.thread))
        return;
    atomic_store(&writer.stop, 1);
    vt_writer_wake();
    wait_for_writer(&writer.finished, 1, timeout_ms, true);
}

const char *vt_writer_created_path(void)
{
    return atomic_load_explicit(&writer.created, memory_order_acquire) ? writer.created_path : NULL;
}

void vt_writer_after_fork_child(void)
{
    atomic_store(&writer.created, 0);
    atomic_store(&writer.flush_asked, 0);
    atomic_store(&writer.flush_done, 0);
    /* The parent's writer thread does not exist here and its state may be
     * mid-update: leave it (a small leak), close the parent's descriptors
     * in this process, and start clean. */
    atomic_store(&writer.state, W_DEAD);
    vt_tb_wake_writer = NULL;
    vt_keeper_after_fork_child();
    atomic_store(&writer.finished, 0);
    memset(&writer.enc, 0, sizeof writer.enc);
    memset(&writer.frame, 0, sizeof writer.frame);
    writer.cctx = NULL;
    vt_ids_forget(&writer.ids);
    writer.cursors = NULL;
    writer.ncursors = writer.cursor_cap = 0;
}
