/*
 * x86-64 unwind rules from .eh_frame (cfi_rule.h).
 *
 * The CFI interpreter follows libunwind 1.6 (src/dwarf/Gparser.c,
 * Gfde.c, Gfind_proc_info-lsb.c) where it matters for the result: the
 * FDE is found through .eh_frame_hdr's sorted table, the CIE's initial
 * instructions run first, then the FDE's while the row's address is <=
 * ip; registers numbered 17 and above are errors there, so they are
 * UNSUPPORTED here. Whatever libunwind would not walk as a standard frame
 * (or would walk differently) is UNSUPPORTED too: expressions, signal
 * frames ('S'), DW_CFA_register, unknown opcodes or augmentations.
 */
#define _GNU_SOURCE
#include "cfi_rule.h"

#include <elf.h>
#include <link.h>
#include <stddef.h>
#include <string.h>

/* DWARF register numbers of the x86-64 psABI. */
#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16
#define NREG 17 /* libunwind's DWARF_NUM_PRESERVED_REGS on x86-64 */

/* libunwind's bounds for a standard frame (Gstash_frame.c). */
#define CFA_OFF_LIMIT (1 << 28)
#define RBP_OFF_LIMIT (1 << 14)

/* An rbp-based frame's saved rbp lies this close under its CFA (push rbp
 * comes first: -16 in compiled code), so that its slot is >= rsp - 120. */
#define RBP_BELOW_CFA 128

/* remember_state nesting kept; compilers use 1 or 2. */
#define STATE_STACK 8

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_datarel_sdata4 0x3b

static const struct vt_cfi_rule unsupported = {0, 0, VT_CFI_UNSUPPORTED};

/* ---- bounded reading ---- */

struct reader {
    uint64_t p, end; /* p <= end */
    bool bad;
};

static bool have(struct reader *r, uint64_t n)
{
    if (r->bad || r->end - r->p < n) {
        r->bad = true;
        return false;
    }
    return true;
}

static uint64_t read_n(struct reader *r, unsigned n)
{
    uint64_t v = 0;
    if (!have(r, n))
        return 0;
    memcpy(&v, (const void *)(uintptr_t)r->p, n); /* little-endian */
    r->p += n;
    return v;
}

static uint8_t u8(struct reader *r) { return (uint8_t)read_n(r, 1); }
static uint32_t u32(struct reader *r) { return (uint32_t)read_n(r, 4); }

static void skip(struct reader *r, uint64_t n)
{
    if (have(r, n))
        r->p += n;
}

/* A LEB128 number: its 64 low bits, and (bits) how many bits it had, to
 * sign-extend from. Longer than any 64-bit value: bad. */
static uint64_t leb(struct reader *r, unsigned *bits, uint8_t *last)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 70; shift += 7) {
        uint8_t b = u8(r);
        if (r->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *bits = shift + 7;
            *last = b;
            return v;
        }
    }
    r->bad = true;
    return 0;
}

static uint64_t uleb(struct reader *r)
{
    unsigned bits;
    uint8_t last;
    return leb(r, &bits, &last);
}

static int64_t sleb(struct reader *r)
{
    unsigned bits = 0;
    uint8_t last = 0;
    uint64_t v = leb(r, &bits, &last);
    if (!r->bad && bits < 64 && (last & 0x40))
        v |= ~(uint64_t)0 << bits; /* negative: extend the sign bit */
    return (int64_t)v;
}

/* The value part of a DW_EH_PE_* encoded pointer. */
static uint64_t read_format(struct reader *r, uint8_t enc)
{
    switch (enc & 0x0f) {
    case 0x00: return read_n(r, 8); /* absptr */
    case 0x01: return uleb(r);
    case 0x02: return read_n(r, 2);
    case 0x03: return read_n(r, 4);
    case 0x04: return read_n(r, 8);
    case 0x09: return (uint64_t)sleb(r);
    case 0x0a: return (uint64_t)(int64_t)(int16_t)read_n(r, 2);
    case 0x0b: return (uint64_t)(int64_t)(int32_t)read_n(r, 4);
    case 0x0c: return read_n(r, 8);
    default: r->bad = true; return 0;
    }
}

/* An encoded pointer that is absolute or pc-relative (all that .eh_frame
 * uses for code addresses on x86-64 Linux); others are refused. */
