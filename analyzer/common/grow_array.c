#include "grow_array.h"

#include <stdint.h>
#include <stdlib.h>

size_t vt_grow_capacity(size_t cap, size_t need, size_t elem)
{
    size_t n = cap ? cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2)
            return 0;
        n *= 2;
    }
    if (elem && n > SIZE_MAX / elem)
        return 0;
    return n;
}

bool vt_grow_array(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = vt_grow_capacity(*cap, need, elem);
    if (!n)
        return false;
    void *p = realloc(*arr, n * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = n;
    return true;
}
