/* The table of every driver entry-point variant the simulated driver exports.
 * Generated (sim_variants.c) from the toolkit's cudaTypedefs.h; see
 * gen_variants.py.  Kept free of cuda.h so the generated stubs can use a
 * generic prototype. */
#ifndef VTSIM_VARIANTS_H
#define VTSIM_VARIANTS_H

typedef void (*vtsim_fn)(void);

struct vtsim_variant {
    const char *base;     /* name as asked through cuGetProcAddress ("cuMemAlloc") */
    int version;          /* the PFN_..._v<version> of this variant */
    int per_thread;       /* 1 for the _ptsz/_ptds variant */
    const char *symbol;   /* exported name ("cuMemAlloc_v2") */
    vtsim_fn fn;          /* the distinct function behind it */
};

/* Sorted by (base, version, per_thread). */
extern const struct vtsim_variant vtsim_variants[];
extern const unsigned vtsim_variant_count;

#endif
