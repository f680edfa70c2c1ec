/*
 * Reading a vramtrace trace file (include/vramtrace/trace_format.h).
 *
 * The reader decodes one file record by record, one chunk in memory at a
 * time, and keeps the tables the records define (strings, stack nodes,
 * threads, APIs, modules, devices, the process) so that ids can be resolved
 * for the rest of the file.
 *
 *     struct vt_reader *r;
 *     struct vt_read_error err;
 *     if (vt_reader_open(path, &r, &err) != 0) { puts(err.message); exit 2; }
 *     struct vt_record rec;
 *     int rc;
 *     while ((rc = vt_reader_next(r, &rec)) > 0) {
 *         if (rec.type == VT_REC_MEM) ... rec.u.mem.size ...
 *     }
 *     if (rc < 0) -> vt_reader_error(r)->message ("FILE: byte N: reason")
 *     if (vt_reader_truncated(r)) -> the file was cut: a readable prefix
 *     vt_reader_close(r);
 *
 * What is an error and what is not:
 *  - A file that simply stops (no trailer, a chunk cut short, a header cut
 *    short) is NOT an error: it is what a killed or crashed process leaves.
 *    next() returns 0 after the last complete chunk and vt_reader_truncated()
 *    is true; vt_reader_end_offset() says where the readable data ends.
 *  - A bad magic, an unknown format version, a chunk header announcing more
 *    than VT_CHUNK_MAX_* bytes, a zstd frame that does not decode (or whose
 *    checksum fails), a record that runs past its chunk, an unknown record
 *    type or an id that refers to nothing ARE errors: next() returns -1 and
 *    the error names the file, the byte offset and the reason. Records
 *    before the error have been delivered.
 *
 * Memory is bounded on hostile input: sizes are checked against the limits
 * of the format before anything is allocated, and id tables grow only by
 * bounded steps (see the .c). Only one chunk is held at a time.
 *
 * Strings handed out (in records and by the table accessors) are
 * NUL-terminated copies owned by the reader and valid until
 * vt_reader_close(), even after a thread is renamed.
 */
#ifndef VRAMTRACE_ANALYZER_TRACE_READER_H
#define VRAMTRACE_ANALYZER_TRACE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vramtrace/trace_format.h"

struct vt_reader;

struct vt_read_error {
    uint64_t offset;     /* byte offset in the file where the problem is */
    char message[512];   /* "FILE: byte OFFSET: reason" */
};

struct vt_module_info {
    uint64_t id;
    uint64_t load_bias;
    uint64_t start, end;
    const char *path;
    const uint8_t *build_id;
    size_t build_id_len;
    bool unloaded;
};

struct vt_thread_info {
    uint64_t id;
    uint64_t os_tid;
    const char *name;   /* latest name seen */
};

/* A Python code object (VT_REC_PY_CODE): what a Python frame names. */
struct vt_py_code_info {
    uint64_t id;
    const char *qualname;
    const char *filename;
    uint64_t first_line;
};

struct vt_device_info {
    uint64_t ordinal;
    uint8_t uuid[VT_UUID_SIZE];
    const char *name;
    uint64_t total_bytes;
};

/* One decoded record. Fields of the union member named after the type are
 * valid; times are absolute (deltas already applied), addresses too. */
struct vt_record {
    enum vt_record_type type;
    uint64_t chunk_offset;   /* file offset of the chunk holding the record */
    uint64_t record_offset;  /* offset of the record in the decompressed chunk */
    uint64_t time_ns;        /* timed records: MEM, RANGE_*, MARK, TRAILER */
    union {
        const struct vt_process_info *process;  /* VT_REC_PROCESS */
        const struct vt_module_info *module;    /* VT_REC_MODULE */
        struct { uint64_t id; } module_unload;  /* VT_REC_MODULE_UNLOAD */
        const struct vt_thread_info *thread;    /* VT_REC_THREAD */
        const struct vt_device_info *device;    /* VT_REC_DEVICE */
        struct { uint64_t id, parent, ip; } stack_node;   /* VT_REC_STACK_NODE */
        struct { uint64_t id; const char *text; size_t len; } string; /* VT_REC_STRING */
        struct { uint64_t id; const char *name; } api;    /* VT_REC_API */
        const struct vt_py_code_info *py_code;   /* VT_REC_PY_CODE */
        struct vt_mem_record mem;                /* VT_REC_MEM */
        struct {
            uint64_t id;
            uint8_t op, kind;
            uint64_t api, label, thread;
            int64_t device;        /* ordinal, -1 if unknown */
            uint64_t stack, result, aux;
        } site;                                  /* VT_REC_SITE (version 4) */
        /* RANGE_PUSH/POP/START/END and MARK: the fields that type has
         * (range_id only for START/END; name only for PUSH/START/MARK;
         * domain not for END). */
        struct { uint64_t thread, domain, name, range_id; } range;
        struct vt_part_record part;              /* VT_REC_PART (version 5) */
        struct { uint64_t count; } lost;         /* VT_REC_LOST */
        struct { uint64_t events, chunks, lost; } trailer; /* VT_REC_TRAILER */
    } u;
};