static uint64_t read_pointer(struct reader *r, uint8_t enc)
{
    uint64_t at = r->p;
    uint64_t v = read_format(r, enc);
    switch (enc & 0xf0) {
    case 0x00: return v;
    case DW_EH_PE_pcrel: return v + at;
    default: r->bad = true; return 0;
    }
}

/* ---- CIE ---- */

struct cie {
    uint64_t code_align;
    uint64_t data_align; /* signed, kept as its two's complement */
    uint8_t fde_enc;
    bool sized_aug; /* 'z': FDEs carry an augmentation length */
    uint64_t instr, instr_end;
};

/* One record's extent: its 32-bit length (64-bit DWARF is refused), from
 * r->p; r->end becomes the record's end. */
static bool record_extent(struct reader *r)
{
    uint32_t len = u32(r);
    if (r->bad || len == 0 || len == 0xffffffffu || len > r->end - r->p)
        return false;
    r->end = r->p + len;
    return true;
}

static bool parse_cie(uint64_t at, uint64_t hi, struct cie *c)
{
    struct reader r = {at, hi, false};
    if (!record_extent(&r) || u32(&r) != 0) /* CIE id: 0 in .eh_frame */
        return false;
    c->instr_end = r.end;
    uint8_t version = u8(&r);
    if (version != 1 && version != 3) /* 4 has fields libunwind 1.6 does not read */
        return false;
    char aug[8];
    size_t n = 0;
    for (;;) {
        uint8_t ch = u8(&r);
        if (r.bad || n + 1 >= sizeof aug)
            return false;
        if (ch == 0)
            break;
        aug[n++] = (char)ch;
    }
    aug[n] = '\0';
    c->code_align = uleb(&r);
    c->data_align = (uint64_t)sleb(&r);
    uint64_t ra_column = version == 1 ? u8(&r) : uleb(&r);
    if (r.bad || ra_column != REG_RA)
        return false;
    c->fde_enc = 0x04; /* udata8: libunwind's default for 64-bit */
    c->sized_aug = aug[0] == 'z';
    uint64_t aug_end = 0;
    if (c->sized_aug) {
        uint64_t len = uleb(&r);
        if (r.bad || len > r.end - r.p)
            return false;
        aug_end = r.p + len;
    } else if (aug[0] != '\0') {
        return false; /* "eh" and other old forms */
    }
    for (size_t i = c->sized_aug; aug[i]; i++) {
        switch (aug[i]) {
        case 'R':
            c->fde_enc = u8(&r);
            break;
        case 'L':
            u8(&r); /* the LSDA's encoding: FDEs' LSDA is skipped with 'z' */
            break;
        case 'P': {
            uint8_t enc = u8(&r);
            if ((enc & 0x70) == 0x50) /* aligned */
                return false;
            read_format(&r, enc); /* the personality routine: not needed */
            break;
        }
        default: /* 'S' (a signal frame) and anything unknown */
            return false;
        }
    }
    /* libunwind starts the instructions after the fields it read: only
     * when that is where the augmentation data ends do both agree. */
    if (r.bad || (c->sized_aug && r.p != aug_end))
        return false;
    c->instr = r.p;
    return true;
}

/* ---- CFI rows ---- */

enum where { W_SAME, W_UNDEF, W_CFAREL, W_OTHER /* register, expression: not modelled */ };

#define CFA_EXPR 0xff

struct row {
    int64_t cfa_off, rbp_off, ra_off;
    uint8_t cfa_reg; /* DWARF register, or CFA_EXPR */
    uint8_t where[NREG];
};

static bool set_where(struct row *w, uint64_t reg, enum where how, int64_t off)
{
    if (reg >= NREG)
        return false;
    w->where[reg] = (uint8_t)how;
    if (reg == REG_RBP)
        w->rbp_off = off;
    else if (reg == REG_RA)
        w->ra_off = off;
    return true;
}

static bool restore_reg(struct row *w, const struct row *initial, uint64_t reg)
{
    if (reg >= NREG || initial == NULL) /* restore inside a CIE: libunwind differs */
        return false;
    return set_where(w, reg, (enum where)initial->where[reg],
                     reg == REG_RBP ? initial->rbp_off : reg == REG_RA ? initial->ra_off : 0);
}

static int64_t factored(uint64_t v, const struct cie *c)
{
    return (int64_t)(v * c->data_align); /* wraps like libunwind's unw_word_t */
}

/* Runs CFI instructions from r while the row's address (loc) is <= target;
 * initial is the CIE's row (NULL while running the CIE itself). */
