/* A library carrying its own private runtime copy (the stand-in for NCCL,
 * cuBLAS): no runtime label can be seen, the driver level still counts. */
#include <stddef.h>

#include "client_util.h"

int privrt_user_alloc(size_t size, void **ptr);
int privrt_user_free(void *ptr);

int main(void)
{
    void *p = NULL, *q = NULL;
    CHECK(privrt_user_alloc(6 << 20, &p) == 0 && p);
    CHECK(privrt_user_alloc(1 << 20, &q) == 0 && q);
    CHECK(privrt_user_free(p) == 0);
    CHECK(privrt_user_free(q) == 0);
    return 0;
}
