/*
 * A strict JSON validator (RFC 8259, UTF-8 checked), written apart from the
 * analyzer's JSON writer so that the harnesses can hold the writer to its
 * promise: `report --json` is valid JSON whatever bytes a trace's strings
 * hold.
 */
#ifndef VRAMTRACE_TESTS_JSON_CHECK_H
#define VRAMTRACE_TESTS_JSON_CHECK_H

#include <stdbool.h>
#include <stddef.h>

/* True if text[0..len) is exactly one JSON value (whitespace around it
 * allowed). On false, *bad_at (if not NULL) is the offset of the problem. */
bool vt_json_check(const char *text, size_t len, size_t *bad_at);

#endif