static bool run_cfi(struct reader *r, struct row *w, const struct row *initial, uint64_t loc,
                    uint64_t target, const struct cie *c)
{
    struct row saved[STATE_STACK];
    unsigned depth = 0;
    while (loc <= target && r->p < r->end) {
        uint8_t op = u8(r);
        uint64_t reg, v;
        bool ok = true;
        switch (op >> 6) {
        case 1: /* DW_CFA_advance_loc */
            loc += (uint64_t)(op & 0x3f) * c->code_align;
            continue;
        case 2: /* DW_CFA_offset */
            v = uleb(r);
            ok = set_where(w, op & 0x3f, W_CFAREL, factored(v, c));
            break;
        case 3: /* DW_CFA_restore */
            ok = restore_reg(w, initial, op & 0x3f);
            break;
        default:
            switch (op) {
            case 0x00: /* nop */
                break;
            case 0x02: /* advance_loc1 */
                loc += read_n(r, 1) * c->code_align;
                break;
            case 0x03: /* advance_loc2 */
                loc += read_n(r, 2) * c->code_align;
                break;
            case 0x04: /* advance_loc4 */
                loc += read_n(r, 4) * c->code_align;
                break;
            case 0x05: /* offset_extended */
                reg = uleb(r);
                v = uleb(r);
                ok = set_where(w, reg, W_CFAREL, factored(v, c));
                break;
            case 0x11: /* offset_extended_sf */
                reg = uleb(r);
                v = (uint64_t)sleb(r);
                ok = set_where(w, reg, W_CFAREL, factored(v, c));
                break;
            case 0x2f: /* GNU_negative_offset_extended */
                reg = uleb(r);
                v = uleb(r);
                ok = set_where(w, reg, W_CFAREL, (int64_t)(0 - v * c->data_align));
                break;
            case 0x06: /* restore_extended */
                ok = restore_reg(w, initial, uleb(r));
                break;
            case 0x07: /* undefined */
                ok = set_where(w, uleb(r), W_UNDEF, 0);
                break;
            case 0x08: /* same_value */
                ok = set_where(w, uleb(r), W_SAME, 0);
                break;
            case 0x09: /* register */
                reg = uleb(r);
                uleb(r);
                ok = set_where(w, reg, W_OTHER, 0);
                break;
            case 0x0a: /* remember_state */
                if (depth == STATE_STACK)
                    return false;
                saved[depth++] = *w;
                break;
            case 0x0b: /* restore_state */
                if (depth == 0)
                    return false;
                *w = saved[--depth];
                break;
            case 0x0c: /* def_cfa */
                reg = uleb(r);
                w->cfa_off = (int64_t)uleb(r);
                ok = reg < NREG;
                w->cfa_reg = (uint8_t)reg;
                break;
            case 0x12: /* def_cfa_sf */
                reg = uleb(r);
                w->cfa_off = factored((uint64_t)sleb(r), c);
                ok = reg < NREG;
                w->cfa_reg = (uint8_t)reg;
                break;
            case 0x0d: /* def_cfa_register */
                reg = uleb(r);
                ok = reg < NREG;
                w->cfa_reg = (uint8_t)reg;
                break;
            case 0x0e: /* def_cfa_offset */
                w->cfa_off = (int64_t)uleb(r);
                break;
            case 0x13: /* def_cfa_offset_sf */
                w->cfa_off = factored((uint64_t)sleb(r), c);
                break;
            case 0x0f: /* def_cfa_expression */
                w->cfa_reg = CFA_EXPR;
                skip(r, uleb(r));
                break;
            case 0x10: /* expression */
            case 0x16: /* val_expression */
                reg = uleb(r);
                skip(r, uleb(r));
                ok = set_where(w, reg, W_OTHER, 0);
                break;
            case 0x2e: /* GNU_args_size: no effect on the walk */
                uleb(r);
                break;
            default: /* set_loc, val_offset, vendor opcodes, garbage */
                return false;
            }
        }
        if (!ok || r->bad)
            return false;
    }
    return !r->bad;
}

