/*
 * Building small traces for the analyzer's tests with the recorder's own
 * encoder (preload/record/encoding/trace_encoder.h), in memory or on disk.
 *
 * tb_standard_header() writes a process (pid given), threads 1 "main" and
 * 2 "pt_autograd_0", apis 1 cuMemAlloc_v2 / 2 cuMemFree_v2 / 3 cuMemCreate,
 * device 0 with uuid {uuid_byte, 0, ...} and a capacity, and stack nodes
 * 1..3 (three distinct one-frame stacks A, B, C with ips 0x1000, 0x2000,
 * 0x3000).
 */
#ifndef VRAMTRACE_TESTS_ANALYZER_TRACE_BUILDER_H
#define VRAMTRACE_TESTS_ANALYZER_TRACE_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_encoder.h"

struct tb {
    struct vt_encoder enc;
    struct vt_bytes file;
    struct vt_bytes frame;
    void *cctx;
    uint64_t chunks, events;
    size_t chunk_offsets[64];  /* file offset of each chunk written */
};

enum { TB_MAIN = 1, TB_AUTOGRAD = 2 };
enum { TB_API_ALLOC = 1, TB_API_FREE = 2, TB_API_CREATE = 3 };
enum { TB_STACK_A = 1, TB_STACK_B = 2, TB_STACK_C = 3 };

/* cmocka group setup/teardown: a fresh directory tb_tmpdir
 * (/tmp/vt-test-XXXXXX) for a group's trace files, removed afterwards
 * unless VT_KEEP is set. */
extern char tb_tmpdir[64];
int tb_tmpdir_setup(void **state);
int tb_tmpdir_teardown(void **state);

void tb_init(struct tb *b);
void tb_free(struct tb *b);
void tb_standard_header(struct tb *b, uint64_t pid, uint8_t uuid_byte, uint64_t capacity);
/* The same, the process on host (tb_standard_header's: "testhost"). */
void tb_header_on_host(struct tb *b, uint64_t pid, uint8_t uuid_byte, uint64_t capacity,
                       const char *host);
/* Ends the current chunk (compresses it into the file). */
void tb_flush(struct tb *b);
/* Flushes, then writes a trailer chunk. */
void tb_trailer(struct tb *b, uint64_t time_ns);

void tb_alloc(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev,
              uint64_t addr, uint64_t size, uint64_t stack);
void tb_free_mem(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev,
                 uint64_t addr);
/* A free called at t that returned duration ns later (format version 5). */
void tb_free_lasting(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, uint64_t duration,
                     int64_t dev, uint64_t addr);
void tb_fail(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev, uint64_t size,
             uint64_t stack, uint64_t free_bytes, uint64_t total_bytes);

/* Writes the file; returns 0 on success. */
int tb_write(const struct tb *b, const char *path);

#endif
