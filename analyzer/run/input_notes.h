/*
 * An observer's notes, per input, kept out of memory during the run's one
 * read and read back, input by input, once it is over.
 *
 * Some renderers write what they saw of each record in the records' order
 * but need a figure first that only the whole read gives (Perfetto's
 * counters: every sample, or a screen's resolution when there are too
 * many). Rather than read the traces twice, the observer writes its notes
 * here as the replay runs (on each input's own thread: inputs are replayed
 * on threads) and the renderer reads them back after: the traces are read
 * once, and memory holds a small buffer per input, not the notes.
 *
 * The notes go to one unlinked temporary file (tmpfile(3)), each input's
 * in its own segments; appends of one input come from one thread at a
 * time (its replay's), appends of different inputs may be concurrent.
 */
#ifndef VRAMTRACE_RUN_INPUT_NOTES_H
#define VRAMTRACE_RUN_INPUT_NOTES_H

#include <stdbool.h>
#include <stddef.h>

struct vt_input_notes;

/* Notes for ninputs inputs; NULL when memory or the temporary file is
 * not to be had. */
struct vt_input_notes *vt_input_notes_new(size_t ninputs);
void vt_input_notes_free(struct vt_input_notes *notes);
/* Appends n bytes to input's notes. False (and every later call too) when
 * the file could not be written or memory ran out: the notes are
 * incomplete then. */
bool vt_input_notes_add(struct vt_input_notes *notes, size_t input, const void *bytes, size_t n);
/* False when a note was lost (vt_input_notes_add failed). */
bool vt_input_notes_whole(const struct vt_input_notes *notes);

/* Reading one input's notes back, in the order they were added, a
 * segment of the file at a time. */
struct vt_input_notes_cursor {
    struct vt_input_notes *notes;
    size_t input;
    size_t segment;          /* the next segment to load; past the last: the buffer */
    const unsigned char *at, *end; /* what is loaded and not yet read */
    unsigned char *loaded;   /* a segment read from the file */
};
/* False when memory for the cursor ran out. */
bool vt_input_notes_rewind(struct vt_input_notes *notes, size_t input,
                           struct vt_input_notes_cursor *c);
/* The next n bytes into bytes: true, or false at the end of the notes (or
 * when the file could not be read back). */
bool vt_input_notes_next(struct vt_input_notes_cursor *c, void *bytes, size_t n);
void vt_input_notes_cursor_free(struct vt_input_notes_cursor *c);

#endif