/* The walker's rule for a finished row. */
static struct vt_cfi_rule rule_of(const struct row *w)
{
    for (unsigned i = 0; i < NREG; i++)
        if (w->where[i] == W_OTHER)
            return unsupported;
    if ((w->cfa_reg != REG_RSP && w->cfa_reg != REG_RBP) || w->where[REG_RSP] != W_SAME ||
        w->cfa_off <= -CFA_OFF_LIMIT || w->cfa_off >= CFA_OFF_LIMIT)
        return unsupported;
    struct vt_cfi_rule rule = {(int32_t)w->cfa_off, 0,
                               w->cfa_reg == REG_RSP ? VT_CFI_RSP : VT_CFI_RBP};
    if (w->where[REG_RA] == W_UNDEF || w->where[REG_RBP] == W_UNDEF) {
        /* libunwind's unw_step says "end of stack" (0) for either, unless
         * the CFA did not move (then it reports a bad frame) */
        if (rule.kind == VT_CFI_RSP && rule.cfa_off == 0)
            return unsupported;
        rule.kind = VT_CFI_LAST;
        rule.cfa_off = 0;
        return rule;
    }
    if (w->where[REG_RA] != W_CFAREL || w->ra_off != -8)
        return unsupported;
    if (w->where[REG_RBP] == W_CFAREL) {
        /* saved below the CFA, inside libunwind's bound (which also
         * excludes -1) */
        if (w->rbp_off >= 0 || w->rbp_off <= -RBP_OFF_LIMIT || w->rbp_off == -1)
            return unsupported;
        rule.rbp_off = (int16_t)w->rbp_off;
    }
    /* The walker reads the return address and the saved rbp without
     * further checks of its own: rsp-based, both lie at or above rsp;
     * rbp-based (the walker checks CFA >= rsp + 8), the saved rbp lies at
     * most RBP_BELOW_CFA under the CFA, so at worst in the red zone. */
    if (rule.kind == VT_CFI_RSP && (rule.cfa_off < 8 || rule.cfa_off + rule.rbp_off < 0))
        return unsupported;
    if (rule.kind == VT_CFI_RBP && rule.rbp_off < -RBP_BELOW_CFA)
        return unsupported;
    return rule;
}

/* An FDE's CIE and the code it covers, [*start, *start + *range); r is
 * left at the FDE's augmentation data. */
static bool fde_head(uint64_t fde, uint64_t lo, uint64_t hi, struct reader *r, struct cie *c,
                     uint64_t *start, uint64_t *range)
{
    *r = (struct reader){fde, hi, false};
    if (!record_extent(r))
        return false;
    uint64_t cie_field = r->p;
    int32_t cie_off = (int32_t)u32(r);
    if (r->bad || cie_off == 0) /* 0: a CIE, not an FDE */
        return false;
    uint64_t cie_at = cie_field - (uint64_t)(int64_t)cie_off;
    if (cie_at < lo || cie_at >= hi || !parse_cie(cie_at, hi, c))
        return false;
    *start = read_pointer(r, c->fde_enc);
    *range = read_format(r, c->fde_enc & 0x0f);
    return !r->bad;
}

static struct vt_cfi_rule rule_from_fde(uint64_t fde, uint64_t lo, uint64_t hi, uint64_t ip)
{
    struct reader r;
    struct cie c;
    uint64_t start, range;
    if (!fde_head(fde, lo, hi, &r, &c, &start, &range) || ip < start || ip - start >= range)
        return unsupported;
    if (c.sized_aug)
        skip(&r, uleb(&r)); /* the LSDA pointer */
    if (r.bad)
        return unsupported;

    struct row w;
    memset(&w, 0, sizeof w);
    w.cfa_reg = CFA_EXPR; /* nothing defined yet */
    for (unsigned i = 0; i < NREG; i++)
        w.where[i] = W_SAME;
    struct reader cr = {c.instr, c.instr_end, false};
    if (!run_cfi(&cr, &w, NULL, 0, UINT64_MAX, &c))
        return unsupported;
    struct row initial = w;
    if (!run_cfi(&r, &w, &initial, start, ip, &c))
        return unsupported;
    return rule_of(&w);
}

/* ---- .eh_frame_hdr ---- */

static int32_t load_i32(uint64_t at)
{
    int32_t v;
    memcpy(&v, (const void *)(uintptr_t)at, sizeof v);
    return v;
}

/* The FDE that .eh_frame_hdr's table gives for ip (the last one starting
 * at or before it), and the extent of the segment holding .eh_frame. */
