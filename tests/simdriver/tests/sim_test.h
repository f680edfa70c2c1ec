/* Shared helpers of the simulated-GPU tests. */
#ifndef SIM_TEST_H
#define SIM_TEST_H

#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <unistd.h>

#include "vtsim_ledger_reader.h"

/* A fresh empty file /tmp/vtsim-<tag>-<pid>-XXXXXX; the caller frees and unlinks. */
char *simtest_tmpfile(const char *tag);
/* Points VTSIM_LEDGER (and VTSIM_LOOKUP_LOG when lookup_path is not NULL) at
 * new temporary files; call before the first driver call of the process. */
void simtest_setup_logs(char **ledger_path, char **lookup_path);
/* A shm name unique to this test process. */
const char *simtest_shared_name(const char *tag);
/* Lines of the ledger written so far. */
void simtest_ledger(const char *path, struct vtsim_ledger *out);

#define MiB (1ull << 20)
#define GiB (1ull << 30)

#endif
