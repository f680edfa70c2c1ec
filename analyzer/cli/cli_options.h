/*
 * Option values, parsed and checked the same way by every command. A bad
 * value is reported once on stderr as
 *   vramtrace CMD: --NAME wants WHAT, not 'VALUE'
 * and the caller exits 2.
 */
#ifndef VRAMTRACE_CLI_CLI_OPTIONS_H
#define VRAMTRACE_CLI_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* A decimal number in [min, max]. what describes it in the message (NULL:
 * "a number from MIN to MAX"). */
bool vt_cli_uint(const char *cmd, const char *name, const char *what, const char *arg, uint64_t min,
                 uint64_t max, uint64_t *out);

/* A size: plain bytes or B, or with a unit in any case: K, M, G, T and
 * KiB, MiB, GiB, TiB are binary (1024: "24G" = "24GiB" = "24gib", as
 * nvidia-smi and PyTorch count), KB, MB, GB, TB decimal (1000). Fractions
 * are allowed ("1.5GiB"). */
bool vt_cli_size(const char *cmd, const char *name, const char *arg, uint64_t *out);

/* A share or a size: "5%" (any non-negative number before the %, sets
 * *is_percent and *percent) or a size as vt_cli_size takes it (*bytes). */
bool vt_cli_size_or_percent(const char *cmd, const char *name, const char *arg, bool *is_percent,
                            double *percent, uint64_t *bytes);

#endif