/* Opens a trace file and checks its preamble. On failure returns -1 and
 * fills *err (e.g. "x.vtrace: byte 8: unsupported format version 7"). */
int vt_reader_open(const char *path, struct vt_reader **out, struct vt_read_error *err);
/* The same over a buffer in memory (not copied; must outlive the reader).
 * name is used in messages. */
int vt_reader_open_memory(const void *data, size_t len, const char *name,
                          struct vt_reader **out, struct vt_read_error *err);
void vt_reader_close(struct vt_reader *r);
/* A reader of a trace's head only: each chunk decompressed in whole zstd
 * blocks up to the first that reaches head bytes, so that the records
 * there (the process record first, which the tracer ends a block with)
 * cost that much to read, not a whole chunk. A record cut by the limit is
 * an error. For a look at the process record before the real reading. */
int vt_reader_open_head(const char *path, size_t head, struct vt_reader **out,
                        struct vt_read_error *err);
/* Closes the file, keeping everything else: the next chunk opens it again
 * (or vt_reader_resume), so that many readers may wait with no file open
 * each - the analysis opens every trace first but reads a few at a time.
 * Between next() calls, not while reading ahead (then false: it stays
 * open); true for a reader whose file is closed already. Reopening checks
 * that it is the same file (device and inode): a file deleted or replaced
 * in between is an error of the reader, "FILE: byte N: cannot open it
 * again to read on: REASON" (or "another file took its place ..."), which
 * next() then returns, as it does any error. */
bool vt_reader_suspend(struct vt_reader *r);
/* Opens a suspended reader's file again now: 0, or -1 with the error set
 * (as above). 0 for a reader not suspended (-1 if it is in error). */
int vt_reader_resume(struct vt_reader *r);
/* Keeps no compressed chunk and no decompression context of its own (read
 * inline): the calling thread's are used, kept from reader to reader, for
 * one reader of many read in turn on few threads. */
void vt_reader_lean(struct vt_reader *r);
/* After next() returned 0 or -1: frees the chunk buffers and closes the
 * file; what was read (definitions, process, devices, the error) stays.
 * Nothing before that. */
void vt_reader_release(struct vt_reader *r);
/* After vt_reader_release, once the reader is at its end: its stack nodes
 * are offered to a share of the analysis's traces (stack_share.h), which
 * must outlive the reader; it keeps what the share does not hold. */
struct vt_stack_share;
void vt_reader_share_stack_nodes(struct vt_reader *r, struct vt_stack_share *s);
/* Before the trace's first stack node is read: its nodes are compared, as
 * they are read, with a table of the share that other traces offered
 * (stack_share.h: vt_stack_share_follow), and kept only from the first
 * that differs; s must outlive the reader. A trace of a job's rank then
 * fills no table to drop it when offered. */
void vt_reader_follow_stack_share(struct vt_reader *r, struct vt_stack_share *s);
/* The stack nodes the reader keeps itself (the others are a share's). */
uint64_t vt_reader_stack_nodes_own(const struct vt_reader *r);

/* Following a trace its process is still writing (`vramtrace top`): after
 * next() returned 0 at a truncated end (no trailer yet: the last chunk
 * complete, or one still being written, or not even the preamble), looks
 * at the file's size again. If it grew, the reader goes on from the end of
 * its last complete chunk - a chunk that was cut short is read again whole
 * - and next() returns the records appended since. Returns 1 when the
 * file grew (next() reads on; a last chunk still incomplete is again an
 * end for now), 0 if there is nothing to read on (nothing new, a preamble
 * still incomplete, or the trace ended with its trailer), -1 if the reader
 * is in error or the file can no longer be looked at (then
 * vt_reader_error()). Only for a reader of a file, not
 * reading ahead and not released. */
int vt_reader_follow(struct vt_reader *r);

/* Reads and decompresses the next chunk on a thread of its own while the
 * caller decodes the current one (analyzer/trace/chunk_source.h): the same
 * records and errors, sooner on two cores, one more chunk buffer in memory.
 * False if it could not start (reading goes on inline). Call it between
 * next() calls. */
bool vt_reader_read_ahead(struct vt_reader *r);

/* Reads ahead the same way, but with no thread of its own: the next chunk
 * is read by the first caller of vt_reader_help_read_ahead, or by next()
 * when it needs it. */
bool vt_reader_read_ahead_shared(struct vt_reader *r);
/* With vt_reader_read_ahead_shared: reads and decompresses the next chunk
 * now if no one has begun it. The one call that another thread may make
 * while one reads the records. True if it did, false at once if not. */
bool vt_reader_help_read_ahead(struct vt_reader *r);

/* Next record: 1 and *rec filled, 0 at the end of the data (clean or
 * truncated), -1 on an error (then vt_reader_error()). Calling again after 0
 * or -1 returns the same value. */
