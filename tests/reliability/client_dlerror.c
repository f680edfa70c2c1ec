/*
 * dlerror() after dlsym, the way programs check for a missing symbol:
 * dlerror(); p = dlsym(h, name); if ((e = dlerror()) != NULL) ...
 * The tracer answers a driver function with its wrapper and looks up the
 * driver's other functions on the way (some missing here: a partial
 * driver). Those look-ups must not leave an error for the program's
 * dlerror(), and the program's own failed look-up must keep its error.
 *
 *   client_dlerror PATH_OF_libpartial_driver.so
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef int (*alloc_fn)(uint64_t *, size_t);
typedef int (*free_fn)(uint64_t);

static void say_error(const char *what)
{
    const char *e = dlerror();
    printf("%s: dlerror %s\n", what, e ? "set" : "none");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s LIBRARY\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return 2;
    }
    dlerror();
    alloc_fn alloc = (alloc_fn)dlsym(h, "cuMemAlloc_v2");
    printf("cuMemAlloc_v2 found: %s\n", alloc ? "yes" : "no");
    say_error("after a found symbol");
    free_fn release = (free_fn)dlsym(h, "cuMemFree_v2");
    say_error("after a second found symbol");

    void *missing = dlsym(h, "cuNoSuchFunction");
    const char *e = dlerror();
    printf("missing symbol found: %s; its error names it: %s\n", missing ? "yes" : "no",
           e && strstr(e, "cuNoSuchFunction") ? "yes" : "no");

    /* one allocation, so that the traced run has something to record */
    uint64_t p = 0;
    int rc = alloc && release ? alloc(&p, 4096) : -1;
    printf("alloc %d, free %d\n", rc, rc == 0 ? release(p) : -1);
    say_error("after the calls");
    return 0;
}
