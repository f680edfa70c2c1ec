/*
 * What the trace harnesses do with a trace image: everything the analyzer
 * does with a file a user hands it. A harness only decides how its input
 * bytes become one or more trace images (fuzz_trace_file.c: the bytes are
 * the file; fuzz_trace_records.c: the bytes are records it compresses into
 * valid chunks, so mutations reach the decoder and the replay instead of
 * dying at zstd's checksum).
 */
#ifndef VRAMTRACE_TESTS_FUZZ_TRACE_H
#define VRAMTRACE_TESTS_FUZZ_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One trace file's bytes. */
struct vt_fuzz_image {
    const uint8_t *data;
    size_t len;
};

/* Report options a harness may vary (taken from its input). */
struct vt_fuzz_options {
    unsigned top;         /* 1.. */
    unsigned frames;      /* 0: all */
    bool phase_filter;    /* --phase NAME, NAME = the first string of the first trace */
    bool device_filter;   /* --device 0 */
    bool pid_filter;      /* --pid PID of the first trace */
};

/* Decodes each image on its own (every record, every table lookup), then
 * runs the merged replay and the text and JSON reports of all of them
 * together, with symbolization off, and `vramtrace dump` (text and JSON) of
 * each. Aborts if the analyzer's verdict on a file disagrees with the
 * reader's (a file the reader rejects must make `report` fail, and only
 * then); anything else that goes wrong is for the sanitizers to catch. */
void vt_fuzz_trace_images(const struct vt_fuzz_image *images, size_t n,
                          const struct vt_fuzz_options *opt);

#endif
