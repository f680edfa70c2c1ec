/*
 * Bytes gathered for a FILE and handed to it in blocks. A writer of
 * millions of small tokens (a JSON document's keys and values, a pickle's
 * opcodes) calls stdio once a block, not once a token: stdio's own
 * buffer costs a call, a lock and a copy for every token.
 *
 * The FILE has the bytes only after vt_out_buffer_flush: whoever else
 * writes to the same FILE flushes first.
 */
#ifndef VRAMTRACE_COMMON_OUT_BUFFER_H
#define VRAMTRACE_COMMON_OUT_BUFFER_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define VT_OUT_BUFFER_BYTES 8192

struct vt_out_buffer {
    FILE *out;
    size_t used; /* bytes not yet handed to out */
    unsigned char bytes[VT_OUT_BUFFER_BYTES];
};

/* Not the bytes: 8 KiB zeroed for every small document would cost more
 * than the document. */
static inline void vt_out_buffer_init(struct vt_out_buffer *b, FILE *out)
{
    b->out = out;
    b->used = 0;
}

void vt_out_buffer_flush(struct vt_out_buffer *b);

/* Room for n more bytes (n <= VT_OUT_BUFFER_BYTES) at the end; the
 * caller writes them there and adds n to used. */
static inline unsigned char *vt_out_buffer_room(struct vt_out_buffer *b, size_t n)
{
    if (VT_OUT_BUFFER_BYTES - b->used < n)
        vt_out_buffer_flush(b);
    return b->bytes + b->used;
}

/* n bytes of any length (a longer run goes to the FILE directly, after
 * what the buffer holds). */
void vt_out_buffer_put_long(struct vt_out_buffer *b, const void *s, size_t n);

static inline void vt_out_buffer_put(struct vt_out_buffer *b, const void *s, size_t n)
{
    if (VT_OUT_BUFFER_BYTES - b->used < n) {
        vt_out_buffer_put_long(b, s, n);
        return;
    }
    memcpy(b->bytes + b->used, s, n);
    b->used += n;
}

static inline void vt_out_buffer_byte(struct vt_out_buffer *b, unsigned char c)
{
    if (b->used == VT_OUT_BUFFER_BYTES)
        vt_out_buffer_flush(b);
    b->bytes[b->used++] = c;
}

#endif
