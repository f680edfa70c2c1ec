/*
 * dlsym, dlopen and dlclose of the traced program.
 *
 * dlsym(handle_of_libcuda, "cuMemAlloc_v2") searches only libcuda's tree, so
 * the exports of an LD_PRELOAD library are never found by it: for a hooked
 * driver variant asked of a real handle we answer with our wrapper of that
 * variant (calling exactly the pointer glibc found).
 *
 * glibc answers dlsym(RTLD_NEXT / RTLD_DEFAULT, ...) relative to the CALLER,
 * which it finds from the return address; dlopen("libx.so") likewise searches
 * the caller's RPATH/RUNPATH. A C wrapper calling the real function would
 * make every such answer relative to this library instead (and a second
 * interposer stacked on top would find itself, or us, again). So the entry
 * points are tiny assembly stubs that JUMP to glibc in those cases, leaving
 * the caller's return address in place; only the cases where the caller does
 * not matter go through C:
 *   dlsym(handle) with a real handle    -> vt_dlsym_impl (wrapper substitution)
 *   dlsym(RTLD_NEXT or RTLD_DEFAULT)    -> glibc, tail jump. For a hooked name
 *                                          that is our export (we are
 *                                          preloaded), or the next object's.
 *   dlopen(path with '/', or NULL)      -> vt_dlopen_impl (no search path
 *                                          involved), modules re-read after
 *   dlopen(bare name)                   -> glibc, tail jump, modules marked
 *                                          changed just before
 *   dlclose                             -> C: the caller does not matter.
 * On other architectures the C versions are used for everything (RTLD_NEXT
 * then answers relative to this library: documented in docs/internals/HOOKS.md).
 */
#define _GNU_SOURCE
#include "hooks_internal.h"

#include <dlfcn.h>
#include <string.h>

/* Called from the stubs: hidden, but not static. */
void *vt_dlsym_impl(void *handle, const char *name) __attribute__((used));
void *vt_dlsym_target(void) __attribute__((used));
void *vt_dlopen_impl(const char *file, int mode) __attribute__((used));
void *vt_dlopen_target(const char *file) __attribute__((used));

void *vt_dlsym_impl(void *handle, const char *name)
{
    vt_dlsym_fn real = vt_real_dlsym_fn();
    if (real == NULL)
        return NULL;
    void *found = real(handle, name);
    if (found == NULL || vt_in_tracer || vt_stepped_aside())
        return found;
    unsigned api = vt_hook_by_name(name);
    if (api == 0 || found == vt_hooks[api].exported || found == vt_hooks[api].internal)
        return found;
    vt_in_tracer++;
    vt_driver_attach_from(found);
    vt_in_tracer--;
    /* Only the driver's own function is replaced: anything else (another
     * interposer's wrapper) is left to do its own chaining. */
    if (vt_driver_real(api) == found)
        return vt_hooks[api].internal;
    return found;
}

VT_NO_SANITIZE void *vt_dlsym_target(void)
{
    return (void *)vt_real_dlsym_fn();
}

typedef void *(*dlopen_fn)(const char *, int);

void *vt_dlopen_impl(const char *file, int mode)
{
    void *handle = vt_program_dlopen(file, mode);
    if (handle && !(mode & RTLD_NOLOAD))
        vt_record_modules_changed();
    return handle;
}

/* NULL: take the C path. Else the real dlopen, to be jumped to. */
void *vt_dlopen_target(const char *file)
{
    if (file == NULL || strchr(file, '/') != NULL)
        return NULL;
    void *real = vt_real_dlsym(RTLD_NEXT, "dlopen");
    if (real)
        vt_record_modules_changed();
    return real;
}

VT_EXPORT int dlclose(void *handle);
VT_EXPORT int dlclose(void *handle)
{
    int rc = vt_program_dlclose(handle);
    if (rc == 0) {
        vt_runtime_labels_forget(); /* a runtime may have gone with it */
        vt_record_modules_gone(); /* and the recorder's unwind rules for its code */
    }
    return rc;
}

#if defined(__x86_64__)

#if defined(__CET__)
#define VT_ENDBR "endbr64\n"
#else
#define VT_ENDBR ""
#endif

/* Stack at entry: rsp = 8 mod 16. Two pushes and 8 bytes make the call
 * aligned; the argument registers are restored before the jump. */
