/*
 * libFuzzer harness: the input is a whole trace file, handed to the reader
 * as it is and to `vramtrace report` / `vramtrace dump` as a file.
 * Seeds: corpus/trace_file/ (real traces written by the tracer).
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vt_fuzz_image img = {data, size};
    struct vt_fuzz_options opt = {.top = 10, .frames = 6};
    vt_fuzz_trace_images(&img, 1, &opt);
    return 0;
}
