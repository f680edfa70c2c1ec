/* Recorder code ids -> trace file code ids; see python_codes.h. */
#include "python_codes.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "python_stack.h"

static struct {
    uint32_t *file_id; /* recorder id -> file id, 0: not described yet */
    size_t cap;
    uint64_t next;     /* the file's last code id */
} code_ids;

void vt_py_codes_reset(void)
{
    free(code_ids.file_id);
    memset(&code_ids, 0, sizeof code_ids);
}

/* The file's id for a recorder code id, describing the code first if new;
 * 0 if memory ran out (the frame then names no code). */
static uint64_t file_code(struct vt_encoder *enc, uint64_t rid)
{
    if (rid >= code_ids.cap) {
        size_t cap = code_ids.cap ? code_ids.cap : 1024;
        while (cap <= rid)
            cap *= 2;
        uint32_t *m = realloc(code_ids.file_id, cap * sizeof *m);
        if (!m)
            return 0;
        memset(m + code_ids.cap, 0, (cap - code_ids.cap) * sizeof *m);
        code_ids.file_id = m;
        code_ids.cap = cap;
    }
    if (code_ids.file_id[rid])
        return code_ids.file_id[rid];
    struct vt_py_code_desc d;
    if (!vt_py_code_describe(rid, &d)) {
        d = (struct vt_py_code_desc){.qualname = "?", .qualname_len = 1, .filename = ""};
    }
    uint64_t id = ++code_ids.next;
    vt_encode_py_code(enc, id, d.qualname, d.qualname_len, d.filename, d.filename_len,
                      d.first_line);
    code_ids.file_id[rid] = (uint32_t)id;
    return id;
}

const uint64_t *vt_py_codes_prepare(struct vt_encoder *enc, const uint64_t *ips, size_t n,
                                    uint64_t *scratch)
{
    /* One OR over the stack (the compiler vectorizes it): a native ip never
     * has the tag bit. The writer asks only for stacks the hook merged
     * with Python frames (VT_RAW_PY_FRAMES); those of a thread outside the
     * interpreter end here. */
    uint64_t any = 0;
    for (size_t i = 0; i < n; i++)
        any |= ips[i];
    if (!vt_ip_is_py_frame(any))
        return ips;
    for (size_t i = 0; i < n; i++) {
        uint64_t ip = ips[i];
        scratch[i] = vt_ip_is_py_frame(ip)
                         ? vt_py_frame_ip(file_code(enc, vt_py_frame_code(ip)), vt_py_frame_line(ip))
                         : ip;
    }
    return scratch;
}