int vt_reader_next(struct vt_reader *r, struct vt_record *rec);
/* The stack node records that come next go into the tables, as
 * vt_reader_next would put them, and none is handed out (what only fills a
 * table need not make a record each: a rank defines thousands); stops
 * before any other record, and before one vt_reader_next must judge.
 * Returns how many it read. */
size_t vt_reader_take_stack_nodes(struct vt_reader *r);
/* Up to max (> 0) records at once: the records max calls of next() would
 * return, in order, without a call per record. Returns how many were
 * written (the end or an error after some records is returned by the next
 * call), or 0 / -1 as next() does when there is none. */
int vt_reader_next_batch(struct vt_reader *r, struct vt_record *recs, int max);

/* A MEM record that succeeded (result 0), with only what the replay needs
 * of it: one 64-byte cache line to write and read instead of a struct
 * vt_record's 144. */
struct vt_replay_mem {
    uint64_t time_ns, thread, addr, size, stack, aux;
    uint64_t duration_ns; /* a free's (rec.u.mem.duration_ns) */
    int32_t device;       /* ordinal, -1 if unknown */
    uint8_t op, kind;
};
_Static_assert(sizeof(struct vt_replay_mem) == 64, "a memory event is one cache line");
/* Up to max records at once as memory events, the way the replay reads
 * them: those records that next() would return, while they are MEM records
 * that succeeded and the reader can decode them fast. Stops before anything
 * else (another record, a failure, a chunk's last records, the end or an
 * error), which next() then returns. Returns how many were written (0:
 * call next()). */
int vt_reader_next_mem_events(struct vt_reader *r, struct vt_replay_mem *evs, int max);
/* From now on vt_reader_next_mem_events reads on past the site records
 * between memory events (format version 4: each defined just before its
 * first event) into the reader's table, as next() would, rather than
 * stopping for next() to return each: for a caller that shows records to
 * no one, whose batches would otherwise end at every new site. */
void vt_reader_events_past_sites(struct vt_reader *r);

/* The type byte of the record next() returns next (enum vt_record_type, or
 * an unknown type that next() will call an error), its chunk read first if
 * the last one is done; -1 where next() returns 0 or -1 (an end or an
 * error found on the way is kept for next()). Changes no table: for a
 * reader that leaves some records to another thread
 * (analyzer/trace/decode_ahead.h). */
int vt_reader_peek_type(struct vt_reader *r);

const struct vt_read_error *vt_reader_error(const struct vt_reader *r);
const char *vt_reader_path(const struct vt_reader *r);
uint16_t vt_reader_version(const struct vt_reader *r);
/* Nanoseconds per unit of the file's recorded times: every time the reader
 * returns is a multiple of it, rounded down from the moment it stands for. */
uint32_t vt_reader_time_unit_ns(const struct vt_reader *r);

/* After next() returned 0: true if the file ended without a trailer. */
bool vt_reader_truncated(const struct vt_reader *r);
/* Byte offset one past the last complete chunk read so far. */
uint64_t vt_reader_end_offset(const struct vt_reader *r);
/* Total file size (for messages). */
uint64_t vt_reader_file_size(const struct vt_reader *r);
/* "trace ends at byte N (truncated: no trailer)" or similar when truncated,
 * else NULL. */
const char *vt_reader_truncation_note(const struct vt_reader *r);
/* Counts so far. */
uint64_t vt_reader_chunks(const struct vt_reader *r);
uint64_t vt_reader_records(const struct vt_reader *r);
/* The trailer, once read (NULL before/without). */
bool vt_reader_has_trailer(const struct vt_reader *r);

/* ---- tables (valid for ids defined so far) ---- */
const struct vt_process_info *vt_reader_process(const struct vt_reader *r); /* NULL before */
const char *vt_reader_string(const struct vt_reader *r, uint64_t id);       /* NULL: 0/unknown */
uint64_t vt_reader_stack_node_count(const struct vt_reader *r);             /* ids 1..count */
/* parent and ip of node id (1..count); false for 0 or unknown. */
bool vt_reader_stack_node(const struct vt_reader *r, uint64_t id, uint64_t *parent, uint64_t *ip);
/* Whether some stack node so far is a Python frame (VT_PY_FRAME_TAG). */
bool vt_reader_has_python_frames(const struct vt_reader *r);
const struct vt_thread_info *vt_reader_thread(const struct vt_reader *r, uint64_t id);
/* A Python code object by id (stack node ips with VT_PY_FRAME_TAG name
 * them), NULL for 0 or unknown. */
const struct vt_py_code_info *vt_reader_py_code(const struct vt_reader *r, uint64_t id);
const char *vt_reader_api(const struct vt_reader *r, uint64_t id);
/* Modules in order of appearance (index 0..count-1, not the id). */
size_t vt_reader_module_count(const struct vt_reader *r);
const struct vt_module_info *vt_reader_module_at(const struct vt_reader *r, size_t index);
const struct vt_device_info *vt_reader_device(const struct vt_reader *r, uint64_t ordinal);

const char *vt_op_name(unsigned op);     /* "alloc", "free" */
const char *vt_kind_name(unsigned kind); /* "device", "managed", ... */

#endif