__asm__(
    ".text\n"
    ".globl dlsym\n"
    ".type dlsym, @function\n"
    "dlsym:\n"
    ".cfi_startproc\n"
    VT_ENDBR
    "    cmpq $-1, %rdi\n"          /* RTLD_NEXT */
    "    je 1f\n"
    "    testq %rdi, %rdi\n"        /* RTLD_DEFAULT */
    "    je 1f\n"
    "    jmp vt_dlsym_impl\n"
    "1:  pushq %rdi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    pushq %rsi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    subq $8, %rsp\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    call vt_dlsym_target\n"
    "    addq $8, %rsp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rsi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rdi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    testq %rax, %rax\n"
    "    je 2f\n"
    "    jmp *%rax\n"
    "2:  ret\n"
    ".cfi_endproc\n"
    ".size dlsym, .-dlsym\n"

    ".globl dlopen\n"
    ".type dlopen, @function\n"
    "dlopen:\n"
    ".cfi_startproc\n"
    VT_ENDBR
    "    pushq %rdi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    pushq %rsi\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    subq $8, %rsp\n"
    ".cfi_adjust_cfa_offset 8\n"
    "    call vt_dlopen_target\n"
    "    addq $8, %rsp\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rsi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    popq %rdi\n"
    ".cfi_adjust_cfa_offset -8\n"
    "    testq %rax, %rax\n"
    "    je 1f\n"
    "    jmp *%rax\n"
    "1:  jmp vt_dlopen_impl\n"
    ".cfi_endproc\n"
    ".size dlopen, .-dlopen\n");

#elif defined(__aarch64__)

__asm__(
    ".text\n"
    ".globl dlsym\n"
    ".type dlsym, %function\n"
    "dlsym:\n"
    ".cfi_startproc\n"
    "    cmn x0, #1\n"              /* RTLD_NEXT */
    "    b.eq 1f\n"
    "    cbz x0, 1f\n"              /* RTLD_DEFAULT */
    "    b vt_dlsym_impl\n"
    "1:  stp x29, x30, [sp, #-32]!\n"
    ".cfi_def_cfa_offset 32\n"
    ".cfi_offset 29, -32\n"
    ".cfi_offset 30, -24\n"
    "    mov x29, sp\n"
    "    stp x0, x1, [sp, #16]\n"
    "    bl vt_dlsym_target\n"
    "    mov x16, x0\n"
    "    ldp x0, x1, [sp, #16]\n"
    "    ldp x29, x30, [sp], #32\n"
    ".cfi_def_cfa_offset 0\n"
    ".cfi_restore 29\n"
    ".cfi_restore 30\n"
    "    cbz x16, 2f\n"
    "    br x16\n"
    "2:  mov x0, #0\n"
    "    ret\n"
    ".cfi_endproc\n"
    ".size dlsym, .-dlsym\n"

    ".globl dlopen\n"
    ".type dlopen, %function\n"
    "dlopen:\n"
    ".cfi_startproc\n"
    "    stp x29, x30, [sp, #-32]!\n"
    ".cfi_def_cfa_offset 32\n"
    ".cfi_offset 29, -32\n"
    ".cfi_offset 30, -24\n"
    "    mov x29, sp\n"
    "    stp x0, x1, [sp, #16]\n"
    "    bl vt_dlopen_target\n"
    "    mov x16, x0\n"
    "    ldp x0, x1, [sp, #16]\n"
    "    ldp x29, x30, [sp], #32\n"
    ".cfi_def_cfa_offset 0\n"
    ".cfi_restore 29\n"
    ".cfi_restore 30\n"
    "    cbz x16, 1f\n"
    "    br x16\n"
    "1:  b vt_dlopen_impl\n"
    ".cfi_endproc\n"
    ".size dlopen, .-dlopen\n");

#else /* portable fallback: RTLD_NEXT/RTLD_DEFAULT become relative to us */

VT_EXPORT void *dlsym(void *handle, const char *name);
VT_EXPORT void *dlsym(void *handle, const char *name)
{
    if (handle == RTLD_NEXT || handle == RTLD_DEFAULT)
        return vt_real_dlsym_fn() ? vt_real_dlsym_fn()(handle, name) : NULL;
    return vt_dlsym_impl(handle, name);
}

VT_EXPORT void *dlopen(const char *file, int mode);
VT_EXPORT void *dlopen(const char *file, int mode)
{
    return vt_dlopen_impl(file, mode);
}

#endif
