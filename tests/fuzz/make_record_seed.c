/*
 * Turns real trace files into a seed for fuzz_trace_records: the option
 * byte, then each file's chunks decompressed, chunks joined by "VTCK" and
 * files by "VRAMTRC\n" (a file of version 1 or 2), "VRAMTRC3", "VRAMTRC4"
 * or "VRAMTRC5" (also before a first file of version 3 to 5): the layout
 * fuzz_trace_records.c reads back.
 *
 *     make_record_seed OUT OPTIONS TRACE...    (OPTIONS: 0-255)
 *
 * Reads chunk headers directly (not through the analyzer's reader) and
 * stops at the first incomplete chunk, as a seed needs nothing more.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "vramtrace/trace_format.h"

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0)
        return NULL;
    long n = ftell(f);
    uint8_t *data = n >= 0 ? malloc((size_t)n + 1) : NULL;
    rewind(f);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(data);
        return NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return data;
}

/* Writes the separator before the file (none before a first file of
 * version 1 or 2: the harness takes that as version 2), then its chunks. */
static int unpack(FILE *out, const char *path, int first)
{
    size_t len;
    uint8_t *data = slurp(path, &len);
    if (!data || len < VT_PREAMBLE_SIZE || memcmp(data, VT_FILE_MAGIC, VT_FILE_MAGIC_LEN) != 0) {
        fprintf(stderr, "make_record_seed: %s: not a readable trace\n", path);
        free(data);
        return -1;
    }
    int version = data[8] | data[9] << 8;
    if (version >= 3 && version <= 9)
        fprintf(out, "VRAMTRC%d", version);
    else if (!first)
        fputs(VT_FILE_MAGIC, out);
    size_t pos = VT_PREAMBLE_SIZE;
    int chunks = 0;
    while (len - pos >= VT_CHUNK_HEADER_SIZE) {
        uint32_t csize = vt_get_le32(data + pos + 4), rsize = vt_get_le32(data + pos + 8);
        if (vt_get_le32(data + pos) != VT_CHUNK_MAGIC || csize > len - pos - VT_CHUNK_HEADER_SIZE ||
            rsize > VT_CHUNK_MAX_RAW)
            break;
        uint8_t *raw = malloc(rsize ? rsize : 1);
        size_t got = raw ? ZSTD_decompress(raw, rsize, data + pos + VT_CHUNK_HEADER_SIZE, csize) : 0;
        if (!raw || ZSTD_isError(got) || got != rsize) {
            free(raw);
            break;
        }
        if (chunks++ > 0)
            fputs("VTCK", out);
        fwrite(raw, 1, rsize, out);
        free(raw);
        pos += VT_CHUNK_HEADER_SIZE + csize;
    }
    free(data);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fputs("usage: make_record_seed OUT OPTIONS TRACE...\n", stderr);
        return 2;
    }
    FILE *out = fopen(argv[1], "wb");
    if (!out)
        return 1;
    fputc(atoi(argv[2]) & 0xff, out);
    for (int i = 3; i < argc; i++) {
        if (unpack(out, argv[i], i == 3) != 0)
            return 1;
    }
    return fclose(out) == 0 ? 0 : 1;
}
