/* Test helpers. See trace_check.h. */
#define _GNU_SOURCE
#include "trace_check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static struct tc_trace *decode(struct tc_trace *t)
{
    if (t->open_rc != 0)
        return t;
    size_t cap = 1024;
    t->recs = malloc(cap * sizeof *t->recs);
    for (;;) {
        if (t->n == cap) {
            cap *= 2;
            t->recs = realloc(t->recs, cap * sizeof *t->recs);
        }
        t->rc = vt_reader_next(t->reader, &t->recs[t->n]);
        if (t->rc <= 0)
            break;
        t->n++;
    }
    return t;
}

struct tc_trace *tc_load_memory(const void *data, size_t len)
{
    struct tc_trace *t = calloc(1, sizeof *t);
    struct vt_read_error err;
    t->open_rc = vt_reader_open_memory(data, len, "memory", &t->reader, &err);
    if (t->open_rc != 0)
        fprintf(stderr, "open: %s\n", err.message);
    return decode(t);
}

uint8_t *tc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(size > 0 ? (size_t)size : 1);
    *len = fread(buf, 1, (size_t)(size > 0 ? size : 0), f);
    fclose(f);
    return buf;
}

struct tc_trace *tc_load_file(const char *path)
{
    size_t len = 0;
    uint8_t *data = tc_read_file(path, &len);
    if (!data) {
        struct tc_trace *t = calloc(1, sizeof *t);
        t->open_rc = -1;
        return t;
    }
    struct tc_trace *t = tc_load_memory(data, len);
    t->data = data;
    t->len = len;
    return t;
}

void tc_free(struct tc_trace *t)
{
    if (!t)
        return;
    if (t->reader)
        vt_reader_close(t->reader);
    free(t->recs);
    free(t->data);
    free(t);
}

size_t tc_count(const struct tc_trace *t, enum vt_record_type type)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->recs[i].type == type;
    return n;
}

void tc_make_tmpdir(char *out, size_t len)
{
    snprintf(out, len, "/tmp/vtrec-test-XXXXXX");
    if (!mkdtemp(out))
        out[0] = '\0';
}

void tc_remove_tmpdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            tc_remove_tmpdir(p); /* directories the tracer made */
        else
            unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

int tc_run_child(void (*fn)(void *), void *arg, char *err, size_t errlen)
{
    char path[] = "/tmp/vtrec-stderr-XXXXXX";
    int fd = mkstemp(path);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd, 2);
        fn(arg);
        _exit(0);
    }
    int status = -1;
    waitpid(pid, &status, 0);
    ssize_t n = pread(fd, err, errlen - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return status;
}

int tc_count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}
