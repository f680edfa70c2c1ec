/*
 * A spy between the real CUDA runtime and libvramtrace.so: it sees every
 * function pointer the runtime receives from its driver look-ups.
 *
 * Preloaded BEFORE libvramtrace.so, it defines dlsym. The runtime's single
 * dlsym(libcuda, "cuGetProcAddress_v2") reaches the spy first; the spy asks
 * the next dlsym (libvramtrace's, which answers with its wrapper) and hands
 * the runtime its own look-up function instead, which forwards to that
 * wrapper and logs what the runtime gets back. The self look-ups of
 * cuGetProcAddress at 11030 and 12000 are answered with the spy's functions
 * of the matching argument count, so every later look-up passes the spy too.
 *
 * Log (LOOKUP_SPY_LOG), one line per look-up:
 *     <name> <version> <flags> <rc> <object the returned pointer lives in>
 * where the object is "vramtrace", "driver", "spy", "null" or "other".
 *
 * Test equipment only: dlsym(RTLD_NEXT, ...) asked through the spy answers
 * relative to the spy, which is fine for the runtime it watches.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SPY_EXPORT __attribute__((visibility("default")))

typedef void *(*dlsym_fn)(void *, const char *);

static PFN_cuGetProcAddress_v11030 inner_v1;
static PFN_cuGetProcAddress_v12000 inner_v2;

static CUresult spy_get_proc_address(const char *, void **, int, cuuint64_t);
static CUresult spy_get_proc_address_v2(const char *, void **, int, cuuint64_t,
                                        CUdriverProcAddressQueryResult *);

/* The dlsym of the next object (libvramtrace.so's). glibc's own dlsym,
 * asked for RTLD_NEXT from here, answers relative to the spy; a versioned
 * dlvsym would skip the tracer's unversioned definition. */
static dlsym_fn next_dlsym(void)
{
    static dlsym_fn next;
    if (!next) {
        dlsym_fn libc_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!libc_dlsym)
            libc_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (libc_dlsym)
            next = (dlsym_fn)libc_dlsym(RTLD_NEXT, "dlsym");
    }
    return next;
}

static const char *object_of(const void *fn)
{
    Dl_info info;
    if (fn == NULL)
        return "null";
    if (!dladdr(fn, &info) || info.dli_fname == NULL)
        return "other";
    if (strstr(info.dli_fname, "lookup_spy"))
        return "spy";
    if (strstr(info.dli_fname, "libvramtrace"))
        return "vramtrace";
    if (strstr(info.dli_fname, "libcuda.so"))
        return "driver";
    return "other";
}

static void log_lookup(const char *name, int version, cuuint64_t flags, CUresult rc, void *fn)
{
    const char *path = getenv("LOOKUP_SPY_LOG");
    if (path == NULL)
        return;
    char line[512];
    int n = snprintf(line, sizeof line, "%s %d %llu %d %s\n", name[0] ? name : "-", version,
                     (unsigned long long)flags, (int)rc, object_of(fn));
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)n) != n)
            perror("lookup_spy: write");
        close(fd);
    }
}

static CUresult spy_get_proc_address(const char *name, void **pfn, int version, cuuint64_t flags)
{
    CUresult rc = inner_v1(name, pfn, version, flags);
    log_lookup(name, version, flags, rc, rc == CUDA_SUCCESS ? *pfn : NULL);
    if (rc == CUDA_SUCCESS && !strcmp(name, "cuGetProcAddress")) {
        if (version >= 12000) {
            inner_v2 = (PFN_cuGetProcAddress_v12000)*pfn;
            *pfn = (void *)spy_get_proc_address_v2;
        } else {
            inner_v1 = (PFN_cuGetProcAddress_v11030)*pfn;
            *pfn = (void *)spy_get_proc_address;
        }
    }
    return rc;
}

static CUresult spy_get_proc_address_v2(const char *name, void **pfn, int version,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    CUresult rc = inner_v2(name, pfn, version, flags, status);
    log_lookup(name, version, flags, rc, rc == CUDA_SUCCESS ? *pfn : NULL);
    if (rc == CUDA_SUCCESS && !strcmp(name, "cuGetProcAddress")) {
        if (version >= 12000) {
            inner_v2 = (PFN_cuGetProcAddress_v12000)*pfn;
            *pfn = (void *)spy_get_proc_address_v2;
        } else {
            inner_v1 = (PFN_cuGetProcAddress_v11030)*pfn;
            *pfn = (void *)spy_get_proc_address;
        }
    }
    return rc;
}

SPY_EXPORT void *dlsym(void *handle, const char *name)
{
    dlsym_fn next = next_dlsym();
    if (next == NULL)
        return NULL;
    void *found = next(handle, name);
    if (found == NULL || handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        return found;
    if (!strcmp(name, "cuGetProcAddress_v2")) {
        inner_v2 = (PFN_cuGetProcAddress_v12000)found;
        log_lookup("dlsym:cuGetProcAddress_v2", 0, 0, CUDA_SUCCESS, found);
        return (void *)spy_get_proc_address_v2;
    }
    if (!strcmp(name, "cuGetProcAddress")) {
        inner_v1 = (PFN_cuGetProcAddress_v11030)found;
        log_lookup("dlsym:cuGetProcAddress", 0, 0, CUDA_SUCCESS, found);
        return (void *)spy_get_proc_address;
    }
    return found;
}
