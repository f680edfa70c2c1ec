/*
 * A law: how one quantity (a site's bytes, its allocations per step)
 * follows the parameter - constant, linear or quadratic in it - fitted to
 * the values the runs measured. The lowest degree that goes through every
 * point is taken (so three runs fit a quadratic exactly, and a constant
 * or a line when the points lie on one); with more points than the
 * quadratic needs and none exact, the least-squares quadratic with its
 * residual, which says how far the quantity is from any polynomial.
 */
#ifndef VRAMTRACE_FIT_FIT_LAW_H
#define VRAMTRACE_FIT_FIT_LAW_H

#include <stdbool.h>
#include <stddef.h>

enum vt_fit_law_kind { VT_LAW_CONSTANT, VT_LAW_LINEAR, VT_LAW_QUADRATIC };

struct vt_fit_law {
    enum vt_fit_law_kind kind;
    double c[3];       /* y = c[0] + c[1] x + c[2] x^2 */
    double residual;   /* root mean square error over the largest |y| (0: exact) */
    size_t points;     /* distinct values it was fitted to */
};

/* Fits n points (x need not be distinct or sorted; repeated x are
 * averaged). n >= 1. */
void vt_fit_law_fit(const double *x, const double *y, size_t n, struct vt_fit_law *out);
double vt_fit_law_at(const struct vt_fit_law *l, double x);
/* "constant", "linear", "quadratic" */
const char *vt_fit_law_name(enum vt_fit_law_kind k);

#endif
