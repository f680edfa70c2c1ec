/* The real CUDA 13 runtime's look-up phase against the simulated driver.
 * It resolves ~440 driver functions through cuGetProcAddress, then stops
 * (the simulated driver has no private export tables). Afterwards every
 * driver function pointer the runtime kept is found in its writable data
 * and printed with the object it belongs to:
 *   "WRAP <address>" a pointer into libvramtrace.so (a wrapper)
 *   "DRV <symbol>"   a function of the driver itself
 * cudart_lookup_check.py decides whether a hooked variant escaped. */
#include <link.h>
#include <stdint.h>

#include "client_util.h"

struct scan {
    const char *object;
    int found;
};

static void classify(uintptr_t word)
{
    Dl_info info;
    if (word < 4096 || !dladdr((void *)word, &info) || !info.dli_fname)
        return;
    /* our internal wrappers are not in the dynamic symbol table: they are
     * told apart by address */
    if (strstr(info.dli_fname, "libvramtrace"))
        printf("WRAP %#lx\n", (unsigned long)word);
    else if (strstr(info.dli_fname, "libcuda.so") && info.dli_sname && info.dli_saddr == (void *)word)
        printf("DRV %s\n", info.dli_sname);
}

static int scan_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct scan *s = data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, s->object))
        return 0;
    s->found = 1;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
            continue;
        uintptr_t start = (info->dlpi_addr + ph->p_vaddr + 7) & ~(uintptr_t)7;
        uintptr_t end = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
        for (uintptr_t p = start; p + 8 <= end; p += 8)
            classify(*(const uintptr_t *)p);
    }
    return 1;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    void *rt = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(rt);
    int (*get_count)(int *) = (int (*)(int *))dlsym(rt, "cudaGetDeviceCount");
    CHECK(get_count);
    int count = -1;
    printf("cudaGetDeviceCount %d\n", get_count(&count));
    struct scan s = { "libcudart", 0 };
    dl_iterate_phdr(scan_object, &s);
    CHECK(s.found);
    return 0;
}
