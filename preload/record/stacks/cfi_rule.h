/*
 * One x86-64 unwind rule from a loaded module's .eh_frame, for the tracer's
 * stack walker (fast_unwind.h).
 *
 * A rule says how to get from a frame to its caller at one code address:
 * CFA = rsp + k or rbp + k, the return address at CFA-8, rbp restored from
 * CFA + j or left as it is; or "this is the outermost frame" (the return
 * address or rbp marked undefined, as glibc's _start and clone3 do).
 * Anything else is VT_CFI_UNSUPPORTED and the walker leaves that stack to
 * libunwind: the set of accepted rules is a subset of what libunwind's
 * fast trace (src/x86_64/Gtrace.c, 1.6) handles as a "standard" or last
 * frame, computed from the same CFI rows, so both walk it alike.
 *
 * Data is read defensively: every read is bounded by the module's
 * .eh_frame_hdr segment or by the loaded segment holding .eh_frame, and
 * anything malformed is UNSUPPORTED, never a crash.
 */
#ifndef VRAMTRACE_PRELOAD_CFI_RULE_H
#define VRAMTRACE_PRELOAD_CFI_RULE_H

#include <stdbool.h>
#include <stdint.h>

enum vt_cfi_kind {
    VT_CFI_RSP = 0,         /* CFA = rsp + cfa_off */
    VT_CFI_RBP = 1,         /* CFA = rbp + cfa_off */
    VT_CFI_LAST = 2,        /* the outermost frame: the walk ends here */
    VT_CFI_UNSUPPORTED = 3, /* not described: walk with libunwind */
};

struct vt_cfi_rule {
    int32_t cfa_off;
    int16_t rbp_off; /* the caller's rbp is at CFA + rbp_off (< 0); 0: rbp unchanged */
    uint8_t kind;    /* enum vt_cfi_kind */
};

/* Where a module's unwind tables are, as mapped: its .eh_frame_hdr
 * (PT_GNU_EH_FRAME) and its loaded segments (PT_LOAD, with the load bias
 * applied). .eh_frame is read only inside the segment that holds it. */
#define VT_CFI_MAX_SEGMENTS 16
struct vt_cfi_module {
    uint64_t hdr, hdr_len;
    struct {
        uint64_t lo, hi;
    } seg[VT_CFI_MAX_SEGMENTS];
    unsigned nseg;
};

/* The rule for the code address ip of module m. For a frame below the
 * innermost, pass its return address - 1 (the call instruction), as
 * libunwind does. */
struct vt_cfi_rule vt_cfi_rule_in(const struct vt_cfi_module *m, uint64_t ip);

/* The rule for ip in whichever loaded object holds it (dl_iterate_phdr:
 * takes the loader's lock; the module is parsed under it, so a concurrent
 * dlclose cannot unmap it meanwhile). *subs is the loader's unload counter
 * (dlpi_subs) at that moment; *have_subs false if the C library does not
 * say. */
struct vt_cfi_rule vt_cfi_rule_for(uint64_t ip, unsigned long long *subs, bool *have_subs);

/* The code its .eh_frame FDE says ip belongs to, [*start, *end): a whole
 * function, or one part of a function the compiler split (GCC's hot and
 * .cold parts each have their own FDE). false: no FDE found (takes the
 * loader's lock, as vt_cfi_rule_for). */
bool vt_cfi_code_range(uint64_t ip, uint64_t *start, uint64_t *end);

#endif
