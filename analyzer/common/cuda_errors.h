/*
 * The names of CUDA error codes, so that a report says
 * CUDA_ERROR_OUT_OF_MEMORY rather than "error 2". The list is generated
 * from the toolkit's headers (cuda_errors.def): the analyzer itself needs
 * no CUDA headers to build.
 */
#ifndef VRAMTRACE_COMMON_CUDA_ERRORS_H
#define VRAMTRACE_COMMON_CUDA_ERRORS_H

#include <stdint.h>

/* The driver's name of a CUresult ("CUDA_ERROR_OUT_OF_MEMORY"), NULL if
 * the list does not know the code. */
const char *vt_cuda_error_name(uint64_t result);
/* The runtime's name of the same failure ("cudaErrorMemoryAllocation"),
 * what a program calling the runtime API saw; NULL if none is known. */
const char *vt_cuda_runtime_error_name(uint64_t result);

#endif
