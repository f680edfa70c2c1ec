#include "cuda_errors.h"

#include <stddef.h>

struct cuda_error {
    uint64_t code;
    const char *driver, *runtime;
};

static const struct cuda_error errors[] = {
#define X(code, driver, runtime) {code, driver, runtime},
#include "cuda_errors.def"
#undef X
};

static const struct cuda_error *find(uint64_t result)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == result)
            return &errors[i];
    return NULL;
}

const char *vt_cuda_error_name(uint64_t result)
{
    const struct cuda_error *e = find(result);
    return e ? e->driver : NULL;
}

const char *vt_cuda_runtime_error_name(uint64_t result)
{
    const struct cuda_error *e = find(result);
    return e ? e->runtime : NULL;
}
