/* Bytes handed to a FILE in blocks; see out_buffer.h. */
#include "out_buffer.h"

void vt_out_buffer_flush(struct vt_out_buffer *b)
{
    if (b->used) {
        fwrite(b->bytes, 1, b->used, b->out);
        b->used = 0;
    }
}

void vt_out_buffer_put_long(struct vt_out_buffer *b, const void *s, size_t n)
{
    vt_out_buffer_flush(b);
    if (n > VT_OUT_BUFFER_BYTES) {
        fwrite(s, 1, n, b->out);
        return;
    }
    memcpy(b->bytes, s, n);
    b->used = n;
}
