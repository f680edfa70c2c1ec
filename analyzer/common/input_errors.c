/* Input errors named, then counted; see input_errors.h. */
#define _GNU_SOURCE
#include "input_errors.h"

#include <stdlib.h>
#include <string.h>

#include "grow_array.h"
#include "json_writer.h"

void vt_input_error(struct vt_input_errors *e, FILE *err, const char *message)
{
    if (vt_input_errors_count(e) < VT_INPUT_ERRORS_NAMED)
        fprintf(err, "vramtrace: %s\n", message);
    char *copy = strdup(message);
    if (!copy || !vt_grow_array((void **)&e->messages, &e->cap, e->n + 1, sizeof *e->messages)) {
        free(copy);
        e->unkept++;
        return;
    }
    e->messages[e->n++] = copy;
}

size_t vt_input_errors_count(const struct vt_input_errors *e)
{
    return e->n + e->unkept;
}

void vt_input_errors_summary(const struct vt_input_errors *e, FILE *err)
{
    size_t total = vt_input_errors_count(e);
    if (total <= VT_INPUT_ERRORS_NAMED)
        return;
    fprintf(err, "vramtrace: and %zu more input errors (%zu in all; every one is listed under "
                 "\"input_errors\" in the document of `vramtrace report --json`)\n",
            total - VT_INPUT_ERRORS_NAMED, total);
}

void vt_input_errors_json_items(const struct vt_input_errors *e, struct vt_json *j)
{
    for (size_t i = 0; e && i < e->n; i++)
        vt_json_string(j, e->messages[i]);
}

void vt_input_errors_free(struct vt_input_errors *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->messages[i]);
    free(e->messages);
    memset(e, 0, sizeof *e);
}
