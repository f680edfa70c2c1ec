/* Small traces for tests; see trace_builder.h. */
#define _GNU_SOURCE /* mkdtemp, nftw */
#include "trace_builder.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char tb_tmpdir[64];

int tb_tmpdir_setup(void **state)
{
    (void)state;
    snprintf(tb_tmpdir, sizeof tb_tmpdir, "/tmp/vt-test-XXXXXX");
    return mkdtemp(tb_tmpdir) ? 0 : -1;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

int tb_tmpdir_teardown(void **state)
{
    (void)state;
    if (getenv("VT_KEEP"))
        return 0;
    return nftw(tb_tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

static void append(struct vt_bytes *dst, const void *src, size_t n)
{
    if (!vt_bytes_reserve(dst, n))
        abort();
    memcpy(dst->data + dst->len, src, n);
    dst->len += n;
}

void tb_init(struct tb *b)
{
    memset(b, 0, sizeof *b);
    vt_encoder_init(&b->enc);
    b->cctx = vt_chunk_cctx_new();
    uint8_t pre[VT_PREAMBLE_SIZE];
    vt_encode_preamble(pre, b->enc.time_unit_ns);
    append(&b->file, pre, sizeof pre);
}

void tb_free(struct tb *b)
{
    vt_encoder_free(&b->enc);
    vt_bytes_free(&b->file);
    vt_bytes_free(&b->frame);
    vt_chunk_cctx_free(b->cctx);
}

void tb_flush(struct tb *b)
{
    if (b->enc.raw.len == 0)
        return;
    if (vt_chunk_frame(&b->enc, b->cctx, &b->frame) != 0)
        abort();
    if (b->chunks < 64)
        b->chunk_offsets[b->chunks] = b->file.len;
    b->chunks++;
    append(&b->file, b->frame.data, b->frame.len);
    vt_encoder_begin_chunk(&b->enc);
}

void tb_trailer(struct tb *b, uint64_t time_ns)
{
    tb_flush(b);
    vt_encode_trailer(&b->enc, time_ns, b->events, b->chunks + 1, 0);
    tb_flush(b);
}

void tb_standard_header(struct tb *b, uint64_t pid, uint8_t uuid_byte, uint64_t capacity)
{
    tb_header_on_host(b, pid, uuid_byte, capacity, "testhost");
}

void tb_header_on_host(struct tb *b, uint64_t pid, uint8_t uuid_byte, uint64_t capacity,
                       const char *host)
{
    static const char *const argv[] = {"python", "train.py"};
    static const struct vt_env_var env[] = {{"RANK", "0"}};
    struct vt_process_info p = {
        .pid = pid, .ppid = 1, .start_realtime_ns = 1700000000000000000ull,
        .start_mono_ns = 1000, .hostname = host, .exe = "/usr/bin/python",
        .argc = 2, .argv = argv, .nenv = 1, .env = env, .tool_version = "test",
        .stack_depth = 64, .flush_interval_ms = 100,
    };
    vt_encode_process(&b->enc, &p);
    vt_encode_thread(&b->enc, TB_MAIN, pid, "main", 4);
    vt_encode_thread(&b->enc, TB_AUTOGRAD, pid + 1, "pt_autograd_0", 13);
    vt_encode_api(&b->enc, TB_API_ALLOC, "cuMemAlloc_v2");
    vt_encode_api(&b->enc, TB_API_FREE, "cuMemFree_v2");
    vt_encode_api(&b->enc, TB_API_CREATE, "cuMemCreate");
    uint8_t uuid[VT_UUID_SIZE] = {uuid_byte};
    vt_encode_device(&b->enc, 0, uuid, "Simulated GPU", 13, capacity);
    vt_encode_stack_node(&b->enc, 0, 0x1000);
    vt_encode_stack_node(&b->enc, 0, 0x2000);
    vt_encode_stack_node(&b->enc, 0, 0x3000);
}

static void mem(struct tb *b, uint8_t op, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev,
                uint64_t addr, uint64_t size, uint64_t stack, uint64_t result, uint64_t fb,
                uint64_t tb)
{
    struct vt_mem_record m = {
        .op = op, .kind = kind, .api = op == VT_OP_FREE ? TB_API_FREE : TB_API_ALLOC,
        .thread = thread, .device = dev, .addr = addr, .size = size,
        .stack = stack, .result = result, .free_bytes = fb, .total_bytes = tb,
    };
    vt_encode_mem(&b->enc, t, &m);
    b->events++;
}

void tb_alloc(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev,
              uint64_t addr, uint64_t size, uint64_t stack)
{
    mem(b, VT_OP_ALLOC, kind, thread, t, dev, addr, size, stack, 0, 0, 0);
}

void tb_free_mem(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev,
                 uint64_t addr)
{
    mem(b, VT_OP_FREE, kind, thread, t, dev, addr, 0, 0, 0, 0, 0);
}

void tb_free_lasting(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, uint64_t duration,
                     int64_t dev, uint64_t addr)
{
    struct vt_mem_record m = {
        .op = VT_OP_FREE, .kind = kind, .api = TB_API_FREE, .thread = thread,
        .device = dev, .addr = addr, .duration_ns = duration,
    };
    vt_encode_mem(&b->enc, t, &m);
    b->events++;
}

void tb_fail(struct tb *b, uint8_t kind, uint64_t thread, uint64_t t, int64_t dev, uint64_t size,
             uint64_t stack, uint64_t free_bytes, uint64_t total_bytes)
{
    mem(b, VT_OP_ALLOC, kind, thread, t, dev, 0, size, stack, 2 /* OUT_OF_MEMORY */, free_bytes,
        total_bytes);
}

int tb_write(const struct tb *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(b->file.data, 1, b->file.len, f);
    return fclose(f) == 0 && n == b->file.len ? 0 : -1;
}
