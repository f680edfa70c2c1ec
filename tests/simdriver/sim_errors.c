/* cuGetErrorName / cuGetErrorString over every CUresult of the toolkit. */
#define _GNU_SOURCE
#include "sim_internal.h"
#include "sim_error_names.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

struct error_text {
    CUresult code;
    const char *name;
    char text[64];  /* "out of memory" from CUDA_ERROR_OUT_OF_MEMORY */
};

#define VTSIM_ERROR_ENTRY(name) { name, #name, "" },
static struct error_text errors[] = { VTSIM_CU_ERRORS(VTSIM_ERROR_ENTRY) };
#undef VTSIM_ERROR_ENTRY
static pthread_once_t texts_once = PTHREAD_ONCE_INIT;

static void make_texts(void)
{
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const char *words = errors[i].name + strlen(errors[i].code ? "CUDA_ERROR_" : "CUDA_");
        size_t n = 0;
        for (; words[n] && n < sizeof errors[i].text - 1; n++)
            errors[i].text[n] = words[n] == '_' ? ' ' : (char)tolower((unsigned char)words[n]);
        errors[i].text[n] = 0;
    }
    strcpy(errors[0].text, "no error");
}

static const struct error_text *find(CUresult code)
{
    pthread_once(&texts_once, make_texts);
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == code)
            return &errors[i];
    return NULL;
}

VTSIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **str)
{
    const struct error_text *e = find(error);
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e ? e->name : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VTSIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
    const struct error_text *e = find(error);
    if (!str)
        return CUDA_ERROR_INVALID_VALUE;
    *str = e ? e->text : NULL;
    return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
