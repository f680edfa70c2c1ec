/* An observer's notes per input, on disk; see input_notes.h. */
#define _POSIX_C_SOURCE 200809L /* pread */
#include "input_notes.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow_array.h"

/* An input's notes are written to the file this many bytes at a time:
 * memory holds one buffer per input that has notes. */
#define NOTES_BUFFER_BYTES (64u << 10)

struct notes_segment {
    uint64_t offset, length; /* in the file */
};

struct input_log {
    unsigned char *buffer;   /* the latest notes, not yet in the file */
    size_t used;
    struct notes_segment *segments;
    size_t nsegments, segments_cap;
};

struct vt_input_notes {
    FILE *file;
    int fd;
    pthread_mutex_t lock;    /* the file's end */
    uint64_t end;
    struct input_log *logs;
    size_t ninputs;
    bool failed;             /* read by every thread: set under lock */
};

struct vt_input_notes *vt_input_notes_new(size_t ninputs)
{
    struct vt_input_notes *notes = calloc(1, sizeof *notes);
    if (!notes)
        return NULL;
    notes->logs = calloc(ninputs + 1, sizeof *notes->logs);
    notes->file = tmpfile();
    if (!notes->logs || !notes->file) {
        vt_input_notes_free(notes);
        return NULL;
    }
    notes->fd = fileno(notes->file);
    notes->ninputs = ninputs;
    pthread_mutex_init(&notes->lock, NULL);
    return notes;
}

void vt_input_notes_free(struct vt_input_notes *notes)
{
    if (!notes)
        return;
    for (size_t i = 0; notes->logs && i < notes->ninputs; i++) {
        free(notes->logs[i].buffer);
        free(notes->logs[i].segments);
    }
    free(notes->logs);
    if (notes->file) {
        fclose(notes->file);
        pthread_mutex_destroy(&notes->lock);
    }
    free(notes);
}

static bool write_all(int fd, const unsigned char *p, size_t n, uint64_t offset)
{
    while (n) {
        ssize_t w = pwrite(fd, p, n, (off_t)offset);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
        offset += (uint64_t)w;
    }
    return true;
}

/* The input's buffer into the file, as its next segment. */
static bool spill(struct vt_input_notes *notes, struct input_log *log)
{
    if (!vt_grow_array((void **)&log->segments, &log->segments_cap, log->nsegments + 1,
                       sizeof *log->segments))
        return false;
    pthread_mutex_lock(&notes->lock);
    uint64_t offset = notes->end;
    notes->end += log->used;
    pthread_mutex_unlock(&notes->lock);
    if (!write_all(notes->fd, log->buffer, log->used, offset))
        return false;
    log->segments[log->nsegments++] = (struct notes_segment){offset, log->used};
    log->used = 0;
    return true;
}

static void fail(struct vt_input_notes *notes)
{
    pthread_mutex_lock(&notes->lock);
    notes->failed = true;
    pthread_mutex_unlock(&notes->lock);
}

bool vt_input_notes_add(struct vt_input_notes *notes, size_t input, const void *bytes, size_t n)
{
    struct input_log *log = &notes->logs[input];
    const unsigned char *p = bytes;
    if (!log->buffer && !(log->buffer = malloc(NOTES_BUFFER_BYTES))) {
        fail(notes);
        return false;
    }
    while (n) {
        if (log->used == NOTES_BUFFER_BYTES && !spill(notes, log)) {
            fail(notes);
            return false;
        }
        size_t take = NOTES_BUFFER_BYTES - log->used;
        if (take > n)
            take = n;
        memcpy(log->buffer + log->used, p, take);
        log->used += take;
        p += take;
        n -= take;
    }
    return true;
}

bool vt_input_notes_whole(const struct vt_input_notes *notes)
{
    return !notes->failed;
}

bool vt_input_notes_rewind(struct vt_input_notes *notes, size_t input,
                           struct vt_input_notes_cursor *c)
{
    *c = (struct vt_input_notes_cursor){.notes = notes, .input = input};
    return (c->loaded = malloc(NOTES_BUFFER_BYTES)) != NULL;
}

void vt_input_notes_cursor_free(struct vt_input_notes_cursor *c)
{
    free(c->loaded);
    c->loaded = NULL;
}

/* The next segment into the cursor, or the buffer after the last. */
static bool load(struct vt_input_notes_cursor *c)
{
    const struct input_log *log = &c->notes->logs[c->input];
    if (c->segment > log->nsegments)
        return false;
    if (c->segment == log->nsegments) {
        c->segment++;
        c->at = log->buffer;
        c->end = log->buffer + log->used;
        return log->used > 0;
    }
    const struct notes_segment *s = &log->segments[c->segment++];
    size_t got = 0;
    while (got < s->length) {
        ssize_t r = pread(c->notes->fd, c->loaded + got, (size_t)s->length - got,
                          (off_t)(s->offset + got));
        if (r <= 0)
            return false;
        got += (size_t)r;
    }
    c->at = c->loaded;
    c->end = c->loaded + got;
    return true;
}

bool vt_input_notes_next(struct vt_input_notes_cursor *c, void *bytes, size_t n)
{
    unsigned char *p = bytes;
    while (n) {
        if (c->at == c->end && !load(c))
            return false;
        size_t take = (size_t)(c->end - c->at);
        if (take > n)
            take = n;
        memcpy(p, c->at, take);
        c->at += take;
        p += take;
        n -= take;
    }
    return true;
}
