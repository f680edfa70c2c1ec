#include "sim_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *simtest_tmpfile(const char *tag)
{
    char *path = NULL;
    if (asprintf(&path, "/tmp/vtsim-%s-%d-XXXXXX", tag, (int)getpid()) < 0)
        abort();
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    return path;
}

void simtest_setup_logs(char **ledger_path, char **lookup_path)
{
    *ledger_path = simtest_tmpfile("ledger");
    setenv("VTSIM_LEDGER", *ledger_path, 1);
    if (lookup_path) {
        *lookup_path = simtest_tmpfile("lookups");
        setenv("VTSIM_LOOKUP_LOG", *lookup_path, 1);
    }
}

const char *simtest_shared_name(const char *tag)
{
    static char name[64];
    snprintf(name, sizeof name, "test-%s-%d", tag, (int)getpid());
    return name;
}

void simtest_ledger(const char *path, struct vtsim_ledger *out)
{
    vtsim_ledger_load(path, out);
}