static bool find_fde(const struct vt_cfi_module *m, uint64_t ip, uint64_t *fde_out,
                     uint64_t *lo_out, uint64_t *hi_out)
{
    if (m->hdr == 0 || m->hdr_len > UINT64_MAX - m->hdr)
        return false;
    struct reader r = {m->hdr, m->hdr + m->hdr_len, false};
    uint8_t version = u8(&r), ptr_enc = u8(&r), count_enc = u8(&r), table_enc = u8(&r);
    if (r.bad || version != 1 || table_enc != DW_EH_PE_datarel_sdata4 || ptr_enc == DW_EH_PE_omit ||
        count_enc == DW_EH_PE_omit)
        return false; /* no sorted table: libunwind searches linearly; we do not */
    uint64_t eh_frame = read_pointer(&r, ptr_enc);
    uint64_t count = read_pointer(&r, count_enc);
    if (r.bad || count == 0 || count > (r.end - r.p) / 8)
        return false;
    uint64_t lo = 0, hi = 0;
    for (unsigned i = 0; i < m->nseg && i < VT_CFI_MAX_SEGMENTS; i++)
        if (eh_frame >= m->seg[i].lo && eh_frame < m->seg[i].hi) {
            lo = eh_frame;
            hi = m->seg[i].hi;
        }
    if (hi == 0)
        return false;

    /* the last entry whose start is <= ip, addresses relative to the hdr */
    int64_t rel = (int64_t)(ip - m->hdr);
    if (rel < INT32_MIN || rel > INT32_MAX)
        return false;
    uint64_t table = r.p, first = 0, end = count;
    while (first < end) {
        uint64_t mid = first + (end - first) / 2;
        if (rel < load_i32(table + mid * 8))
            end = mid;
        else
            first = mid + 1;
    }
    if (end == 0)
        return false;
    uint64_t fde = m->hdr + (uint64_t)(int64_t)load_i32(table + (end - 1) * 8 + 4);
    if (fde < lo || fde >= hi)
        return false;
    *fde_out = fde;
    *lo_out = lo;
    *hi_out = hi;
    return true;
}

struct vt_cfi_rule vt_cfi_rule_in(const struct vt_cfi_module *m, uint64_t ip)
{
    uint64_t fde, lo, hi;
    if (!find_fde(m, ip, &fde, &lo, &hi))
        return unsupported;
    return rule_from_fde(fde, lo, hi, ip);
}

/* ---- the object holding an address ---- */

struct find {
    uint64_t ip;
    struct vt_cfi_rule rule;
    unsigned long long subs;
    bool have_subs;
    bool want_range; /* vt_cfi_code_range: the FDE's extent, not a rule */
    bool found;
    uint64_t start, end;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find *f = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        f->subs = info->dlpi_subs;
        f->have_subs = true;
    }
    if (size < offsetof(struct dl_phdr_info, dlpi_phnum) + sizeof info->dlpi_phnum)
        return 0;
    struct vt_cfi_module m;
    memset(&m, 0, sizeof m);
    bool holds = false;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uint64_t lo = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD) {
            if (f->ip >= lo && f->ip - lo < ph->p_memsz)
                holds = true;
            if (m.nseg < VT_CFI_MAX_SEGMENTS && ph->p_memsz <= UINT64_MAX - lo) {
                m.seg[m.nseg].lo = lo;
                m.seg[m.nseg].hi = lo + ph->p_memsz;
                m.nseg++;
            }
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            m.hdr = lo;
            m.hdr_len = ph->p_memsz;
        }
    }
    if (!holds)
        return 0;
    if (!f->want_range) {
        f->rule = vt_cfi_rule_in(&m, f->ip);
        return 1;
    }
    uint64_t fde, lo, hi, start, range;
    struct reader r;
    struct cie c;
    if (find_fde(&m, f->ip, &fde, &lo, &hi) && fde_head(fde, lo, hi, &r, &c, &start, &range) &&
        f->ip >= start && f->ip - start < range) {
        f->found = true;
        f->start = start;
        f->end = start + range;
    }
    return 1;
}

struct vt_cfi_rule vt_cfi_rule_for(uint64_t ip, unsigned long long *subs, bool *have_subs)
{
    struct find f = {ip, unsupported, 0, false, false, false, 0, 0};
    dl_iterate_phdr(find_object, &f);
    *subs = f.subs;
    *have_subs = f.have_subs;
    return f.rule;
}

bool vt_cfi_code_range(uint64_t ip, uint64_t *start, uint64_t *end)
{
    struct find f = {ip, unsupported, 0, false, true, false, 0, 0};
    dl_iterate_phdr(find_object, &f);
    *start = f.start;
    *end = f.end;
    return f.found;
}
